"""A researcher's sign-in that survives a reload, a new tab, a bookmark or a typed URL.

Signing in with the secret starts a session: a random token (256 bits) that the browser
keeps in a cookie (:data:`COOKIE`) and sends with every connection; the database keeps only
the token's SHA-256, the version of the secret it was made under and its expiry. A session
is checked on every run of the app, so it ends at once, in every tab, on sign-out, when it
expires (``CONCORD_SESSION_HOURS``, default 12), when the secret changes (``reset-secret``
or a new ``CONCORD_ADMIN_SECRET``) and after a ``restore``. The secret itself never leaves
the sign-in form: it is in no cookie, URL or log.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time

from sqlite_utils import Database

from concord.services.secret import Secret
from concord.store import research_sessions as store

COOKIE = "concord_research"
# What a token looks like (secrets.token_urlsafe(32)); any other cookie value is ignored
# unread, whatever its length or characters.
_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def start(db: Database, secret: Secret, hours: float, *, now: float | None = None) -> str:
    """A new session under ``secret``, valid for ``hours``; returns its token (for the
    browser's cookie only)."""
    now = time.time() if now is None else now
    token = secrets.token_urlsafe(32)
    store.add(db, _digest(token), secret.version, now, now + hours * 3600)
    return token


def valid(db: Database, token: object, secret: Secret, *, now: float | None = None) -> bool:
    """Whether ``token`` (a cookie's value: anything) is a session that has not ended."""
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        return False
    found = store.find(db, _digest(token))
    if found is None:
        return False
    version, expires = found
    now = time.time() if now is None else now
    return expires > now and secrets.compare_digest(version, secret.version)


def end(db: Database, token: object) -> None:
    """Sign-out: the session ends in every tab that uses it."""
    if isinstance(token, str) and _TOKEN.fullmatch(token):
        store.drop(db, _digest(token))


def end_all(db: Database) -> int:
    """End every researcher session (a new secret); returns how many were open."""
    return store.drop_all(db)
