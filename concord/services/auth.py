"""Who is signed in: raters by invite token, researchers by the admin secret (kept and
checked by concord.services.secret; failed attempts are limited here)."""

from __future__ import annotations

import hmac
import math
import time
from dataclasses import dataclass

from sqlite_utils import Database

from concord.errors import AuthError
from concord.services.secret import Secret
from concord.store import raters as rater_store
from concord.store import signins
from concord.store import studies as study_store

# Failed researcher sign-ins allowed within WINDOW_S: per client (an address), and from
# all clients together (an attacker who changes address meets the second limit).
WINDOW_S = 15 * 60
MAX_PER_CLIENT = 5
MAX_IN_ALL = 50


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


def sign_in_researcher(db: Database, secret: Secret, given: str, client: str, *,
                       now: float | None = None) -> User:
    """A researcher user if ``given`` is the secret, within the limits on failed attempts.

    Every attempt is first counted as a failure in the database (so all app processes see
    it; taken back when it succeeds): after :data:`MAX_PER_CLIENT` failures from one
    client, or :data:`MAX_IN_ALL` from all of them, within :data:`WINDOW_S`, attempts are
    refused unchecked until the oldest of them is that old.

    Raises:
        AuthError: a wrong secret, or too many failures (the message says how long to wait).
    """
    now = time.time() if now is None else now
    seen = signins.reserve(db, client, now - WINDOW_S, now, mine=MAX_PER_CLIENT,
                           everyone=MAX_IN_ALL)
    if seen.mine >= MAX_PER_CLIENT:
        raise AuthError(f"too many failed sign-ins from your address ({seen.mine} in "
                        f"{WINDOW_S // 60} minutes); try again in "
                        f"{_minutes((seen.my_oldest or now) + WINDOW_S - now)}")
    if seen.everyone >= MAX_IN_ALL:
        raise AuthError(f"researcher sign-in is paused after {seen.everyone} failed attempts "
                        f"in {WINDOW_S // 60} minutes; try again in "
                        f"{_minutes((seen.oldest or now) + WINDOW_S - now)} (on the server, "
                        "`python -m concord reset-secret` lifts the pause)")
    if not secret.matches(given):
        raise AuthError("wrong researcher secret")
    signins.forget(db, client)
    return User(name="researcher", role="researcher")


def clear_failures(db: Database) -> int:
    """Forget every failed sign-in (a new secret lifts a pause); returns how many."""
    return signins.clear(db)


def _minutes(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return f"{minutes} minute{'s' if minutes > 1 else ''}"


def check_version(kept: str, secret: Secret) -> None:
    """AuthError unless a session's :attr:`Secret.version` is the secret in force."""
    if not kept or not hmac.compare_digest(kept, secret.version):
        raise AuthError("the researcher secret has changed; sign in again")


def user_for_token(db: Database, token: str) -> User:
    """The rater (or researcher) an invite token belongs to, with their studies."""
    rater = rater_store.rater_for_token(db, token)
    names = tuple(study_store.get_study_by_id(db, sid).name
                  for sid in rater_store.studies_of(db, rater.id))
    return User(name=rater.name, role=rater.role, rater_id=rater.id, studies=names)
