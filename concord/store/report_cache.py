"""Computed study reports kept in the database while the data they were computed from is
unchanged (``report_cache``), and the fingerprint that says whether it is.

The fingerprint of the database is, for every table, its row count and largest rowid, plus
``data_changes.n``: a counter that triggers raise on every UPDATE and DELETE of every table.
An INSERT always raises a count; an UPDATE or DELETE always raises the counter, even when
an insert re-uses the rowid of a deleted row. So any change of any row, by Concord or by
hand (``sqlite3`` on the file), gives a fingerprint never seen before, and a cached report
is served only under the fingerprint it was computed at. Inserts (the bulk of every
import) carry no trigger, so a million-row import costs nothing extra.

One hand edit goes unseen: ``REPLACE INTO`` (``INSERT OR REPLACE``) typed in a client
that leaves ``recursive_triggers`` off (the ``sqlite3`` shell does) and that gives the new
row the old row's id; SQLite then deletes the old row without firing its DELETE trigger.
Concord itself never replaces a data row (and sqlite-utils turns ``recursive_triggers``
on); after such an edit, ``stats --no-cache`` computes afresh. A restore from a backup
raises the counter above both files' (``concord.store.backup.restore``), so a running
dashboard never takes the restored database for one it has seen.

The fingerprint is taken *before* the data is read: a change during the computation makes
the stored entry unreachable rather than wrong.
"""

from __future__ import annotations

import hashlib
import sqlite3

from sqlite_utils import Database

from concord.store import catalog, engine
from concord.store.db import now

# Not fingerprinted: the cache itself, the counter (part of the fingerprint directly),
# failed sign-ins, researcher sessions and questionnaire answers (no report reads them; a
# sign-in or an answered questionnaire must not recompute reports).
_OWN = ("report_cache", "data_changes", "signin_failures", "research_sessions",
        "questionnaire_answers")
_OPS = ("UPDATE", "DELETE")
# Entries kept (newest first); a report of a million ratings is about 1 MB compressed.
KEEP = 16
# A cache write waits this long for another writer, then gives up (the report is printed).
_WRITE_WAIT_MS = 250
# The largest change counter trusted. The triggers add one per changed row, so no database
# gets near it (2**62 changes at a million a second take 146,000 years); a counter above it
# was typed by hand or came in a doctored backup, and near 2**63 SQLite turns n + 1 into a
# float that no longer grows, which would freeze every fingerprint. Above it the database
# has no fingerprint (nothing cached, nothing served) until a restore resets the counter.
MAX_CHANGES = 1 << 62

# The counter, the cache table and the first triggers are made by migration m1001; each
# later migration that adds a table writes out that table's two triggers, as trigger_sql
# gives them (migrations hold their own DDL: they never call this module).


def trigger_sql(table: str) -> str:
    """The UPDATE and DELETE triggers that raise the change counter on ``table``: the DDL a
    migration that adds a table writes out (two statements, for ``run_script``)."""
    return ";\n".join(
        f'CREATE TRIGGER "{_trigger_name(table, op)}" AFTER {op} ON "{table}"\n'
        "BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END" for op in _OPS)


def untriggered(db: Database) -> list[str]:
    """The tables (but the cache's own) that lack a change trigger: while there is one,
    the database has no fingerprint."""
    return _untriggered([t for t in _all_tables(db) if t not in _OWN], _triggers(db))


def _untriggered(tables: list[str], triggers: set[str]) -> list[str]:
    return [t for t in tables if any(_trigger_name(t, op) not in triggers for op in _OPS)]


def fingerprint(db: Database) -> str | None:
    """The database's fingerprint, or None when it cannot be trusted: a table without its
    triggers (added or dropped by hand) or a database without the counter."""
    names = _all_tables(db)
    tables = [t for t in names if t not in _OWN]
    if "data_changes" not in names or _untriggered(tables, _triggers(db)):
        return None
    # PostgreSQL has no rowid; there its statement triggers also count TRUNCATE, so a
    # count and the counter tell every change (pg_schema).
    last = "NULL" if engine.is_postgres(db) else "(SELECT MAX(rowid) FROM \"{t}\")"
    counts = " UNION ALL ".join(
        f"SELECT (SELECT COUNT(*) FROM \"{t}\"), " + last.format(t=t) for t in tables)
    counter = db.execute("SELECT n FROM data_changes WHERE id = 1").fetchone()
    if counter is None or _bounded(counter[0]) is None:  # deleted, or out of bounds
        return None
    try:
        rows = db.execute(counts).fetchall() if tables else []
    except sqlite3.OperationalError:  # a WITHOUT ROWID table made by hand has no rowid
        return None
    text = f"{counter[0]}|" + "|".join(
        f"{t}:{c}:{m}" for t, (c, m) in zip(tables, rows, strict=True))
    return hashlib.sha256(text.encode()).hexdigest()


def changes(conn: sqlite3.Connection) -> int:
    """The change counter ``data_changes.n``; 0 for a database without it or with a
    counter that is not a whole number from 0 to :data:`MAX_CHANGES`."""
    try:
        row = conn.execute("SELECT n FROM data_changes WHERE id = 1").fetchone()
    except sqlite3.Error:
        return 0
    return (_bounded(row[0]) or 0) if row else 0


def raise_changes(db: Database, above: int) -> None:
    """Put the counter above both its own value and ``above`` (in the caller's
    transaction): after a restore, the restored counts plus a later change could otherwise
    repeat a fingerprint that a running dashboard saw before the restore. A counter out of
    bounds counts as 0 (such a database had no fingerprint to repeat), so the result is
    at most :data:`MAX_CHANGES` + 1."""
    db.execute("UPDATE data_changes SET n = ? WHERE id = 1",
               [max(changes(db.conn), _bounded(above) or 0) + 1])


def _bounded(n: object) -> int | None:
    return n if isinstance(n, int) and 0 <= n <= MAX_CHANGES else None


def get(db: Database, key: str, fp: str) -> bytes | None:
    """The body stored under ``key`` at fingerprint ``fp``, or None."""
    row = db.execute("SELECT body FROM report_cache WHERE key = ? AND fingerprint = ?",
                     [key, fp]).fetchone()
    # A body changed by hand into text or a number is no entry (bytes() of an integer
    # would allocate that many bytes); PostgreSQL's column only holds bytes.
    return bytes(row[0]) if row is not None and isinstance(row[0], bytes) else None


def put(db: Database, key: str, fp: str, body: bytes) -> bool:
    """Store ``body`` under ``key`` at ``fp``; entries of other fingerprints go, and only the
    :data:`KEEP` newest stay.

    Best effort: False, with nothing changed, when the database cannot be written now (read
    only, busy for longer than a moment, full, or inside the caller's transaction).
    """
    conn = db.conn
    if conn.in_transaction:
        return False
    try:
        with catalog.write_wait(db, _WRITE_WAIT_MS), conn:
            conn.execute("DELETE FROM report_cache WHERE fingerprint != ?", [fp])
            conn.execute("INSERT INTO report_cache (key, fingerprint, created_at, body)"
                         " VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET fingerprint ="
                         " excluded.fingerprint, created_at = excluded.created_at, body ="
                         " excluded.body", [key, fp, now(), body])
            conn.execute("DELETE FROM report_cache WHERE key NOT IN (SELECT key FROM "
                         "report_cache ORDER BY created_at DESC, key DESC LIMIT ?)", [KEEP])
        return True
    except sqlite3.OperationalError:  # read-only file, locked, disk full: skip the cache
        return False


def _triggers(db: Database) -> set[str]:
    return catalog.trigger_names(db)


def _all_tables(db: Database) -> list[str]:
    return catalog.table_names(db)


def _trigger_name(table: str, op: str) -> str:
    return f"data_changes_{op.lower()}_{table}"
