"""Writing a staged ratings import into a pending batch, one short transaction at a time.

Every write transaction here is paced (:class:`Pacer`) to hold SQLite's single write lock
for about :data:`CHUNK_SECONDS` and then to leave it free for :data:`PAUSE_SECONDS`, or
longer while raters are writing, so a rater's submit waiting meanwhile gets its turn
within one chunk (the waiting side polls quickly: ``concord.store.db.transaction``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlite_utils import Database

from concord.store import engine
from concord.store.db import last_begin_retries, now, transaction
from concord.store.imports import batches
from concord.store.imports.batches import Batch
from concord.store.imports.staging import create, stage_writes

# Lock time per chunk: short while raters are writing, longer when nobody else is (fewer
# commits and checkpoints; a rater who starts meanwhile waits one such chunk at most).
CHUNK_SECONDS, IDLE_CHUNK_SECONDS = 0.05, 0.2
PAUSE_SECONDS, MAX_PAUSE_SECONDS = 0.01, 1.0
MIN_ROWS, MAX_ROWS = 100, 50_000

_FROM = (" FROM stage.s_rows s JOIN stage.s_targets t ON t.prompt_id = s.prompt_id AND"
         " t.model = s.model AND t.sample = s.sample JOIN stage.s_raters r ON r.name = s.rater"
         " WHERE s.seq >= :lo AND s.seq < :hi")
_KEY = "x.image_id = t.image_id AND x.rater_id = r.rater_id AND x.criterion = s.criterion"
# The value a rater sees now (latest visible revision; NULL: none, or undone).
_CURRENT = (f"(SELECT x.value FROM main.ratings x WHERE {_KEY} AND {batches.visible('x')}"
            " ORDER BY x.revision DESC LIMIT 1)")
# The next revision of the key; 1 in a study this batch creates (nobody else can write
# there). The submission id is unique per batch and row and sorts in row order, so the
# inserts land next to each other in its index (random ids scattered them: 10x slower).
_NEXT = f"COALESCE((SELECT MAX(x.revision) FROM main.ratings x WHERE {_KEY}), 0) + 1"
_INSERT = (
    "INSERT INTO main.ratings (study_id, image_id, rater_id, criterion, value, revision,"
    " submission, action, seconds, created_at, batch) SELECT :study, t.image_id, r.rater_id,"
    " s.criterion, s.value, {revision}, printf('import-%d-%012d', :batch, s.seq), 'import',"
    f" s.seconds, :now, :batch{_FROM}")


# Page cache while writing (KiB, as SQLite's negative cache_size): the ratings indexes of a
# large import stay in memory instead of being read back page by page.
WRITE_CACHE_KIB = 65_536


@contextlib.contextmanager
def larger_cache(db: Database) -> Iterator[None]:
    """A bigger page cache for the main database while the block runs (SQLite; the
    PostgreSQL server sizes its own buffers)."""
    if engine.is_postgres(db):
        yield
        return
    before = int(db.execute("PRAGMA main.cache_size").fetchone()[0])
    db.execute(f"PRAGMA main.cache_size = -{WRITE_CACHE_KIB}")
    try:
        yield
    finally:
        db.execute(f"PRAGMA main.cache_size = {before}")


class Pacer:
    """Runs chunks of work in transactions sized to about :data:`CHUNK_SECONDS` each."""

    def __init__(self, db: Database, batch: Batch, rows: int = 2_000) -> None:
        self.db, self.batch, self.rows = db, batch, rows
        self.pause = PAUSE_SECONDS

    def run(self, work: Callable[[int], int]) -> int:
        """One chunk: ``work(rows)`` inside a transaction; returns what ``work`` returned."""
        with transaction(self.db):
            start = time.perf_counter()
            batches.touch(self.db, self.batch)
            done = work(self.rows)
        spent = time.perf_counter() - start  # the lock was held this long (commit included)
        # Raters come first: when the lock was busy, leave it free longer (up to twice the
        # chunk, then more); when nobody else writes, go back to the short pause.
        if last_begin_retries():  # another writer (a rater) held the lock
            self.pause = min(MAX_PAUSE_SECONDS, max(2 * spent, 1.5 * self.pause))
        else:
            self.pause = max(PAUSE_SECONDS, self.pause / 2)
        # Aim the next chunk at the target time: shrink at once, at most double.
        target = CHUNK_SECONDS if self.pause > PAUSE_SECONDS else IDLE_CHUNK_SECONDS
        aim = self.rows * target / max(spent, 1e-4)
        self.rows = int(min(max(min(aim, self.rows * 2), MIN_ROWS), MAX_ROWS))
        time.sleep(self.pause)
        return done


@dataclass(slots=True)
class Written:
    """Rows written to the batch, by what they did to the current value."""

    added: int = 0
    changed: int = 0
    unchanged: int = 0


def write_ratings(pacer: Pacer, study_id: int, *, compare: bool) -> Written:
    """Copy the staged rows into the batch as pending ratings (next revision of each key).

    With ``compare`` (the study may hold ratings already), a row equal to the current value
    is not written; added and changed are told apart from the current value, read in the
    same transaction as the write. Without it (a study this batch creates), every row is
    revision 1.
    """
    last = int(pacer.db.execute("SELECT COALESCE(MAX(seq), 0) FROM stage.s_rows")
               .fetchone()[0])
    return write_compared(pacer, study_id, last, compare, insert=_INSERT, revision=_NEXT,
                          staged="s.value", current=_CURRENT, source=_FROM)


def write_compared(pacer: Pacer, study_id: int, last: int, compare: bool, *, insert: str,
                   revision: str, staged: str, current: str, source: str,
                   then: str = "") -> Written:
    """Staged rows 1..``last`` into the batch by ``insert`` (a ``{revision}`` slot), a paced
    chunk at a time; ``then`` runs after each chunk. With ``compare``, the staged value
    ``staged`` is counted against the current one ``current`` (both SQL over ``source``),
    and only a row that differs is written, as revision ``revision``; without it every row
    is revision 1. Ratings, votes and rankings alike."""
    db, out = pacer.db, Written()
    counts = (f"SELECT COUNT(*), COALESCE(SUM(cur IS NULL), 0), COALESCE(SUM(cur = new), 0)"
              f" FROM (SELECT {staged} AS new, {current} AS cur{source}) AS c")

    def chunk(rows: int, lo: int) -> int:
        args = {"lo": lo, "hi": lo + rows, "study": study_id, "now": now(),
                "batch": pacer.batch.id}
        if compare:
            n, added, same = db.execute(counts, args).fetchone()
            out.added, out.unchanged = out.added + added, out.unchanged + same
            out.changed += n - added - same
            db.execute(insert.format(revision=revision)
                       + f" AND {current} IS DISTINCT FROM {staged}", args)
        else:
            out.added += db.execute(insert.format(revision=1), args).rowcount
        if then:
            db.execute(then, args)
        return rows

    walk(pacer, last, chunk)
    return out


def walk(pacer: Pacer, last: int, chunk: Callable[[int, int], int]) -> None:
    """Run ``chunk(rows, lo)`` over sequence numbers 1..``last`` in paced transactions."""
    lo = 1
    while lo <= last:
        def step(rows: int, start: int = lo) -> int:
            return chunk(rows, start)

        lo += pacer.run(step)


def create_raters(pacer: Pacer) -> int:
    """Create the staged raters that do not exist yet (no token); returns how many."""
    db = pacer.db

    def chunk(rows: int) -> int:
        first = batches.max_id(db, "raters")
        cur = db.execute("INSERT INTO main.raters (name, role, created_at) SELECT name, 'rater',"
                         " ? FROM stage.s_raters WHERE rater_id IS NULL AND name NOT IN (SELECT"
                         " name FROM main.raters) LIMIT ?", [now(), rows])
        batches.record(db, pacer.batch, "rater", first)
        return cur.rowcount

    return _until_done(pacer, chunk)


def create_targets(pacer: Pacer, *, benchmark: str | None) -> int:
    """Create the models, prompts and images the staged rows name and the study lacks;
    returns how many images were created."""
    db, batch = pacer.db, pacer.batch
    with transaction(db):
        first = batches.max_id(db, "models")
        db.execute("INSERT INTO main.models (study_id, name) SELECT ?, model FROM"
                   " stage.s_targets WHERE model NOT IN (SELECT name FROM main.models WHERE"
                   " study_id = ?) GROUP BY model ORDER BY MIN(first)",
                   [batch.study_id, batch.study_id])
        batches.record(db, batch, "model", first)
    _stage_new_prompts(db, batch.study_id)
    offset = db.execute("SELECT COUNT(*) FROM main.prompts WHERE study_id = ?",
                        [batch.study_id]).fetchone()[0]
    prompts = _Keyset(None)
    _until_done(pacer, lambda rows: _insert_prompts(db, batch, rows, benchmark, offset, prompts))
    images = _Keyset(0)
    return _until_done(pacer, lambda rows: _insert_images(db, batch, rows, images))


class _Keyset:
    """Where a paged walk over a stage table has got to."""

    def __init__(self, after: int | None) -> None:
        self.after = after  # the last sequence number done; None: none yet


def _stage_new_prompts(db: Database, study_id: int) -> None:
    """The prompts to create, in order of first appearance, with their dimension."""
    conn = db.conn
    with stage_writes(conn):
        create(db, "CREATE TABLE stage.s_new_prompts (n INTEGER PRIMARY KEY, key TEXT,"
               " dimension TEXT, text TEXT NOT NULL)")
        # The text a label import read with the prompt (``stage.s_texts``), else empty.
        conn.execute("INSERT INTO stage.s_new_prompts (key, dimension, text) SELECT prompt_id,"
                     " MAX(dimension), COALESCE((SELECT x.text FROM stage.s_texts x WHERE"
                     " x.key = prompt_id), '') FROM stage.s_targets WHERE prompt_id NOT IN (SELECT"
                     " key FROM main.prompts WHERE study_id = ?) GROUP BY prompt_id ORDER BY"
                     " MIN(first)", [study_id])


def _insert_prompts(db: Database, batch: Batch, rows: int, benchmark: str | None,
                    offset: int, at: _Keyset) -> int:
    lo = 1 if at.after is None else at.after + 1
    first = batches.max_id(db, "prompts")
    cur = db.execute(
        "INSERT INTO main.prompts (study_id, key, text, benchmark, dimension, meta, position,"
        " rank_set) SELECT :study, key, text, :bench, dimension, json_object('uid',"
        " substr(key, instr(key, '/') + 1)), :offset + n - 1, 1 FROM stage.s_new_prompts"
        " WHERE n >= :lo AND n < :lo + :rows ORDER BY n",
        {"study": batch.study_id, "bench": benchmark, "offset": offset, "lo": lo, "rows": rows})
    at.after = lo + rows - 1
    batches.record(db, batch, "prompt", first)
    return cur.rowcount


def _insert_images(db: Database, batch: Batch, rows: int, at: _Keyset) -> int:
    lo = (at.after or 0) + 1
    last = db.execute("SELECT COALESCE(MAX(n), 0) FROM stage.s_targets").fetchone()[0]
    if lo > last:
        return 0
    first = batches.max_id(db, "images")
    # The public id is 96 random bits, like the token_urlsafe(12) of manifest images.
    db.execute(
        "INSERT INTO main.images (study_id, prompt_id, model_id, sample, public_id)"
        " SELECT :s, p.id, m.id, t.sample, lower(hex(randomblob(12))) FROM stage.s_targets t"
        # CROSS JOIN keeps this chunk's targets the outer loop (else SQLite walks every
        # prompt of the study for each chunk)
        " CROSS JOIN main.prompts p CROSS JOIN main.models m WHERE p.study_id = :s AND"
        " p.key = t.prompt_id AND m.study_id = :s AND m.name = t.model"
        " AND t.image_id IS NULL AND t.n >= :lo AND t.n < :lo + :rows",
        {"s": batch.study_id, "lo": lo, "rows": rows})
    batches.record(db, batch, "image", first)
    at.after = lo + rows - 1
    return rows


def _until_done(pacer: Pacer, work: Callable[[int], int]) -> int:
    total = 0
    while True:
        done = pacer.run(work)
        total += done
        if done == 0:
            return total
