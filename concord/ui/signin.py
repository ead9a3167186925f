"""Sign-in for the app: invite tokens in the URL, the researcher secret in a form."""

from __future__ import annotations

import streamlit as st
from sqlite_utils import Database

from concord.errors import AuthError, ConcordError
from concord.services import auth, onboarding, secret, studies
from concord.ui import crowd_join, onboarding_view, session


def resolve(db: Database) -> auth.User | None:
    """The signed-in user for this run; a bad invite link stops the page with a message.

    The token stays in the URL (``?token=…``), so a reload or a reopened tab signs the
    rater in again and they resume where they left off. It is checked on every run, so
    a revoked link stops working at once.
    """
    token = (crowd_join.join(db) if st.query_params.get("join") else None) or \
        st.query_params.get("token") or st.session_state.get(session.TOKEN)
    if not token:
        current = session.user()
        if current is not None and not session.still_allowed():
            st.warning("Your researcher session ended (the secret changed). Sign in again.")
            return None
        return current
    try:
        user = auth.user_for_token(db, token)
    except AuthError as exc:
        st.session_state.pop(session.USER, None)
        st.session_state.pop(session.TOKEN, None)
        st.error(f"Sign-in failed: {exc}. Ask the researcher for a new invite link.")
        st.stop()
    st.session_state[session.USER] = user
    st.session_state[session.TOKEN] = token
    if st.query_params.get("token") != token:
        # Page switches drop the query string; put the token back so a reload or a
        # bookmark of any page keeps the rater signed in.
        st.query_params["token"] = token
    crowd_join.remember(db, user.rater_id, token)  # a crowd participant's browser seat
    return user


def onboarding_stage(db: Database, user: auth.User) -> str:
    """Where a rater stands in the study they work on: ``consent``, ``practice``,
    ``failed`` or ``work`` (researchers: always ``work``)."""
    study = session.current_study(user.studies)
    if user.rater_id is None or study is None:
        return "work"
    if st.session_state.get(onboarding_view.FEEDBACK) is not None:
        return "practice"  # the feedback on the last practice item is still on screen
    return onboarding.stage(db, study, user.rater_id)


def sign_in_researcher(db: Database, given: str) -> str | None:
    """Check the researcher secret; on success the session becomes a researcher's and
    None is returned, else the message to show (wrong, too many attempts, no usable
    secret configured)."""
    try:
        found = secret.current(session.settings())
        user = auth.sign_in_researcher(db, found, given, session.client_address() or "unknown")
    except secret.SecretError as exc:
        return f"Researcher sign-in is not available: {exc}."
    except AuthError as exc:  # "Wrong researcher secret.", "Too many failed sign-ins..."
        text = str(exc)
        return f"{text[:1].upper()}{text[1:]}."
    except ConcordError as exc:  # the database busy or not writable: nothing was checked
        return f"Sign-in is not possible right now: {exc}."
    st.session_state[session.USER] = auth.User(
        name=user.name, role=user.role, studies=tuple(studies.names(db)))
    st.session_state[session.SECRET_PRINT] = found.version
    return None



def sign_out() -> None:
    """Forget the user and the token."""
    for key in (session.USER, session.TOKEN, session.SECRET_PRINT):
        st.session_state.pop(key, None)
    st.query_params.clear()


_PICK = "study_pick"


def study_picker(user: auth.User, db: Database) -> str | None:
    """Sidebar choice of the study to work on (only the user's studies)."""
    names = list(studies.names(db)) if user.is_researcher else list(user.studies)
    if not names:
        st.sidebar.info("No study yet.")
        return None
    if st.session_state.get(_PICK) not in names:
        # First run, or the chosen study was deleted: fall back (the widget key is the truth).
        st.session_state[_PICK] = session.current_study(names)
    chosen = st.sidebar.selectbox("Study", names, key=_PICK)
    st.session_state[session.STUDY] = chosen
    return chosen
