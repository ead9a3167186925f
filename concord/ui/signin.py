"""Sign-in for the app: invite tokens in the URL, the researcher secret in a form, and the
researcher's session cookie that keeps them signed in across reloads and tabs."""

from __future__ import annotations

import streamlit as st
from sqlite_utils import Database

from concord.devices import Devices
from concord.errors import AuthError, ConcordError
from concord.services import auth, questionnaire, research_session, secret, studies
from concord.services.crowd import links as crowd
from concord.services.crowd import onboarding
from concord.ui import cookies, crowd_join, onboarding_view, screen_check, session

_COOKIE_KEY = "concord_research_js"
_CLEAR = "concord_research_clear"  # session-state key: delete the cookie on the next run


def resolve(db: Database) -> auth.User | None:
    """The signed-in user for this run; a bad invite link stops the page with a message.

    The token stays in the URL (``?token=…``), so a reload or a reopened tab signs the
    rater in again and they resume where they left off. It is checked on every run, so
    a revoked link stops working at once.
    """
    joining = st.query_params.get("join")
    if joining and (linked := crowd.link_study(db, joining)) is not None:
        screen_check.require(Devices.of(linked.settings))  # before anyone joins
    token = (crowd_join.join(db) if joining else None) or \
        st.query_params.get("token") or st.session_state.get(session.TOKEN)
    if not token:
        return _researcher(db)
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


def _researcher(db: Database) -> auth.User | None:
    """The researcher of this browser session, or of the session cookie the browser sent
    (a reload, a new tab, a typed URL); None when nobody is signed in."""
    if st.session_state.pop(_CLEAR, False):
        cookies.clear(research_session.COOKIE, key=_COOKIE_KEY)
    current = session.user()
    if current is None:
        return _from_cookie(db)
    if not session.still_allowed():
        cookies.clear(research_session.COOKIE, key=_COOKIE_KEY)
        st.warning("Your researcher session has ended (signed out in another tab, expired, "
                   "or the secret changed). Sign in again.")
        return None
    kept = st.session_state.get(session.RESEARCH)
    if kept is not None:  # the cookie is set from the page, so each run keeps it set
        cookies.keep(research_session.COOKIE, kept, int(session.settings().session_hours
                                                        * 3600), key=_COOKIE_KEY, strict=True)
    return current


def _from_cookie(db: Database) -> auth.User | None:
    kept = cookies.read(research_session.COOKIE)
    if kept is None:
        return None
    try:
        found = session.current_secret()
        if not research_session.valid(db, kept, found):
            return None
    except (secret.SecretError, ConcordError):
        return None  # no usable secret, or the database is busy: the sign-in form shows
    _signed_in(db, found, kept)
    return session.user()


def _signed_in(db: Database, found: secret.Secret, kept: str | None) -> None:
    st.session_state[session.USER] = auth.User(
        name="researcher", role="researcher", studies=tuple(studies.names(db)))
    st.session_state[session.SECRET_PRINT] = found.version
    if kept is not None:
        st.session_state[session.RESEARCH] = kept
    else:
        st.session_state.pop(session.RESEARCH, None)


def onboarding_stage(db: Database, user: auth.User) -> str:
    """Where a rater stands in the study they work on: ``consent``, ``before`` (the
    questions before the items), ``practice``, ``failed`` or ``work`` (researchers:
    always ``work``)."""
    study = session.current_study(user.studies)
    if user.rater_id is None or study is None:
        return "work"
    if st.session_state.get(onboarding_view.FEEDBACK) is not None:
        return "practice"  # the feedback on the last practice item is still on screen
    stage = onboarding.stage(db, study, user.rater_id)
    if stage in ("practice", "work") and questionnaire.open_part(db, study, user.rater_id,
                                                                 "before"):
        return "before"
    return stage


def sign_in_researcher(db: Database, given: str) -> str | None:
    """Check the researcher secret; on success the session becomes a researcher's (kept
    across reloads and tabs by a session cookie) and None is returned, else the message to
    show (wrong, too many attempts, no usable secret configured)."""
    try:
        found = secret.current(session.settings())
        auth.sign_in_researcher(db, found, given, session.client_address() or "unknown")
    except secret.SecretError as exc:
        return f"Researcher sign-in is not available: {exc}."
    except AuthError as exc:  # "Wrong researcher secret.", "Too many failed sign-ins..."
        text = str(exc)
        return f"{text[:1].upper()}{text[1:]}."
    except ConcordError as exc:  # the database busy or not writable: nothing was checked
        return f"Sign-in is not possible right now: {exc}."
    try:
        kept: str | None = research_session.start(db, found, session.settings().session_hours)
    except ConcordError:
        kept = None  # not stored (the database is busy): signed in in this tab only
    _signed_in(db, found, kept)
    return None


def sign_out(db: Database) -> None:
    """Forget the user and the token; a researcher's session ends in every tab and its
    cookie is deleted."""
    research_session.end(db, st.session_state.get(session.RESEARCH))
    session.forget_user()
    st.session_state[_CLEAR] = True
    st.query_params.clear()


def form(db: Database) -> None:
    """The sign-in page: raters are pointed to their invite link, researchers type the
    secret; a success reruns on the page the URL names."""
    session.warm_up_research_pages()
    st.title("Concord")
    st.write("Human ratings for text-to-image models, and how well automatic metrics agree "
             "with them.")
    st.info("**Raters:** open the invite link you were sent. It signs you in and takes you "
            "to your next image.")
    with st.form("researcher_sign_in"):
        st.subheader("Researcher sign-in")
        given = st.text_input("Researcher secret", type="password", key="admin_secret",
                              help="CONCORD_ADMIN_SECRET, or the secret `python -m concord "
                                   "init` printed when it made it (`python -m concord "
                                   "reset-secret` makes a new one).")
        if st.form_submit_button("Sign in", type="primary"):
            failed = sign_in_researcher(db, given)
            if failed is None:
                st.rerun()
            st.error(failed)


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
