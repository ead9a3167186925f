"""Online backup and restore of the whole database, through SQLite's backup API.

A backup is one consistent snapshot: the copy runs in a single step inside one read
transaction, which in WAL mode never blocks raters' writes (they go on to the WAL while
the pages are copied). The copy is checked (``PRAGMA integrity_check``), made a
self-contained file (journal mode DELETE, no ``-wal``) and renamed into place, so a
backup file is always complete.

A restore writes the backup's pages into the live database, again with the backup API,
under SQLite's write lock: connections that are open see the old database or the new
one, never a mix. A copy of the database as it was is taken first.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlite_utils import Database

from concord import atomic
from concord.errors import ConcordError
from concord.store import catalog, engine, guard, report_cache
from concord.store.db import DB_FILE_MODE, open_db, transaction


@dataclass(frozen=True, slots=True)
class Contents:
    """What a database holds, in the words a researcher checks a backup by."""

    studies: int
    raters: int
    ratings: int
    rankings: int

    def __str__(self) -> str:
        return (f"{self.studies:,} studies, {self.raters:,} raters, {self.ratings:,} rating "
                f"revisions, {self.rankings:,} ranking revisions")


def contents(conn: sqlite3.Connection) -> Contents:
    """Row counts of the tables that matter (zeros for a database without them)."""
    sql = (catalog.PG_TABLES if hasattr(conn, "url") else  # a PostgreSQL connection
           "SELECT name FROM sqlite_master WHERE type = 'table'")
    tables = {r[0] for r in conn.execute(sql)}
    counts = [conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] if t in tables else 0
              for t in ("studies", "raters", "ratings", "rankings")]
    return Contents(*counts)


def _check_integrity(conn: sqlite3.Connection, label: str) -> None:
    try:
        result = [r[0] for r in conn.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as exc:
        raise ConcordError(f"{label}: not a usable SQLite database ({exc})") from exc
    if result != ["ok"]:
        raise ConcordError(f"{label}: integrity check failed ({'; '.join(result[:3])})")


def backup(db: Database, target: Path) -> Contents:
    """Copy the database to ``target`` (replaced atomically) while others keep writing.

    Returns:
        What the backup holds.

    Raises:
        ConcordError: ``target`` is the database itself or cannot be written.
    """
    target = Path(target)
    folder = target.parent
    if not folder.is_dir():  # said of the backup, not of the database being copied
        raise ConcordError(f"cannot write the backup {target}: the folder {folder} "
                           + ("is a file, not a folder" if folder.exists() else
                              f"does not exist (create it first: mkdir -p {folder})"))
    if engine.is_postgres(db):
        return _backup_postgres(db, target)
    source = Path(db.conn.execute("PRAGMA database_list").fetchone()[2])
    if target.exists() and source.exists() and os.path.samefile(target, source):
        raise ConcordError(f"cannot back up {source} onto itself; name another file")
    with atomic.replacing(target) as tmp:  # refuses a pipe or device at target
        # A new backup is private like the database (a replaced one keeps its mode).
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DB_FILE_MODE))
        copy = sqlite3.connect(tmp)
        try:
            db.conn.backup(copy)  # pages=-1: every page in one step, one consistent snapshot
            copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
            _check_integrity(copy, str(target))
            found = contents(copy)
        finally:
            copy.close()
    return found


def _backup_postgres(db: Database, target: Path) -> Contents:
    from concord.store import pg_backup

    pg_backup.backup_to_file(db, target)
    written = sqlite3.connect(target)
    try:
        _check_integrity(written, str(target))
        return contents(written)
    finally:
        written.close()


def open_backup(path: Path) -> sqlite3.Connection:
    """A backup file to restore from: a regular Concord database of this version or older
    that passes the integrity check. Only reads it."""
    path = Path(path)
    if not path.is_file():
        raise ConcordError(f"backup {path}: not found (or not a regular file)")
    conn = sqlite3.connect(path)
    try:
        guard.check_before_open(conn, f"backup {path}")
        if "studies" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}:
            raise ConcordError(f"backup {path} is empty: it is not a Concord backup")
        _check_integrity(conn, f"backup {path}")
    except (ConcordError, sqlite3.DatabaseError):
        conn.close()
        raise
    return conn


def safety_copy_path(db_path: Path) -> Path:
    """Where ``restore`` keeps the database as it was: beside it, stamped with the time."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return db_path.with_name(f"{db_path.name}.before-restore-{stamp}")


@dataclass(frozen=True, slots=True)
class Restored:
    """What a restore replaced, with what, and where the replaced database was kept."""

    before: Contents
    after: Contents
    safety_copy: Path


def restore(db_path: Path | str, source_path: Path, *, confirm: bool,
            beside: Path | None = None) -> Restored:
    """Replace the database at ``db_path`` with the backup ``source_path``.

    Without ``confirm`` nothing is changed: ConcordError says what would be replaced.
    With it, the backup is first copied beside the database and upgraded to this
    version's schema (raters never meet an older schema); then, under SQLite's write lock
    held from before the safety copy (:func:`safety_copy_path`) until the last page is
    written, the database as it was is copied and replaced (concord.store.swap). A rating
    saved before the lock is in the safety copy, one saved after it in the restored
    database; raters' writes wait meanwhile (``concord.store.db.BUSY_TIMEOUT_MS``).
    """
    from concord.store import swap  # imports this module (backup, safety_copy_path)

    if engine.is_url(db_path):
        from concord.config import local_stem

        return _restore_postgres(str(db_path), Path(source_path), confirm=confirm,
                                 beside=beside or local_stem(str(db_path)))
    db_path, source_path = Path(db_path), Path(source_path)
    if db_path.exists() and source_path.exists() and os.path.samefile(db_path, source_path):
        raise ConcordError(f"{source_path} is the database itself; name a backup file")
    source = open_backup(source_path)
    try:
        after = contents(source)
        live = open_db(db_path, migrate=False, check_schema=False)  # replaced whole
        try:
            before = contents(live.conn)
            if not confirm:
                raise ConcordError(
                    f"restore would replace everything in {db_path} ({before}) with "
                    f"{source_path} ({after}); add --yes to confirm (a copy of the current "
                    "database is kept)")
            with swap.upgraded_copy(source, db_path, f"backup {source_path}") as copy:
                safety, seen = swap.swap_in(live, copy, db_path, str(source_path))
            with transaction(live):  # the dashboard never takes it for a database it saw
                report_cache.raise_changes(live, seen)
                # A session signed out since the backup was taken must not come back.
                live.execute("DELETE FROM research_sessions")
        finally:
            live.close()
    finally:
        source.close()
    return Restored(before, after, safety)


def _restore_postgres(url: str, source_path: Path, *, confirm: bool, beside: Path) -> Restored:
    """:func:`restore` into a PostgreSQL database (concord.store.pg_backup); the safety
    copy goes to ``beside`` (the database's local stem) stamped with the time."""
    from concord.config import mask_password
    from concord.store import pg_backup, swap

    source = open_backup(source_path)
    try:
        after = contents(source)
        live = open_db(url, migrate=False, check_schema=False)
        try:
            before = contents(live.conn)
            if not confirm:
                raise ConcordError(
                    f"restore would replace everything in {mask_password(url)} ({before}) "
                    f"with {source_path} ({after}); add --yes to confirm (a copy of the "
                    "current database is kept)")
            beside.parent.mkdir(parents=True, exist_ok=True)
            safety = safety_copy_path(beside)
            with swap.upgraded_copy(source, beside, f"backup {source_path}") as upgraded:
                pg_backup.restore_from(live, Database(upgraded), safety)
        finally:
            live.close()
    finally:
        source.close()
    return Restored(before, after, safety)
