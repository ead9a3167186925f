"""Settings read once from the environment (or Streamlit secrets) and passed down."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from concord.errors import ConcordError

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = ROOT / "data" / "concord.db"
DEMO_MANIFEST = ROOT / "data" / "demo" / "study.yaml"


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the database is and how the app is reached.

    ``base_url_explicit`` says whether ``base_url`` was given (``CONCORD_BASE_URL``) rather
    than derived from the port: only a given one overrides the address a browser used.
    """

    db_path: Path
    base_url: str = "http://localhost:8501"
    admin_secret: str | None = None
    base_url_explicit: bool = False
    # Behind a reverse proxy every visitor comes from the proxy's address: with
    # CONCORD_TRUST_PROXY=1 a study link takes the client's address from the last entry of
    # X-Forwarded-For (the one the proxy added) instead.
    trust_proxy: bool = False
    # How long a researcher stays signed in (CONCORD_SESSION_HOURS; a reload or a new tab
    # keeps the session: concord.services.research_session).
    session_hours: float = 12.0

    @property
    def media_cache(self) -> Path:
        """Folder of the metadata-free copies of images served to raters (beside the DB)."""
        return self.db_path.with_name(self.db_path.name + ".media")

    @classmethod
    def from_env(cls, db: str | Path | None = None) -> Settings:
        """Settings from ``CONCORD_DB``, ``CONCORD_BASE_URL`` (default
        ``http://localhost:$CONCORD_PORT``, port 8501), ``CONCORD_ADMIN_SECRET``,
        ``CONCORD_TRUST_PROXY`` (``1``: client addresses from X-Forwarded-For),
        ``CONCORD_SESSION_HOURS`` (default 12).

        Args:
            db: an explicit database path (``--db``) wins over the environment.

        Raises:
            ConcordError: ``CONCORD_SESSION_HOURS`` is not a number of hours from 0.1 to
                2160 (90 days).
        """
        path = Path(db or os.environ.get("CONCORD_DB") or DEFAULT_DB)
        port = os.environ.get("CONCORD_PORT") or "8501"
        given = os.environ.get("CONCORD_BASE_URL") or None
        base = (given or f"http://localhost:{port}").rstrip("/")
        secret = os.environ.get("CONCORD_ADMIN_SECRET") or None
        return cls(db_path=path, base_url=base, admin_secret=secret,
                   base_url_explicit=given is not None,
                   trust_proxy=os.environ.get("CONCORD_TRUST_PROXY", "") == "1",
                   session_hours=_hours(os.environ.get("CONCORD_SESSION_HOURS")))


def _hours(text: str | None) -> float:
    if text is None or not text.strip():
        return 12.0
    try:
        hours = float(text[:40])
    except ValueError:
        hours = math.nan
    if not 0.1 <= hours <= 2160:  # NaN fails too
        raise ConcordError(f"CONCORD_SESSION_HOURS={text[:40]!r} is not a number of hours "
                           "from 0.1 to 2160 (90 days)")
    return hours
