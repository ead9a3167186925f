"""Is a SQLite file a Concord database this version may use? Checked before it is changed.

``open_db`` switches a database to WAL and applies migrations: done to another
application's file, that would damage it (and still fail later). Done to a database that
a newer Concord wrote, it would run old code over a schema it does not know. So the file
is read first, and only an empty file, a new one or a Concord database of this version or
older is opened for writing.
"""

from __future__ import annotations

import functools
import sqlite3
from dataclasses import dataclass

from sqlite_utils import Database

from concord import __version__
from concord.errors import ConcordError
from concord.store.migrations import migrations

MIGRATIONS_TABLE = "_sqlite_migrations"  # sqlite-utils' bookkeeping table
_COLUMNS = (
    "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p"
    " WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite!_%' ESCAPE '!'"
    " AND m.name != ?"
)


class DatabaseRefused(ConcordError):
    """A file that is not a Concord database, or one this version must not change."""


@dataclass(frozen=True, slots=True)
class Schema:
    """What this version's migrations produce: their names and every table's columns."""

    migrations: tuple[str, ...]
    columns: frozenset[tuple[str, str]]


@functools.cache
def expected_schema() -> Schema:
    """This version's schema, built once per process in a throw-away in-memory database."""
    mem = Database(sqlite3.connect(":memory:"))
    migrations.apply(mem)
    names = tuple(m.name for m in migrations.applied(mem))
    columns = frozenset(mem.execute(_COLUMNS, [MIGRATIONS_TABLE]).fetchall())
    mem.close()
    return Schema(names, columns)


def check_before_open(conn: sqlite3.Connection, label: str) -> None:
    """Refuse (DatabaseRefused) anything but a new/empty or a Concord database that this
    version knows. Only reads: the file is unchanged when it is refused."""
    try:
        tables = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
            " AND name NOT LIKE 'sqlite!_%' ESCAPE '!'")}
    except sqlite3.DatabaseError as exc:
        raise DatabaseRefused(f"database {label}: not a SQLite database ({exc})") from exc
    if not tables - {MIGRATIONS_TABLE}:
        return  # a new or empty file: Concord creates its schema
    applied = _applied(conn) if MIGRATIONS_TABLE in tables else []
    if not applied:
        shown = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
        raise DatabaseRefused(
            f"database {label} is not a Concord database (it holds {shown}); nothing was "
            "changed. Point --db (or CONCORD_DB) at a Concord database or a new file")
    schema = expected_schema()
    unknown = [name for name in applied if name not in schema.migrations]
    if unknown:
        raise DatabaseRefused(
            f"database {label} was written by a newer Concord: it has migration(s) "
            f"{', '.join(unknown)}, and this Concord ({__version__}) knows migrations up to "
            f"{schema.migrations[-1]}. Upgrade Concord to open it; nothing was changed")
    if set(schema.migrations) <= set(applied):
        check_schema(conn, label)


def check_schema(conn: sqlite3.Connection, label: str) -> None:
    """Refuse a fully migrated database whose tables or columns differ from this version's."""
    expected = expected_schema().columns
    actual = set(conn.execute(_COLUMNS, [MIGRATIONS_TABLE]).fetchall())
    extra = sorted(f"{t}.{c}" for t, c in actual - expected)
    missing = sorted(f"{t}.{c}" for t, c in expected - actual)
    if extra:
        raise DatabaseRefused(
            f"database {label} has table column(s) this Concord ({__version__}) does not know: "
            f"{_few(extra)}; it was written by a newer Concord or changed by hand. Nothing was "
            "changed")
    if missing:
        raise DatabaseRefused(
            f"database {label} lacks column(s) of this Concord ({__version__}) although every "
            f"migration is recorded: {_few(missing)}; it was changed by hand. Restore a backup")


def _applied(conn: sqlite3.Connection) -> list[str]:
    try:
        return [r[0] for r in conn.execute(
            f"SELECT name FROM {MIGRATIONS_TABLE} WHERE migration_set = ? ORDER BY rowid",
            [migrations.name])]
    except sqlite3.OperationalError:  # a table of that name that is not sqlite-utils'
        return []


def _few(items: list[str], n: int = 5) -> str:
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")
