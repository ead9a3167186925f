"""Opening the database and running writes in one transaction."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from concord.errors import ConcordError
from concord.store import engine, guard
from concord.store.migrations import migrations

# A write waits this long for SQLite's single write lock before it fails with "database
# is locked" (statements outside ``transaction()`` get the same timeout from SQLite).
BUSY_TIMEOUT_MS = 30_000
# ``transaction()`` retries BEGIN IMMEDIATE itself, every 0.5 ms growing to 4 ms, instead of
# leaving the wait to SQLite's busy handler, whose sleeps grow to 100 ms: a long import
# frees the lock for ~20 ms between its chunks (concord/store/imports/rating_writes.py) and a
# 100 ms sleeper would miss most of those gaps (raters then waited 30 s and more).
RETRY_FIRST_S, RETRY_MAX_S = 0.0005, 0.004
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6
# SQLite has one writer at a time; its busy handler retries by sleeping, which starves
# some threads when many write back to back. Queueing this process's writers on a lock
# first makes them take turns (the busy timeout still covers other processes).
_WRITE_LOCK = threading.Lock()
# A new database file (and so its -wal and -shm, which SQLite creates with the database's
# mode) is readable by its owner only: it holds raters' names and every rating.
DB_FILE_MODE = 0o600


class DatabaseBusy(ConcordError, sqlite3.OperationalError):
    """A write waited :data:`BUSY_TIMEOUT_MS` for the lock (a restore or another long
    writer held it); nothing was written, and trying again later is safe. Also an
    ``OperationalError``, as SQLite's own "database is locked" was before."""


class DatabaseUnavailable(DatabaseBusy):
    """The connection to a PostgreSQL server was lost (a restart, a failover, the network)
    during a statement: its transaction, if any, was not committed; trying again (a new
    connection from the pool) is safe."""


def open_db(path: str | Path, *, migrate: bool = True, check_same_thread: bool = True,
            check_schema: bool = True) -> Database:
    """Open (and create or upgrade) the Concord database at ``path``.

    Open one per script run or thread: a ``sqlite3`` connection must not cross threads.
    A PostgreSQL URL (``postgresql://…``) opens that database instead (concord.store.pg):
    the same API, a connection from this process's pool, given back by ``close()``.

    Args:
        path: the SQLite file; ``":memory:"`` for a throw-away database.
        migrate: apply pending migrations.
        check_same_thread: False lets the connection be closed from another thread (the
            app closes the previous script run's connection; runs never overlap).
        check_schema: False skips comparing the schema with this version's (``restore``
            replaces a database changed by hand; with ``migrate=False`` only).

    Returns:
        A sqlite-utils ``Database`` with WAL, foreign keys and a busy timeout set.

    Raises:
        DatabaseRefused: the file is not a Concord database (or new/empty), or a newer
            Concord wrote it; the file is left unchanged.
    """
    if engine.is_url(path):
        from concord.store.pg_open import open_pg

        return open_pg(str(path), migrate=migrate, check_schema=check_schema)
    if str(path) != ":memory:":
        _prepare_file(Path(path))
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000,
                           check_same_thread=check_same_thread)
    try:  # before anything below writes to the file
        guard.check_before_open(conn, str(path), schema=check_schema or migrate)
    except guard.DatabaseRefused:
        conn.close()
        raise
    db = Database(conn)
    db.execute("PRAGMA foreign_keys = ON")
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if str(path) != ":memory:" and db.journal_mode != "wal":
        db.enable_wal()
    # FULL: in WAL mode every commit is fsynced, so a rating the page reported as saved
    # survives a power cut; NORMAL could lose the last commits (docs/data-model.md).
    db.execute("PRAGMA synchronous = FULL")
    if migrate and migrations.pending(db):
        migrations.apply(db)
        guard.check_schema(db.conn, str(path))
    return db


def _prepare_file(path: Path) -> None:
    _refuse_special_file(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _create_private(path)


def _refuse_special_file(path: Path) -> None:
    """A pipe or device as --db would block or be damaged; a folder fails in sqlite3."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # missing (created below) or unreadable (sqlite3 names the error)
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise guard.DatabaseRefused(f"database {path} is not a regular file")


def _create_private(path: Path) -> None:
    """Create a missing database file with :data:`DB_FILE_MODE` before SQLite opens it
    (SQLite would create it with 0644 less the umask); an existing file keeps its mode."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DB_FILE_MODE))
    except FileExistsError:
        pass
    except OSError:
        return  # an unwritable folder: sqlite3 names the error when it opens the file


@contextlib.contextmanager
def transaction(db: Database) -> Iterator[Database]:
    """Run a block of writes as one transaction.

    The outermost level takes this process's write lock, then ``BEGIN IMMEDIATE`` (so a
    read lock never has to be upgraded mid-transaction); nested levels are savepoints
    (``db.atomic()``).
    """
    if db.conn.in_transaction:
        with db.atomic():
            yield db
        return
    if engine.is_postgres(db):
        with _pg_transaction(db):
            yield db
        return
    with _WRITE_LOCK:
        _begin_immediate(db.conn)
        try:
            yield db
        except BaseException:
            db.conn.rollback()
            raise
        db.conn.execute("COMMIT")


@contextlib.contextmanager
def _pg_transaction(db: Database) -> Iterator[None]:
    """BEGIN, then the write lock (engine.WRITE_LOCK_KEY) waited for up to BUSY_TIMEOUT_MS."""
    conn = db.conn
    try:
        _LAST.retries = 0 if _pg_begin(db) else 1
        yield
    except BaseException:
        conn.rollback()
        raise
    conn.execute("COMMIT")


def _pg_begin(db: Database) -> bool:
    """BEGIN and try the write lock in one round trip (a submit's transaction is a few ms:
    round trips count); wait for it when taken. False when another writer held it."""
    from concord.store.pg import sqlite_errors  # loaded already: db is a PgDatabase

    raw = db.pg.settled()  # type: ignore[attr-defined]
    key = int(engine.WRITE_LOCK_KEY)
    with sqlite_errors():
        cur = raw.execute(f"BEGIN; SET LOCAL lock_timeout = {int(BUSY_TIMEOUT_MS)};"
                          f" SELECT pg_try_advisory_xact_lock({key})")
        while cur.nextset():
            pass
        if cur.fetchone()[0]:
            return True
    try:
        db.conn.execute(f"SELECT pg_advisory_xact_lock({key})")
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlstate", None) == "55P03":  # lock_not_available: timed out
            raise DatabaseBusy(
                f"the database has been busy for {BUSY_TIMEOUT_MS / 1000:g} s (a "
                "researcher may be restoring a backup); nothing was saved, please "
                "try again in a minute") from exc
        raise
    return False


_LAST = threading.local()  # how many times this thread's last BEGIN found the lock taken


def last_begin_retries() -> int:
    """How often this thread's latest ``transaction()`` found another writer holding the
    lock (0: it was free). Long imports use it to give way to raters."""
    return getattr(_LAST, "retries", 0)


def _begin_immediate(conn: sqlite3.Connection) -> None:
    """BEGIN IMMEDIATE, retried every few ms until :data:`BUSY_TIMEOUT_MS` has passed."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay, _LAST.retries = RETRY_FIRST_S, 0
    conn.execute("PRAGMA busy_timeout = 0")  # each attempt answers at once; we pace them
    try:
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise DatabaseBusy(
                        f"the database has been busy for {BUSY_TIMEOUT_MS / 1000:g} s (a "
                        "researcher may be restoring a backup); nothing was saved, please "
                        "try again in a minute") from exc
            _LAST.retries += 1
            time.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return "locked" in str(exc) or "busy" in str(exc)
    return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)


def now() -> str:
    """Current UTC time as ISO 8601 with microseconds."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")


def inserted_id(cursor: Any) -> int:
    """The id of the row an ``INSERT … RETURNING id`` run on ``cursor`` wrote (both
    engines: PostgreSQL has no ``lastrowid``)."""
    row = cursor.fetchone()
    if row is None:
        raise RuntimeError("no row was inserted")
    return int(row[0])


def dumps(value: Any) -> str:
    """JSON for a TEXT column: compact, keys sorted so equal data compares equal."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def loads(text: str | None, default: Any = None) -> Any:
    """Parse a JSON TEXT column, ``default`` for NULL or empty."""
    if not text:
        return default
    return json.loads(text)


def audit(db: Database, actor: str, action: str, study: str | None, **detail: Any) -> None:
    """Append one line to the audit log (inside the caller's transaction)."""
    db.execute(
        "INSERT INTO audit_log (at, actor, action, study, detail) VALUES (?, ?, ?, ?, ?)",
        [now(), actor, action, study, dumps(detail)],
    )
