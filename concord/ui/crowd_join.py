"""Joining through a study link: the platform's parameters in, the rater's own link out,
and a cookie that lets this browser, and only this one, come back through the study link.

The personal token is random and handed out once, on the first visit; the browser keeps it
in the URL (``?token=…``) and in a cookie ``concord_seat_<study id>`` (set from the page:
concord.ui.cookies). It is readable by scripts, like the URL that carries the same token;
what it protects against is another person, in another browser, who knows the study link
and someone's participant id: they have neither.
"""

from __future__ import annotations

import streamlit as st
from sqlite_utils import Database

from concord.errors import AuthError
from concord.services.crowd import ids as crowd_ids
from concord.services.crowd import links as crowd
from concord.ui import cookies, session

SEAT = "concord_seat_"
_REMEMBERED = "concord_seat_kept"  # session-state key: (cookie name, token) to keep set
_MAX_AGE = 60 * 24 * 3600  # seconds: longer than any crowd study runs


def proofs() -> list[str]:
    """The personal tokens this browser kept (its seat cookies)."""
    return [v for k, v in st.context.cookies.to_dict().items() if k.startswith(SEAT) and v]


def join(db: Database) -> str:
    """Sign up (or come back) through the study link in the URL; the URL becomes the
    rater's own link (``?token=…``), so a reload works. Stops the page with one message
    when the visit is refused (nothing is stored then, but the visit's log entry)."""
    params = st.query_params.to_dict()
    try:
        joined = crowd.join(db, params.get("join", ""), params, proof=proofs(),
                            client=session.client_address())
    except crowd_ids.PreviewError as exc:
        st.info(_sentence(exc))
        st.stop()
    except crowd.TakenError as exc:
        st.error(_sentence(exc))
        st.stop()
    except crowd.LimitError as exc:
        st.warning(_sentence(exc))
        st.stop()
    except (AuthError, crowd_ids.JoinError) as exc:
        st.error(f"This study link cannot be used: {exc}.")
        st.stop()
    st.session_state[_REMEMBERED] = (f"{SEAT}{joined.study_id}", joined.token)
    st.query_params.clear()
    st.query_params["token"] = joined.token
    return joined.token


def _sentence(exc: Exception) -> str:
    text = str(exc)
    return text[:1].upper() + text[1:] + "."


def remember(db: Database, rater_id: int | None, token: str | None) -> None:
    """Keep this browser's seat cookie set while a crowd participant works (from the
    study link, or from their personal link opened in this browser)."""
    if rater_id is None or not token:
        return
    seat = st.session_state.get(_REMEMBERED)
    if seat is None or seat[1] != token:  # looked up once per token (None: invited)
        study_id = crowd.study_of_participant(db, rater_id)
        seat = st.session_state[_REMEMBERED] = (
            f"{SEAT}{study_id}" if study_id is not None else None, token)
    if seat[0] is not None:
        cookies.keep(seat[0], seat[1], _MAX_AGE, key="concord_seat_js")
