"""Import batches: write a large import in short transactions, show it all at once.

A batch is a row of ``import_batches``. While it is ``pending``, every rating, ranking and
pair judgment it wrote (their ``batch`` column) is invisible: the current views, the
frames and a rater's history skip it, and a study it created is hidden from name lookups.
Publishing is one short transaction that flips the state. A batch whose process died
(``kill -9``, power loss) stays pending and invisible; the next import removes it
(:func:`discard_stale`).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import sqlite3
from dataclasses import dataclass

from sqlite_utils import Database

from concord.errors import ConcordError
from concord.store.db import dumps, inserted_id, now, transaction

PENDING_IDS = "SELECT id FROM import_batches WHERE state = 'pending'"
HIDDEN_STUDY_IDS = ("SELECT study_id FROM import_batches WHERE state = 'pending'"
                    " AND new_study = 1")
STALE_AFTER_S = 600  # a batch whose process has not written for this long is abandoned
_DELETE_CHUNK = 20_000
_MINE: set[int] = set()  # batches this process is writing right now


def visible(alias: str = "") -> str:
    """SQL condition: the rating, ranking or pair judgment row (table alias ``alias``) is
    not part of a pending batch."""
    col = f"{alias}.batch" if alias else "batch"
    return f"({col} IS NULL OR {col} NOT IN ({PENDING_IDS}))"


@dataclass(frozen=True, slots=True)
class Batch:
    """A pending batch of this process."""

    id: int
    study_id: int
    new_study: bool


@dataclass(frozen=True, slots=True)
class NewStudy:
    """The study a batch creates (hidden until the batch is published)."""

    name: str
    rubric: str | None
    settings: dict
    protocol: str = "score"  # ``pair`` or ``rank`` for a study made from votes or rankings


def begin(db: Database, *, study_id: int | None, new: NewStudy | None, source: str) -> Batch:
    """Open a pending batch for an existing study, or create the (hidden) study with it.

    Raises:
        ConcordError: another live import is writing into the same study, or the new
            study's name was taken meanwhile.
    """
    if (study_id is None) == (new is None):
        raise ValueError("give either study_id or new, not both or neither")
    with transaction(db):
        target = _create_study(db, new) if new is not None else study_id
        if target is None:  # excluded above; narrows the type
            raise ValueError("give either study_id or new")
        _refuse_concurrent(db, target)
        stamp = now()
        cur = db.execute(
            "INSERT INTO import_batches (study_id, state, new_study, source, pid, host,"
            " started_at, heartbeat) VALUES (?, 'pending', ?, ?, ?, ?, ?, ?) RETURNING id",
            [target, int(new is not None), source, os.getpid(), socket.gethostname(),
             stamp, stamp])
        batch_id = inserted_id(cur)
    _MINE.add(batch_id)
    return Batch(batch_id, target, new is not None)


def _create_study(db: Database, new: NewStudy) -> int:
    try:
        cur = db.execute("INSERT INTO studies (name, protocol, rubric, root, settings,"
                         " created_at) VALUES (?, ?, ?, NULL, ?, ?) RETURNING id",
                         [new.name, new.protocol, new.rubric, dumps(new.settings), now()])
    except sqlite3.IntegrityError:
        raise ConcordError(f"study {new.name!r} is being created by another import right now;"
                           " run this one again when that one has finished") from None
    return inserted_id(cur)


def _refuse_concurrent(db: Database, study_id: int) -> None:
    row = db.execute("SELECT pid, host, started_at FROM import_batches WHERE study_id = ? AND"
                     " state = 'pending'", [study_id]).fetchone()
    if row is not None:
        raise ConcordError(f"another import into this study is running (process {row[0]} on "
                           f"{row[1]}, started {row[2]}); run this one when it has finished")


def touch(db: Database, batch: Batch) -> None:
    """Mark the batch alive (inside each chunk's transaction); fail if it was discarded."""
    cur = db.execute("UPDATE import_batches SET heartbeat = ? WHERE id = ? AND"
                     " state = 'pending'", [now(), batch.id])
    if cur.rowcount != 1:
        raise ConcordError(f"import batch {batch.id} was discarded by another process (it "
                           "looked abandoned); nothing of it is visible: run the import again")


def record(db: Database, batch: Batch, kind: str, after_id: int) -> None:
    """Remember the ``kind`` rows with id > ``after_id`` as made by this batch (same
    transaction as their insert), so that discarding the batch removes them."""
    table = {"model": "models", "prompt": "prompts", "image": "images", "rater": "raters"}[kind]
    # "+study_id": walk the id range, not the (much larger) study index.
    where = "" if kind == "rater" else f" AND +study_id = {int(batch.study_id)}"
    db.execute(f"INSERT INTO import_batch_items (batch_id, kind, item_id) SELECT ?, ?, id"
               f" FROM {table} WHERE id > ?{where}", [batch.id, kind, after_id])


def max_id(db: Database, table: str) -> int:
    """The largest id of a table (0 when empty)."""
    if table not in {"models", "prompts", "images", "raters"}:
        raise ValueError(f"unknown table {table!r}")
    return int(db.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0])


def publish(db: Database, batch: Batch, *, rubric: str | None, settings: dict) -> None:
    """Make the batch visible: memberships, the study's rubric and settings, one flip.

    Runs inside the caller's transaction (which also writes the audit line).
    """
    touch(db, batch)
    db.execute("INSERT INTO study_raters (study_id, rater_id, added_at) SELECT ?, rater_id,"
               " ? FROM stage.s_raters WHERE true ON CONFLICT DO NOTHING",
               [batch.study_id, now()])
    db.execute("UPDATE studies SET rubric = ?, settings = ? WHERE id = ?",
               [rubric, dumps(settings), batch.study_id])
    db.execute("UPDATE import_batches SET state = 'published', finished_at = ? WHERE id = ?",
               [now(), batch.id])
    _MINE.discard(batch.id)


def drop_empty(db: Database, batch: Batch) -> None:
    """Remove a batch that wrote nothing (a repeated import leaves no trace)."""
    with transaction(db):
        db.execute("DELETE FROM import_batches WHERE id = ?", [batch.id])
    _MINE.discard(batch.id)


def discard(db: Database, batch_id: int) -> None:
    """Delete everything a pending batch wrote, in short transactions, then the batch.

    Safe to interrupt: the batch stays pending (invisible) until its last step.
    """
    row = db.execute("SELECT study_id, new_study FROM import_batches WHERE id = ? AND"
                     " state = 'pending'", [batch_id]).fetchone()
    if row is None:
        return
    study_id, new_study = row
    for table in ("comments", "ratings", "rankings", "pair_judgments", "pairs"):
        _delete_chunks(db, table, "batch = ?", [batch_id])
    if new_study:
        _delete_chunks(db, "images", "study_id = ?", [study_id])
        _delete_chunks(db, "prompts", "study_id = ?", [study_id])
    for kind, table in (("image", "images"), ("prompt", "prompts"), ("model", "models")):
        _delete_chunks(db, table, f"id IN (SELECT item_id FROM import_batch_items WHERE"
                                  f" batch_id = ? AND kind = '{kind}')", [batch_id])
    with transaction(db):
        _delete_orphan_raters(db, batch_id)
        if new_study:
            db.execute("DELETE FROM studies WHERE id = ?", [study_id])
        db.execute("DELETE FROM import_batches WHERE id = ?", [batch_id])
    _MINE.discard(batch_id)


def _delete_chunks(db: Database, table: str, where: str, args: list) -> None:
    while True:
        with transaction(db):
            cur = db.execute(f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE"
                             f" {where} LIMIT {_DELETE_CHUNK})", args)
        if cur.rowcount < _DELETE_CHUNK:
            return


def _delete_orphan_raters(db: Database, batch_id: int) -> None:
    """Raters the batch created, unless something else uses them by now."""
    db.execute(
        "DELETE FROM raters WHERE id IN (SELECT item_id FROM import_batch_items WHERE"
        " batch_id = ? AND kind = 'rater') AND token_hash IS NULL AND NOT EXISTS (SELECT 1"
        " FROM study_raters s WHERE s.rater_id = raters.id) AND NOT EXISTS (SELECT 1 FROM"
        " ratings r WHERE r.rater_id = raters.id) AND NOT EXISTS (SELECT 1 FROM rankings k"
        " WHERE k.rater_id = raters.id) AND NOT EXISTS (SELECT 1 FROM pair_judgments j"
        " WHERE j.rater_id = raters.id)", [batch_id])


def discard_stale(db: Database) -> list[int]:
    """Discard pending batches whose process is gone; returns their ids."""
    rows = db.execute("SELECT id, pid, host, heartbeat FROM import_batches WHERE"
                      " state = 'pending'").fetchall()
    gone = [r[0] for r in rows if r[0] not in _MINE and _abandoned(*r[1:])]
    for batch_id in gone:
        discard(db, batch_id)
    return gone


def _abandoned(pid: int, host: str, heartbeat: str) -> bool:
    age = dt.datetime.now(dt.UTC) - dt.datetime.fromisoformat(heartbeat)
    if age.total_seconds() > STALE_AFTER_S:
        return True
    if host != socket.gethostname():
        return False  # another machine's process: only its silence tells
    if pid == os.getpid():
        return True  # this process is not writing it (not in _MINE): a dead predecessor
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
