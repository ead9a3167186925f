"""What differs between the engines' catalogues and connection settings, asked in one place:
the tables and triggers a database has, the file behind it, how long a write may wait."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlite_utils import Database

from concord.store import engine

PG_TABLES = ("SELECT table_name FROM information_schema.tables WHERE table_schema ="
              " current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name")
_PG_TRIGGERS = ("SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
                " WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal")
# sqlite_* tables (sqlite_sequence, sqlite_stat1) hold no data of Concord's.
_SQLITE_TABLES = ("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE"
                  " 'sqlite!_%' ESCAPE '!' ORDER BY name")


def table_names(db: Database) -> list[str]:
    """The database's tables, sorted (the engine's own left out)."""
    return [r[0] for r in db.execute(PG_TABLES if engine.is_postgres(db) else _SQLITE_TABLES)]


def trigger_names(db: Database) -> set[str]:
    """The names of the database's triggers."""
    if engine.is_postgres(db):
        return {r[0] for r in db.execute(_PG_TRIGGERS)}
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}


def database_file(db: Database) -> str:
    """The SQLite file behind a connection ("" in memory and on PostgreSQL, which has
    none a process could open)."""
    if engine.is_postgres(db):
        return ""
    return str(db.execute("PRAGMA database_list").fetchone()[2] or "")


@contextlib.contextmanager
def write_wait(db: Database, ms: int) -> Iterator[None]:
    """Statements in the block wait at most ``ms`` for a lock another writer holds (then
    fail with an OperationalError); the connection's own wait comes back after."""
    conn = db.conn
    if engine.is_postgres(db):
        (before,) = conn.execute("SELECT current_setting('lock_timeout')").fetchone()
        conn.execute(f"SET lock_timeout = {int(ms)}")
        try:
            yield
        finally:
            conn.execute("SELECT set_config('lock_timeout', ?, false)", [before])
        return
    (wait,) = conn.execute("PRAGMA busy_timeout").fetchone()
    conn.execute(f"PRAGMA busy_timeout = {int(ms)}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(wait)}")
