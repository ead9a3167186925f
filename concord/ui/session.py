"""Streamlit glue: the per-run database, the signed-in user, session-state keys.

This is the only place (with the other ``concord.ui`` modules) that touches
``st.session_state``; pages read and write through these helpers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import logging
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import streamlit as st
from sqlite_utils import Database
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from concord.config import Settings
from concord.config import note_address as note
from concord.errors import AuthError, ConcordError
from concord.services import auth, research_session, secret
from concord.services.auth import User
from concord.services.database import DatabaseBusy, open_database

logger = logging.getLogger(__name__)
USER = "concord_user"
TOKEN = "concord_token"  # noqa: S105 - a session-state key, not a secret
STUDY = "concord_study"
SECRET_PRINT = "concord_secret_print"  # noqa: S105 - a session-state key
RESEARCH = "concord_research_session"  # the researcher's session token (its cookie's value)
ENDED = "concord_ended"  # why this browser session was signed out (an AuthError's text)
_DB = "_concord_db"
T = TypeVar("T")
FLASH = "concord_flash"


def settings() -> Settings:
    """This app's settings: the environment, as for the CLI (``Settings.from_env``), with
    the researcher secret taken from Streamlit secrets when the environment has none. A
    setting that is wrong stops the page with what is wrong."""
    try:
        configured = Settings.from_env()
    except ConcordError as exc:
        st.error(f"Concord is not configured right: {exc}.")
        st.stop()
        raise  # st.stop() raises; never reached
    if configured.admin_secret is None and (secret := _secrets_admin_secret()):
        return dataclasses.replace(configured, admin_secret=secret)
    return configured


def invite_base_url(page: str) -> str:
    """Where invite links point: ``CONCORD_BASE_URL`` if set (``base_url_explicit``), else
    the address this browser reached the app at (so ``PORT=8611 make run`` gives links to
    :8611), else the default.

    Args:
        page: the URL path of the page asking (its last path segment is dropped).
    """
    configured = settings()
    if configured.base_url_explicit:
        return configured.base_url
    seen = st.context.url
    if not seen:
        return configured.base_url
    parts = urllib.parse.urlsplit(seen)
    path = parts.path.rstrip("/")
    if path.endswith("/" + page) or path == page:
        path = path[: -len(page)].rstrip("/")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


@contextlib.contextmanager
def run_db() -> Iterator[Database]:
    """This script run's database, given back when the run ends (also on st.rerun or
    st.stop): on PostgreSQL a connection of the process's pool (at most 10) serves one run
    at a time, not one idle browser session each."""
    try:
        db = open_run_db()
    except DatabaseBusy as exc:  # no connection now (a server restarting, a full pool)
        _say_busy(exc)
        return
    try:
        yield db
    except DatabaseBusy as exc:  # a read outside a rater screen's own guard
        _say_busy(exc)
    finally:
        release_run_db()


def _say_busy(exc: DatabaseBusy) -> None:
    """One retryable line for the visitor instead of a traceback."""
    st.warning(f"{str(exc)[:1].upper()}{str(exc)[1:]}.")


def release_run_db() -> None:
    """Close (give back) the connection this session opened, if any; the next use of
    :func:`db` opens another."""
    found = st.session_state.get(_DB)
    if found is not None:
        del st.session_state[_DB]
        found.conn.close()


def releasing(body: Callable[[], None]) -> Callable[[], None]:
    """For a fragment, what :func:`run_db` does for a full run: a database that cannot be
    reached now is one retryable line, and when the fragment reruns on its own (not
    inside a full run) the connection it used is given back at its end."""
    @functools.wraps(body)
    def run() -> None:
        try:
            body()
        except DatabaseBusy as exc:
            _say_busy(exc)
        finally:
            ctx = get_script_run_ctx()
            if ctx is not None and ctx.fragment_ids_this_run:
                release_run_db()
    return run


def open_run_db() -> Database:
    """Open the database for this script run, closing the previous run's connection.

    A ``Database`` is never cached across runs (``st.cache_resource``) because sqlite3
    connections must not be shared by the threads Streamlit runs scripts on; opening one
    per run costs about a millisecond.
    """
    old = st.session_state.get(_DB)
    if old is not None:
        old.conn.close()
    db = open_database(settings().database, check_same_thread=False)
    st.session_state[_DB] = db
    note_address()
    return db


_NOTED = threading.Event()


def note_address() -> None:
    """Once per server process: note the address this app serves its database at beside
    the database (``<db>.address``), so that links printed by the command line (``raters
    add``, ``crowd link``) name it too: ``CONCORD_BASE_URL`` when it is set, else this
    server's own port and path (``streamlit run ... --server.port 8561``). Never a browser's
    Host header: a visitor must not be able to choose where invite links point."""
    if _NOTED.is_set():
        return
    _NOTED.set()
    configured = settings()
    if configured.base_url_explicit:
        address = configured.base_url
    else:
        path = (st.get_option("server.baseUrlPath") or "").strip("/")
        address = f"http://localhost:{st.get_option('server.port')}" + (f"/{path}" if path else "")
    try:
        note(configured.db_path, address)
    except (OSError, UnicodeError, ConcordError):
        logger.warning("could not note the app's address beside %s", configured.db_path)


def db() -> Database:
    """The database opened by ``app.py`` for this run (opened here when run standalone)."""
    found = st.session_state.get(_DB)
    return found if found is not None else open_run_db()


def user() -> User | None:
    """The signed-in user of this browser session."""
    return st.session_state.get(USER)


def through_app() -> None:
    """Make sure this run went through app.py (sign-in and navigation).

    When the first request after the server starts is for a page URL (a rater's bookmark
    of /rank), Streamlit runs ``pages/<page>.py`` on its own, in its older multipage mode
    (because a ``pages/`` folder exists), until some run of app.py has called
    ``st.navigation``. Switch that mode off and run again, through app.py. (Only the first
    runs after a server start can be in that mode: a fresh page load, no click to lose.)
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def require_user() -> User:
    """The signed-in user, or stop the page with a message."""
    through_app()
    u = user()
    if u is None:
        st.error("Please sign in first: open your invite link, or use the researcher sign-in.")
        st.stop()
    if not still_allowed():
        st.error(ended_message())
        st.stop()
    return u


def still_allowed() -> bool:
    """Re-check the signed-in user on this run (app.py does it for full runs; a fragment
    rerun does not pass through app.py, so rater screens call this first).

    A revoked invite, a researcher secret that changed since sign-in, or a researcher
    session that ended (signed out in another tab, expired) signs the session out at once,
    even in a tab that was already open.
    """
    u = user()
    if u is None:
        return False
    token = st.session_state.get(TOKEN)
    try:
        if token:
            auth.user_for_token(db(), token)
        elif u.is_researcher:
            found = current_secret()
            auth.check_version(st.session_state.get(SECRET_PRINT, ""), found)
            kept = st.session_state.get(RESEARCH)
            if kept is not None and not research_session.valid(db(), kept, found):
                raise AuthError("the researcher session has ended")
    except (AuthError, secret.SecretError) as exc:
        forget_user()
        st.session_state[ENDED] = str(exc)
        return False
    return True


def ended_message() -> str:
    """What to tell someone whose session was just ended, by why (a revoked link, a link
    the database does not know after a restore, a new researcher secret)."""
    reason = str(st.session_state.get(ENDED, "")) or "your sign-in is no longer valid"
    return (f"Your session has ended: {reason}. Nothing more is saved; ask the researcher "
            "for a new link.")


def forget_user() -> None:
    """This browser session is signed out (its cookie, if any, is no longer accepted)."""
    for key in (USER, TOKEN, SECRET_PRINT, RESEARCH):
        st.session_state.pop(key, None)


def current_secret() -> secret.Secret:
    """The researcher secret in force now (SecretError when none is usable)."""
    return secret.current(settings())


def require_researcher() -> User:
    """Stop unless a researcher is signed in."""
    u = require_user()
    if not u.is_researcher:
        st.error("This page is for researchers.")
        st.stop()
    return u


def current_study(names: tuple[str, ...] | list[str]) -> str | None:
    """The study a page works on (chosen in the sidebar), among ``names``."""
    chosen = st.session_state.get(STUDY)
    if chosen in names:
        return chosen
    return names[0] if names else None


_LOOPBACK = frozenset({"127.0.0.1", "::1"})


def client_address() -> str | None:
    """The visitor's address (sign-in limits, crowd join limits): the connection's, or
    behind a proxy the last entry of X-Forwarded-For, the one the proxy added (earlier
    entries are whatever the client sent). A proxy is trusted on this host (a loopback
    peer, docs/scale.md) or anywhere with ``CONCORD_TRUST_PROXY=1``. None when no browser
    is behind this run."""
    ip = st.context.ip_address
    ip = ip if isinstance(ip, str) and ip else None
    if ip in _LOOPBACK or settings().trust_proxy:
        forwarded = [a.strip() for a in
                     ",".join(st.context.headers.get_all("X-Forwarded-For")).split(",")
                     if a.strip()]
        if forwarded:
            return forwarded[-1][:100]
    return ip


def fetch_or_stop(fetch: Callable[[], T]) -> T:
    """``fetch()`` (a rater screen's next item, which writes its lease); when the database
    stayed busy past its timeout (a researcher restoring a backup), one line for the rater
    and the run stops, instead of a traceback. The next click or a reload tries again."""
    try:
        return fetch()
    except DatabaseBusy as exc:
        st.warning(f"{str(exc)[:1].upper()}{str(exc)[1:]}.")
        st.stop()
        raise  # st.stop() raises; this line is never reached


def flash(message: str, kind: str = "success") -> None:
    """Show a message once on the next run (e.g. after a submit that reruns)."""
    st.session_state[FLASH] = (kind, message)


def show_flash() -> None:
    """Render and clear a pending flash message."""
    pending: Any = st.session_state.pop(FLASH, None)
    if pending:
        kind, message = pending
        getattr(st, kind, st.info)(message)


def _secrets_admin_secret() -> str | None:
    """``admin_secret`` from Streamlit secrets (``.streamlit/secrets.toml``), if any."""
    try:
        return st.secrets.get("admin_secret") or st.secrets.get("concord", {}).get("admin_secret")
    except Exception:
        # No secrets.toml at all raises a Streamlit-specific error: treat as "not set".
        return None


_WARM = threading.Event()


def warm_up_research_pages() -> None:
    """Import the statistics stack in the background, once per server process.

    scipy, statsmodels and altair take over a second to import; starting while a
    researcher types the secret keeps that out of the dashboard's first render.
    """
    if _WARM.is_set():
        return
    _WARM.set()

    def load() -> None:
        for name in ("concord.services.report.study", "altair"):
            importlib.import_module(name)

    threading.Thread(target=load, name="concord-warm-up", daemon=True).start()
