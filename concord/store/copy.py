"""Copying a whole Concord database between engines (``concord migrate-db``), row for row.

Both engines hold the same tables with the same columns (the SQLite migrations' schema;
``pg_schema`` makes it on PostgreSQL), so a copy reads each table of the source and
inserts its rows into the target in an order that satisfies the foreign keys, then checks
that each table has the same number of rows and the same checksum on both sides.

The checksum of a table is the sum, modulo 2**128, of a 128-bit hash of each row's values
written out in one canonical form (so it does not depend on the order the engine returns
rows in, nor on its collation); ``None``, integers, floats, text and bytes each have their
own tag, so 1, 1.0, '1' and b'1' differ.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from concord.errors import ConcordError
from concord.store import engine, guard

CHUNK = 5_000
# Written by the schema itself when a database is made (the crowd salt is random): replaced
# by the source's rows, so that its crowd links and participant hashes keep working.
BOOKKEEPING = (guard.MIGRATIONS_TABLE, "data_changes", "crowd_salt")
_MOD = 1 << 128


@dataclass(frozen=True, slots=True)
class TableCheck:
    """One table's row count and checksum on the source and on the target."""

    table: str
    rows: int
    checksum: str
    target_rows: int
    target_checksum: str

    @property
    def same(self) -> bool:
        return (self.rows, self.checksum) == (self.target_rows, self.target_checksum)


@functools.cache
def layout() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every table with its columns, parents before children (foreign keys)."""
    mem = sqlite3.connect(":memory:")
    try:
        from concord.store.migrations import migrations

        migrations.apply(Database(mem))
        names = [r[0] for r in mem.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE"
            " 'sqlite!_%' ESCAPE '!' ORDER BY name")]
        columns = {t: tuple(r[1] for r in mem.execute(f'PRAGMA table_info("{t}")'))
                   for t in names}
        parents = {t: {r[2] for r in mem.execute(f'PRAGMA foreign_key_list("{t}")')} - {t}
                   for t in names}
    finally:
        mem.close()
    ordered: list[str] = []
    while len(ordered) < len(names):
        ready = [t for t in names if t not in ordered and parents[t] <= set(ordered)]
        if not ready:  # a cycle: cannot happen in Concord's schema
            left = sorted(set(names) - set(ordered))
            raise RuntimeError(f"foreign keys form a cycle among {left}")
        ordered.extend(ready)
    return tuple((t, columns[t]) for t in ordered)


def occupied(db: Database) -> dict[str, int]:
    """The tables of ``db`` holding rows (bookkeeping left out) and their counts."""
    counts = {t: _count(db, t) for t, _ in layout() if t not in BOOKKEEPING}
    return {t: n for t, n in counts.items() if n}


def copy_all(source: Database, target: Database, *,
             progress: Callable[[str, int], None] | None = None) -> list[TableCheck]:
    """Copy every row of ``source`` into the empty ``target``, in one transaction of the
    target (a failure leaves it as empty as it was), and return each table's
    :func:`checks`. The source is read in one snapshot for the copy and the checks alike:
    raters writing meanwhile neither tear the copy nor make it differ from the source."""
    from concord.store.db import transaction

    with _snapshot(source):
        with transaction(target):
            for table in BOOKKEEPING:
                target.execute(f'DELETE FROM "{table}"')
            copy_rows(source, target, progress=progress)
        return checks(source, target)


def copy_rows(source: Database, target: Database, *,
              progress: Callable[[str, int], None] | None = None) -> None:
    """Insert every row of ``source`` into ``target`` inside the caller's transaction of
    the target, parents before children; PostgreSQL's id sequences are moved past them."""
    for table, columns in layout():
        n = _copy_table(source, target, table, columns)
        if progress is not None:
            progress(table, n)
    if engine.is_postgres(target):
        _reset_identities(target)


def delete_rows(db: Database) -> None:
    """Delete every row of every table (children first), inside the caller's transaction."""
    for table, _ in reversed(layout()):
        db.execute(f'DELETE FROM "{table}"')


def _copy_table(source: Database, target: Database, table: str,
                columns: tuple[str, ...]) -> int:
    names = ", ".join(f'"{c}"' for c in columns)
    insert = f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" * len(columns))})'
    n = 0
    for chunk in _chunks(source, f'SELECT {names} FROM "{table}"'):
        try:
            target.conn.executemany(insert, chunk)
        except sqlite3.Error as exc:
            # Said by the caller's command (migrate-db, restore), which knows what the
            # source is and what was left unchanged; PostgreSQL's CONTEXT lines left out.
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConcordError(f"table {table}: a row of the source cannot be written to "
                               f"the target ({first})") from exc
        n += len(chunk)
    return n


def _chunks(db: Database, sql: str) -> Iterator[list[tuple]]:
    cursor = db.execute(sql)
    while True:
        rows = cursor.fetchmany(CHUNK)
        if not rows:
            return
        yield [tuple(r) for r in rows]


def checks(source: Database, target: Database) -> list[TableCheck]:
    """Row count and checksum of every table on both sides."""
    out = []
    for table, columns in layout():
        n, digest = checksum(source, table, columns)
        tn, tdigest = checksum(target, table, columns)
        out.append(TableCheck(table, n, digest, tn, tdigest))
    return out


def checksum(db: Database, table: str, columns: tuple[str, ...]) -> tuple[int, str]:
    """(rows, checksum) of ``table`` (module docstring)."""
    names = ", ".join(f'"{c}"' for c in columns)
    total, n = 0, 0
    for chunk in _chunks(db, f'SELECT {names} FROM "{table}"'):
        for row in chunk:
            digest = hashlib.blake2b(b"".join(_canonical(v) for v in row), digest_size=16)
            total = (total + int.from_bytes(digest.digest(), "big")) % _MOD
        n += len(chunk)
    return n, f"{total:032x}"


def _canonical(value: Any) -> bytes:
    if value is None:
        return b"N;"
    if isinstance(value, bool | int):
        return b"I" + str(int(value)).encode() + b";"
    if isinstance(value, float):
        return b"F" + struct.pack(">d", value)
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        return b"B" + str(len(data)).encode() + b":" + data
    text = str(value).encode("utf-8", "surrogatepass")
    return b"T" + str(len(text)).encode() + b":" + text


def _count(db: Database, table: str) -> int:
    return int(db.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])


def _snapshot(db: Database) -> Any:
    """One read snapshot of ``db`` for the whole copy (a repeatable-read transaction on
    PostgreSQL, a read transaction on SQLite), so raters may keep writing meanwhile; the
    caller's own transaction when one is open."""
    import contextlib

    @contextlib.contextmanager
    def held() -> Iterator[None]:
        if db.conn.in_transaction:
            yield
            return
        if engine.is_postgres(db):
            db.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        else:
            db.conn.execute("BEGIN")
            db.conn.execute("SELECT COUNT(*) FROM studies")  # takes the read snapshot now
        try:
            yield
        finally:
            db.conn.rollback()
    return held()


def _reset_identities(db: Database) -> None:
    """Point each identity column's sequence past the ids copied in."""
    identities = {r[0] for r in db.execute(
        "SELECT table_name FROM information_schema.columns WHERE table_schema ="
        " current_schema() AND column_name = 'id' AND is_identity = 'YES'")}
    for table, _ in layout():
        if table in identities:
            db.execute(f"SELECT setval(pg_get_serial_sequence('\"{table}\"', 'id'),"
                       f' COALESCE((SELECT MAX(id) FROM "{table}"), 0) + 1, false)')
