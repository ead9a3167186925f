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

_SCHEMA = """
CREATE TABLE data_changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n INTEGER NOT NULL
);
INSERT INTO data_changes (id, n) VALUES (1, 0);
CREATE TABLE report_cache (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    created_at TEXT NOT NULL,
    body BLOB NOT NULL
)
"""


def create_tables(db: Database) -> None:
    """The counter and cache tables (migration m1001), then the triggers of every table."""
    for statement in _SCHEMA.split(";\n"):
        db.execute(statement)
    install_change_triggers(db)


def install_change_triggers(db: Database) -> list[str]:
    """Create the UPDATE and DELETE triggers that a table lacks; a migration that adds a
    table calls this. Returns the names of the triggers created."""
    triggers = _triggers(db)
    made = []
    for table in (t for t in _all_tables(db) if t not in _OWN):
        for op in _OPS:
            name = _trigger_name(table, op)
            if name not in triggers:
                db.execute(f'CREATE TRIGGER "{name}" AFTER {op} ON "{table}" BEGIN '
                           "UPDATE data_changes SET n = n + 1 WHERE id = 1; END")
                made.append(name)
    return made


def fingerprint(db: Database) -> str | None:
    """The database's fingerprint, or None when it cannot be trusted: a table without its
    triggers (added or dropped by hand) or a database without the counter."""
    names = _all_tables(db)
    tables, triggers = [t for t in names if t not in _OWN], _triggers(db)
    if "data_changes" not in names or any(
            _trigger_name(t, op) not in triggers for t in tables for op in _OPS):
        return None
    counts = " UNION ALL ".join(
        f"SELECT (SELECT COUNT(*) FROM \"{t}\"), (SELECT MAX(rowid) FROM \"{t}\")"
        for t in tables)
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
    # typeof: a body changed by hand into text or a number is no entry (bytes() of an
    # integer would allocate that many bytes).
    row = db.execute("SELECT body FROM report_cache WHERE key = ? AND fingerprint = ? AND"
                     " typeof(body) = 'blob'", [key, fp]).fetchone()
    return None if row is None else bytes(row[0])


def put(db: Database, key: str, fp: str, body: bytes) -> bool:
    """Store ``body`` under ``key`` at ``fp``; entries of other fingerprints go, and only the
    :data:`KEEP` newest stay.

    Best effort: False, with nothing changed, when the database cannot be written now (read
    only, busy for longer than a moment, full, or inside the caller's transaction).
    """
    conn = db.conn
    if conn.in_transaction:
        return False
    (wait,) = conn.execute("PRAGMA busy_timeout").fetchone()
    conn.execute(f"PRAGMA busy_timeout = {_WRITE_WAIT_MS}")
    try:
        with conn:
            conn.execute("DELETE FROM report_cache WHERE fingerprint != ?", [fp])
            conn.execute("INSERT OR REPLACE INTO report_cache (key, fingerprint, created_at,"
                         " body) VALUES (?, ?, ?, ?)", [key, fp, now(), body])
            conn.execute("DELETE FROM report_cache WHERE key NOT IN (SELECT key FROM "
                         "report_cache ORDER BY created_at DESC, rowid DESC LIMIT ?)", [KEEP])
        return True
    except sqlite3.OperationalError:  # read-only file, locked, disk full: skip the cache
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(wait)}")


def _triggers(db: Database) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}


def _all_tables(db: Database) -> list[str]:
    # sqlite_* tables (sqlite_sequence, sqlite_stat1) take no triggers and hold no data.
    return [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite!_%'"
        " ESCAPE '!' ORDER BY name")]


def _trigger_name(table: str, op: str) -> str:
    return f"data_changes_{op.lower()}_{table}"
