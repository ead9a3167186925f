"""The two steps of ``restore`` that touch files: an upgraded copy of the backup, then the
swap of the live database's pages under one hold of SQLite's write lock.

Why one hold: a safety copy taken, then the pages written, each under its own lock, leaves
a gap between the two in which a rater's rating is saved (and acknowledged) into a
database that is about to be overwritten, and that the safety copy no longer sees. So the
pages are written with SQLite's backup API in steps: its first step takes the live
database's write lock, which it keeps until the last step commits, and the safety copy is
read (through another connection: in WAL mode readers never wait for the writer) right
after that first step. Every commit before the lock is in the safety copy; every commit
after it lands in the restored database.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from sqlite_utils import Database

from concord.errors import ConcordError
from concord.store import backup, guard, report_cache
from concord.store.db import BUSY_TIMEOUT_MS, DB_FILE_MODE
from concord.store.migrations import migrations

# How long a restore waits for raters' writes to let it take the write lock; each of
# them holds it for milliseconds, so only a stuck writer makes it wait this long.
LOCK_WAIT_S = 60.0
# Retry interval while another writer holds the lock (raters retry every 0.5 to 4 ms).
_RETRY_S = 0.002
# Steps the pages are written in: the first one takes the lock, the safety copy follows.
_STEPS = 64
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6


@contextlib.contextmanager
def upgraded_copy(source: sqlite3.Connection, db_path: Path,
                  label: str) -> Iterator[sqlite3.Connection]:
    """A private copy of ``source`` beside ``db_path``, upgraded to this version's schema
    and checked against it as a whole (``guard.check_schema``); removed afterwards."""
    tmp = db_path.with_name(f".{db_path.name}.{secrets.token_hex(4)}.restoring")
    conn = None
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DB_FILE_MODE))
        conn = sqlite3.connect(tmp)
        source.backup(conn)
        _upgrade(Database(conn), label)
        yield conn
    except OSError as exc:
        raise ConcordError(f"cannot write beside {db_path}: {exc.strerror or exc}") from exc
    finally:
        if conn is not None:
            conn.close()
        for leftover in (tmp, Path(f"{tmp}-journal")):
            leftover.unlink(missing_ok=True)


def _upgrade(copy: Database, label: str) -> None:
    copy.execute("PRAGMA foreign_keys = ON")
    try:
        if migrations.pending(copy):
            migrations.apply(copy)
    except sqlite3.Error as exc:
        raise ConcordError(f"{label} cannot be upgraded to this Concord's schema ({exc}); "
                           "nothing was changed") from exc
    guard.check_schema(copy.conn, label)


def swap_in(live: Database, copy: sqlite3.Connection, db_path: Path,
            label: str) -> tuple[Path, int]:
    """Write every page of ``copy`` into ``live``; the safety copy is taken under the same
    write lock. Returns the safety copy and the change counter the live database had.

    Raises:
        ConcordError: the lock was not free within :data:`LOCK_WAIT_S`, the safety copy
            failed, or SQLite refused the pages; the live database is then unchanged.
    """
    pages = copy.execute("PRAGMA page_count").fetchone()[0]
    if pages < 2:  # a first step that copied everything would commit before the copy
        raise ConcordError(f"{label} is empty: it is not a Concord backup")
    safety = backup.safety_copy_path(db_path)
    taken: list[int] = []  # the live change counter, once the safety copy is taken
    deadline = time.monotonic() + LOCK_WAIT_S

    def after_step(status: int, remaining: int, total: int) -> None:
        if status in (_SQLITE_BUSY, _SQLITE_LOCKED):
            if time.monotonic() > deadline:
                raise ConcordError(f"restore: {db_path} stayed busy for {LOCK_WAIT_S:.0f} s "
                                   "(a writer holds it); nothing was changed, try again")
            return
        if not taken:  # the first step holds the write lock from now until the last one
            try:
                taken.append(_safety_copy(db_path, safety))
            except ConcordError as exc:
                raise ConcordError(f"restore: the safety copy failed ({exc}); nothing was "
                                   "changed") from exc

    live.conn.execute("PRAGMA busy_timeout = 0")  # after_step paces the retries
    try:
        copy.backup(live.conn, pages=max(1, pages // _STEPS), progress=after_step,
                    sleep=_RETRY_S)
    except sqlite3.Error as exc:  # e.g. page sizes differ while the target is in WAL mode
        raise ConcordError(f"restore from {label} failed, the database is unchanged: "
                           f"{exc}") from exc
    finally:
        live.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return safety, taken[0]


def _safety_copy(db_path: Path, safety: Path) -> int:
    """Back the live database up to ``safety`` on a connection of its own (it sees the
    last commit before the lock); returns its change counter."""
    reader = Database(sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_MS / 1000))
    try:
        backup.backup(reader, safety)
        return report_cache.changes(reader.conn)
    finally:
        reader.close()
