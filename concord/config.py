"""Settings read once from the environment (or Streamlit secrets) and passed down."""

from __future__ import annotations

import logging
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from concord.errors import ConcordError

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PORT = 8501
# What an address file may hold: one http(s) URL of visible ASCII.
_ADDRESS = re.compile(r"https?://[\x21-\x7e]{1,500}")
DEFAULT_DB = ROOT / "data" / "concord.db"
# A database URL's scheme ("sqlite://", "postgresql+psycopg://"), and the password of its
# user part, never shown in a message.
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_PASSWORD = re.compile(r"(//[^:/@\s]*):[^@/\s]*@")
_POSTGRES = re.compile(r"postgres(?:ql)?(?:\+[a-z0-9]+)?", re.IGNORECASE)
DEMO_MANIFEST = ROOT / "data" / "demo" / "study.yaml"


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the database is and how the app is reached.

    ``base_url_explicit`` says whether ``base_url`` was given (``CONCORD_BASE_URL``) rather
    than derived from the port: only a given one overrides the address a browser used.
    """

    db_path: Path
    base_url: str = "http://localhost:8501"
    # A PostgreSQL database (CONCORD_DB=postgresql://…); None: the SQLite file db_path.
    # With one, db_path is a local stem for what lives beside a database (media cache,
    # address file, run logs): data/postgresql-<database name>.
    db_url: str | None = None
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
    def shown(self) -> str:
        """The database for messages: the SQLite file, or the URL with its password masked."""
        return mask_password(self.db_url) if self.db_url else str(self.db_path)

    @property
    def database(self) -> str | Path:
        """What ``open_db`` opens: the PostgreSQL URL, else the SQLite file."""
        return self.db_url or self.db_path

    @property
    def media_cache(self) -> Path:
        """Folder of the metadata-free copies of images served to raters (beside the DB)."""
        return self.db_path.with_name(self.db_path.name + ".media")

    @classmethod
    def from_env(cls, db: str | Path | None = None) -> Settings:
        """Settings from ``CONCORD_DB``, ``CONCORD_BASE_URL`` (default: with
        ``CONCORD_PORT`` set, ``http://localhost:$CONCORD_PORT``; else the address the
        app last served this database at (:func:`address_file`); else port 8501),
        ``CONCORD_ADMIN_SECRET``,
        ``CONCORD_TRUST_PROXY`` (``1``: client addresses from X-Forwarded-For),
        ``CONCORD_SESSION_HOURS`` (default 12).

        Args:
            db: an explicit database path (``--db``) wins over the environment.

        Raises:
            ConcordError: ``CONCORD_SESSION_HOURS`` is not a number of hours from 0.1 to
                2160 (90 days); the database is given as a URL that is not ``sqlite:///``.
        """
        target = database_target(db, os.environ.get("CONCORD_DB"))
        url = target if isinstance(target, str) else None
        path = local_stem(target) if url else Path(target)
        port = _port(os.environ.get("CONCORD_PORT"))
        given = os.environ.get("CONCORD_BASE_URL") or None
        served = None if given or port else recorded_address(path)
        base = (given or served or f"http://localhost:{port or DEFAULT_PORT}").rstrip("/")
        secret = os.environ.get("CONCORD_ADMIN_SECRET") or None
        return cls(db_path=path, db_url=url, base_url=base, admin_secret=secret,
                   base_url_explicit=given is not None,
                   trust_proxy=os.environ.get("CONCORD_TRUST_PROXY", "") == "1",
                   session_hours=_hours(os.environ.get("CONCORD_SESSION_HOURS")))


def database_target(given: str | Path | None, env: str | None) -> Path | str:
    """The database of ``--db`` (``given``), else of ``CONCORD_DB``, else the default: a
    SQLite file as a path or a ``sqlite:///`` URL (``sqlite:///data/x.db`` relative,
    ``sqlite:////srv/x.db`` absolute, as SQLAlchemy writes them), or a PostgreSQL URL
    (``postgresql://user@host:5432/concord``, also ``postgresql+psycopg://``), returned as
    the URL string.

    Raises:
        ConcordError: a URL of another kind (read as a path it would make a folder named
            after the scheme and a new, empty database in it).
    """
    source = "--db" if given else "CONCORD_DB"
    text = str(given or env or DEFAULT_DB)
    scheme = _SCHEME.match(text)
    if scheme is None:
        return Path(text)
    name = scheme.group(1).lower()
    if name == "sqlite" and text[len(scheme.group(0)):].startswith("/"):
        rest = text[len(scheme.group(0)) + 1:]
        if rest and "?" not in rest:  # SQLAlchemy's options (?mode=ro) are not read here
            return Path(rest)
    shown = mask_password(text)
    if _POSTGRES.fullmatch(name):
        if not _pg_database_name(text):
            raise ConcordError(f"{source}={shown!r} names no database: end the URL with "
                               "/<database>, e.g. postgresql://concord@db.example/concord")
        return text
    raise ConcordError(f"{source}={shown!r} is not a database Concord can open: give a "
                       "SQLite file as a path or a sqlite:/// URL (sqlite:///data/concord.db),"
                       " or a PostgreSQL URL (postgresql://user@host/database)")


def database_path(given: str | Path | None, env: str | None) -> Path:
    """The SQLite file of ``--db`` / ``CONCORD_DB`` (:func:`database_target`); for a
    PostgreSQL URL, its local stem (:func:`local_stem`)."""
    target = database_target(given, env)
    return local_stem(target) if isinstance(target, str) else target


def mask_password(url: str) -> str:
    """``url`` with the password of its user part shown as ``***`` (at most 200 chars)."""
    return _PASSWORD.sub(r"\1:***@", url)[:200]


def mask_passwords_in(text: str, url: str) -> str:
    """``text`` (a driver's message that may quote ``url``) with ``url``'s password and any
    ``//user:password@`` in it masked."""
    found = _PASSWORD.search(url)
    secret = found.group(0)[len(found.group(1)) + 1:-1] if found else ""
    masked = _PASSWORD.sub(r"\1:***@", text)
    return masked.replace(secret, "***") if secret else masked


def _pg_database_name(url: str) -> str:
    after = url.split("://", 1)[1]
    path = after.split("/", 1)[1] if "/" in after else ""
    return path.split("?", 1)[0]


def local_stem(url: str) -> Path:
    """Where the files that live beside a database go for a PostgreSQL one (the media
    cache, the address file, run logs): ``data/postgresql-<database name>``, in this
    host's Concord folder (each host keeps its own; they are caches and notes)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", _pg_database_name(url))[:100] or "concord"
    return DEFAULT_DB.parent / f"postgresql-{name}"


def address_file(db_path: Path) -> Path:
    """Where the app notes the address it serves a database at, for the command line's
    links (``<db>.address``, beside the database)."""
    return db_path.with_name(db_path.name + ".address")


def recorded_address(db_path: Path) -> str | None:
    """The address the app last served ``db_path`` at, if it noted a sane one."""
    path = address_file(db_path)
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            text = handle.read(1024).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        text = ""
    if _ADDRESS.fullmatch(text):
        return text
    logger.warning("ignoring %s: it does not hold one http(s) address", path)
    return None


def note_address(db_path: Path, address: str) -> None:
    """Write ``address`` to :func:`address_file` (atomically) unless it holds it already.

    Raises:
        ConcordError: the file cannot be written (it names it).
    """
    from concord import atomic  # the app writes it once per process; the CLI never does

    target = address_file(db_path)
    try:
        if target.is_file() and target.read_text(encoding="ascii").strip() == address:
            return
    except (OSError, UnicodeError):
        pass  # unreadable or not ours: written anew below
    atomic.write_bytes(target, (address + "\n").encode("ascii"))


def _port(text: str | None) -> int | None:
    if text is None or not text.strip():
        return None
    if not text.strip().isdigit() or not 1 <= int(text.strip()[:6]) <= 65535:
        raise ConcordError(f"CONCORD_PORT={text[:40]!r} is not a port number (1 to 65535)")
    return int(text.strip())


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
