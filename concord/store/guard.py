"""Is a SQLite file a Concord database this version may use? Checked before it is changed.

``open_db`` switches a database to WAL and applies migrations: done to another
application's file, that would damage it (and still fail later). Done to a database that
a newer Concord wrote, it would run old code over a schema it does not know. So the file
is read first, and only an empty file, a new one or a Concord database of this version or
older is opened for writing.
"""

from __future__ import annotations

import functools
import re
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
# Every object of the schema but SQLite's own (sqlite_sequence, sqlite_stat1, autoindexes).
_OBJECTS = "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite!_%' " \
           "ESCAPE '!'"
# Quotes around names: SQLite writes "name" where a migration wrote name (ALTER TABLE ...
# RENAME), older versions [name]; they name the same thing.
_QUOTES = re.compile(r'["`\[\]]')


class DatabaseRefused(ConcordError):
    """A file that is not a Concord database, or one this version must not change."""


@dataclass(frozen=True, slots=True)
class Schema:
    """What this version's migrations produce: their names, every table's columns and
    every schema object (table, index, view, trigger) with its SQL."""

    migrations: tuple[str, ...]
    columns: frozenset[tuple[str, str]]
    objects: dict[tuple[str, str], str]


def expected_schema() -> Schema:
    """This version's schema, built once per process in a throw-away in-memory database."""
    return schema_before(None)


@functools.cache
def schema_before(migration: str | None) -> Schema:
    """The schema of a database this version's migrations brought up to (not including)
    ``migration`` (None: all of them): what an older Concord's database must be."""
    mem = Database(sqlite3.connect(":memory:"))
    migrations.apply(mem, stop_before=migration)
    names = tuple(m.name for m in migrations.applied(mem))
    columns = frozenset(mem.execute(_COLUMNS, [MIGRATIONS_TABLE]).fetchall())
    objects = _objects(mem.conn)
    mem.close()
    return Schema(names, columns, objects)


def check_before_open(conn: sqlite3.Connection, label: str, *, schema: bool = True) -> None:
    """Refuse (DatabaseRefused) anything but a new/empty or a Concord database that this
    version knows. Only reads: the file is unchanged when it is refused.

    ``schema=False`` leaves out the comparison of the schema: for a database about to be
    replaced whole by ``restore`` (one changed by hand is what a restore repairs)."""
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
    known = expected_schema()
    unknown = [name for name in applied if name not in known.migrations]
    if unknown:
        raise DatabaseRefused(
            f"database {label} was written by a newer Concord: it has migration(s) "
            f"{', '.join(unknown)}, and this Concord ({__version__}) knows migrations up to "
            f"{known.migrations[-1]}. Upgrade Concord to open it; nothing was changed")
    if not schema:
        return
    if set(known.migrations) <= set(applied):
        check_schema(conn, label)
    elif tuple(applied) == known.migrations[: len(applied)]:  # an older Concord's database
        # checked before it is upgraded: a trigger of its own would fire in the migrations
        check_schema(conn, label, schema_before(known.migrations[len(applied)]))


def check_schema(conn: sqlite3.Connection, label: str, schema: Schema | None = None) -> None:
    """Refuse a database whose schema differs from this version's (or from ``schema``, what
    an older version's database must be): its columns, then every table, index, view and
    trigger with its SQL (a trigger added by hand or in a doctored backup could delete
    every new rating)."""
    schema = schema or expected_schema()
    _check_columns(conn, label, schema.columns)
    expected, actual = schema.objects, _objects(conn)
    extra = sorted(f"{kind} {name!r}" for kind, name in actual.keys() - expected.keys())
    missing = sorted(f"{kind} {name!r}" for kind, name in expected.keys() - actual.keys())
    changed = sorted(f"{kind} {name!r}" for (kind, name), sql in actual.items()
                     if (kind, name) in expected and expected[kind, name] != sql)
    if extra:
        raise DatabaseRefused(
            f"database {label} has schema object(s) this Concord ({__version__}) does not "
            f"know: {_few(extra)}; it was changed by hand or written by a newer Concord. "
            "Nothing was changed")
    if changed:
        raise DatabaseRefused(
            f"database {label} has schema object(s) that differ from this Concord's "
            f"({__version__}): {_few(changed)}; it was changed by hand. Nothing was changed")
    if missing:
        raise DatabaseRefused(
            f"database {label} lacks schema object(s) of this Concord ({__version__}) "
            f"although every migration is recorded: {_few(missing)}; it was changed by hand."
            " Restore a backup")


def _objects(conn: sqlite3.Connection) -> dict[tuple[str, str], str]:
    """(type, name) -> SQL (quotes and runs of spaces evened out) of every schema object
    but SQLite's own and the migrations table and its index, which sqlite-utils formats
    in its own way from version to version (triggers on it are compared)."""
    out = {}
    for kind, name, table, sql in conn.execute(_OBJECTS):
        if table == MIGRATIONS_TABLE and kind in ("table", "index"):
            continue
        out[kind, name] = " ".join(_QUOTES.sub("", sql or "").split())
    return out


def _check_columns(conn: sqlite3.Connection, label: str,
                   expected: frozenset[tuple[str, str]]) -> None:
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
