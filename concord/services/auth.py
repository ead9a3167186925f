"""Who is signed in: raters by invite token, researchers by the admin secret."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from sqlite_utils import Database

from concord.config import Settings
from concord.errors import AuthError
from concord.store import raters as rater_store
from concord.store import studies as study_store


@dataclass(frozen=True, slots=True)
class User:
    """A signed-in person. Researchers signed in by secret have ``rater_id`` None."""

    name: str
    role: str
    rater_id: int | None = None
    studies: tuple[str, ...] = ()

    @property
    def is_researcher(self) -> bool:
        """True for researchers (admin secret or a researcher invite)."""
        return self.role == "researcher"


def secret_file(settings: Settings) -> Path:
    """Where the generated admin secret is kept when none is configured (next to the DB)."""
    return settings.db_path.with_name(settings.db_path.name + ".admin-secret")


def admin_secret(settings: Settings) -> str:
    """The researcher secret: ``settings.admin_secret`` (environment or Streamlit secrets)
    or else generated once into a 0600 file beside the database."""
    if settings.admin_secret:
        return settings.admin_secret
    path = secret_file(settings)
    if path.is_file():
        return path.read_text(encoding="utf-8").strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(16)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    return token


def check_admin(given: str, secret: str) -> User:
    """A researcher user if ``given`` matches the secret (constant-time compare)."""
    if not given or not hmac.compare_digest(given.strip().encode(), secret.encode()):
        raise AuthError("wrong researcher secret")
    return User(name="researcher", role="researcher")


def fingerprint(secret: str) -> str:
    """A digest of the researcher secret kept in a session (never the secret itself)."""
    return hashlib.sha256(secret.strip().encode()).hexdigest()


def check_fingerprint(kept: str, secret: str) -> None:
    """AuthError unless a session's fingerprint still matches the secret in force."""
    if not kept or not hmac.compare_digest(kept, fingerprint(secret)):
        raise AuthError("the researcher secret has changed; sign in again")


def user_for_token(db: Database, token: str) -> User:
    """The rater (or researcher) an invite token belongs to, with their studies."""
    rater = rater_store.rater_for_token(db, token)
    names = tuple(study_store.get_study_by_id(db, sid).name
                  for sid in rater_store.studies_of(db, rater.id))
    return User(name=rater.name, role=rater.role, rater_id=rater.id, studies=names)
