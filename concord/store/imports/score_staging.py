"""Imported scores go in through a staging table, in bounded chunks.

A long import (hundreds of thousands of scores) must not hold SQLite's single write lock for
seconds while raters submit. So an import is (1) validated completely before anything is
written, (2) copied into ``score_staging`` in chunks of :data:`CHUNK` rows, each its own
short transaction (invisible to every reader), then (3) published: moved chunk by chunk into
``metric_scores`` (an upsert that leaves equal rows alone) and deleted from staging in the
same transaction. A killed import leaves either only staging rows, which the next import
discards, or a half-published import, which the next import (or merge) finishes first: its
rows were complete and valid before publishing began. Readers may see a publish half done
for as long as it runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from sqlite_utils import Database

from concord.store.db import inserted_id, now, transaction
from concord.store.runs import pid_alive, this_host
from concord.store.scores import UPSERT

CHUNK = 2000
_COLUMNS = ("image_id", "metric", "judge", "question_id", "value", "details", "run_id",
            "error", "options_key")


def begin(db: Database, study_id: int, source: str) -> int:
    """Open an import owned by this process; returns its id."""
    with transaction(db):
        cursor = db.execute(
            "INSERT INTO score_imports (study_id, source, status, pid, host, created_at)"
            " VALUES (?, ?, 'staging', ?, ?, ?) RETURNING id",
            [study_id, source, os.getpid(), this_host(), now()])
        return inserted_id(cursor)


def stage(db: Database, import_id: int, rows: Iterable[Sequence[Any]]) -> int:
    """Copy rows (values in :data:`_COLUMNS` order) into staging, one transaction a chunk."""
    sql = (f"INSERT INTO score_staging (import_id, {', '.join(_COLUMNS)})"
           f" VALUES (?{', ?' * len(_COLUMNS)})")
    chunk: list[list[Any]] = []
    total = 0
    for row in rows:
        chunk.append([import_id, *row])
        if len(chunk) == CHUNK:
            total += _insert(db, sql, chunk)
            chunk = []
    if chunk:
        total += _insert(db, sql, chunk)
    return total


def _insert(db: Database, sql: str, chunk: list[list[Any]]) -> int:
    with transaction(db):
        db.conn.executemany(sql, chunk)
    return len(chunk)


def publish(db: Database, import_id: int) -> int:
    """Move the staged rows into ``metric_scores`` chunk by chunk; returns rows stored
    (new or changed). The import's bookkeeping is gone afterwards."""
    with transaction(db):
        db.execute("UPDATE score_imports SET status = 'publishing' WHERE id = ?", [import_id])
    stored = 0
    cols = ", ".join(_COLUMNS)
    while True:
        with transaction(db):
            last = db.execute("SELECT MAX(id) FROM (SELECT id FROM score_staging WHERE"
                              " import_id = ? ORDER BY id LIMIT ?) AS c",
                              [import_id, CHUNK]).fetchone()[0]
            if last is None:
                db.execute("DELETE FROM score_imports WHERE id = ?", [import_id])
                return stored
            # rowcount: the rows this statement inserted or updated; total_changes would
            # also count what triggers change (the report cache's change counter).
            stored += db.execute(
                f"INSERT INTO metric_scores (study_id, {cols}, created_at)"
                f" SELECT i.study_id, {', '.join('s.' + c for c in _COLUMNS)}, ?"
                " FROM score_staging s JOIN score_imports i ON i.id = s.import_id"
                " WHERE s.import_id = ? AND s.id <= ? ORDER BY s.id" + UPSERT,
                [now(), import_id, last]).rowcount
            db.execute("DELETE FROM score_staging WHERE import_id = ? AND id <= ?",
                       [import_id, last])


def discard(db: Database, import_id: int) -> None:
    """Drop an import that never started publishing."""
    with transaction(db):
        db.execute("DELETE FROM score_imports WHERE id = ?", [import_id])


def recover(db: Database) -> int:
    """Finish the publishes and drop the stagings of imports whose process is gone;
    returns how many imports were dealt with."""
    orphans = [r for r in db.query("SELECT id, status, pid, host FROM score_imports")
               if r["host"] != this_host() or not pid_alive(r["pid"])]
    for r in orphans:
        if r["host"] != this_host() and r["status"] == "staging":
            continue  # another machine's import may still be running
        if r["status"] == "publishing":
            publish(db, r["id"])
        else:
            discard(db, r["id"])
    return len(orphans)
