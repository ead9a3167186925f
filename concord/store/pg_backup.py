"""Backup and restore of a PostgreSQL database, to and from the same files as SQLite's.

A backup is a SQLite file (the format ``backup`` writes on SQLite, so a backup moves
between the engines and ``restore`` takes either): the rows are copied in one
repeatable-read snapshot (raters keep writing meanwhile), every table's count and
checksum are compared, and the file replaces the target atomically.

A restore holds Concord's write lock and locks every table against writes (readers go
on, seeing the old data until the commit), copies the database as it was into a safety
file, then deletes every row and inserts the backup's, all in one transaction: open
connections see the old database or the new one, never a mix, and a rating saved before
the lock is in the safety copy, one saved after it (it waited) in the restored database.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlite_utils import Database

from concord import atomic
from concord.errors import ConcordError
from concord.store import copy, report_cache
from concord.store.db import BUSY_TIMEOUT_MS, DB_FILE_MODE, open_db, transaction


def backup_to_file(db: Database, target: Path) -> None:
    """Write every row of the PostgreSQL ``db`` into a new SQLite file at ``target``
    (replaced atomically; the caller checked the folder), checked table by table."""
    with atomic.replacing(target) as tmp:  # refuses a pipe or device at target
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DB_FILE_MODE))
        out = open_db(tmp)
        try:
            _verify(copy.copy_all(db, out), str(target))
            out.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
        finally:
            out.close()


def restore_from(live: Database, source: Database, safety: Path) -> int:
    """Replace every row of the PostgreSQL ``live`` by ``source``'s (an upgraded copy of a
    backup), keeping ``live`` as it was in the SQLite file ``safety``. Returns the change
    counter the safety copy had (the restored one is raised above it)."""
    tables = ", ".join(f'"{t}"' for t, _ in copy.layout())
    with transaction(live):
        live.execute(f"SET LOCAL lock_timeout = {BUSY_TIMEOUT_MS}")
        # EXCLUSIVE: every write waits for this transaction, every read goes on.
        live.execute(f"LOCK TABLE {tables} IN EXCLUSIVE MODE")
        seen = report_cache.changes(live.conn)
        _safety_copy(live, safety)
        copy.delete_rows(live)
        try:
            copy.copy_rows(source, live)
        except ConcordError as exc:  # the transaction rolls back: nothing was changed
            raise ConcordError(f"restore: the backup's {exc}; the database was left as it "
                               f"was (its copy {safety} can be deleted)") from exc
        report_cache.raise_changes(live, max(seen, report_cache.changes(source.conn)))
        # A session signed out since the backup was taken must not come back.
        live.execute("DELETE FROM research_sessions")
    return seen


def _safety_copy(live: Database, safety: Path) -> None:
    try:
        os.close(os.open(safety, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DB_FILE_MODE))
    except OSError as exc:
        raise ConcordError(f"restore: cannot write the safety copy {safety} "
                           f"({exc.strerror or exc}); nothing was changed") from exc
    out = open_db(safety)
    try:
        _verify(copy.copy_all(live, out), str(safety))
    except BaseException:
        out.close()
        for leftover in (safety, Path(f"{safety}-wal"), Path(f"{safety}-shm")):
            leftover.unlink(missing_ok=True)
        raise
    out.close()


def _verify(checks: list[copy.TableCheck], label: str) -> None:
    bad = [c.table for c in checks if not c.same]
    if bad:
        raise ConcordError(f"{label}: the copy differs from the database in {', '.join(bad)}"
                           "; nothing was replaced")
