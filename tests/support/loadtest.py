"""Many raters submitting at once through the service layer (used by a test and a bench).

Each simulated rater runs in its own thread with its own connection, asks for its next
image, submits, and now and then replays the same submission (a double click) or sends
a second, fresh submission for the same image (a second tab). Afterwards the database
must hold exactly one current rating per (image, rater, criterion) the raters were told
was stored, and no image may have more raters than the study asks for.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concord.services.labelling import common, rating
from concord.store import engine
from concord.store import ratings as rating_store
from concord.store import studies as study_store
from concord.store.db import Database, open_db


@dataclass
class LoadResult:
    """What the raters did and what the database holds afterwards."""

    stored: int = 0
    replays: int = 0
    replays_stored: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    current_rows: int = 0
    duplicate_keys: int = 0
    max_raters_per_image: int = 0
    expected_keys: set[tuple[int, int, str]] = field(default_factory=set)
    missing_keys: int = 0
    waits: list[float] = field(default_factory=list)  # seconds each write call took

    def wait_quantile(self, q: float) -> float:
        """A quantile of the submit times (0 when there were none)."""
        ordered = sorted(self.waits)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass(frozen=True)
class _Loop:
    """What one simulated rater does, and until when."""

    db_path: Path | str  # a SQLite file, or a PostgreSQL URL
    study: str
    criteria: list[str]
    scale: list[float]
    until: float
    stop: threading.Event
    think: tuple[float, float] = (0.0, 0.0)  # seconds a rater looks at an image, low-high


def _rater_loop(loop: _Loop, rater_id: int, seed: int, out: LoadResult,
                lock: threading.Lock) -> None:
    rng, study = random.Random(seed), loop.study
    # SQLite: one connection per rater for the run. PostgreSQL: a connection borrowed from
    # this process's pool for each step, as an app script run does (the pool holds
    # POOL_MAX connections, fewer than the raters).
    held = None if engine.is_url(loop.db_path) else open_db(loop.db_path, migrate=False)
    try:
        # Raters with something to look at do not all click in the same millisecond.
        if loop.think[1] and loop.stop.wait(rng.uniform(0, loop.think[1])):
            return
        while time.monotonic() < loop.until and not loop.stop.is_set():
            start = time.perf_counter()
            with _borrow(loop.db_path, held) as db:
                item = rating.next_item(db, study, rater_id)
            waits = [time.perf_counter() - start]
            if item is None:
                return
            values = {c: rng.choice(loop.scale) for c in loop.criteria}
            if loop.think[1] and loop.stop.wait(rng.uniform(*loop.think)):
                return
            replays = [item.submission] if rng.random() < 0.3 else []
            if rng.random() < 0.2:
                replays.append(common.new_submission())  # a second tab
            with _borrow(loop.db_path, held) as db:
                res, *again = [_timed(waits, rating.submit, db, study, rater_id,
                                      item.image_id, values, submission=s)
                               for s in [item.submission, *replays]]
            with lock:
                out.waits.extend(waits)
                out.stored += res.stored
                out.replays += len(again)
                out.replays_stored += sum(a.stored for a in again)
                if res.stored:
                    out.expected_keys.update((item.image_id, rater_id, c) for c in loop.criteria)
    except Exception as exc:  # every failure is counted; the checks require none
        with lock:
            out.errors.append(f"rater {rater_id}: {type(exc).__name__}: {exc}")
    finally:
        if held is not None:
            held.close()


@contextlib.contextmanager
def _borrow(target: Path | str, held: Database | None) -> Iterator[Database]:
    """``held`` (SQLite), or a connection opened for one step and given back (PostgreSQL)."""
    if held is not None:
        yield held
        return
    db = open_db(target, migrate=False)
    try:
        yield db
    finally:
        db.close()


def _timed(waits: list[float], fn: Any, *args: Any, **kw: Any) -> Any:
    start = time.perf_counter()
    try:
        return fn(*args, **kw)
    finally:
        waits.append(time.perf_counter() - start)


def run(db_path: Path | str, study: str, rater_ids: list[int], seconds: float,
        stop: threading.Event | None = None,
        think: tuple[float, float] = (0.0, 0.0)) -> LoadResult:
    """Run one thread per rater for ``seconds`` (or until ``stop`` is set), then check the
    study's ratings (``db_path``: a SQLite file or a PostgreSQL URL). Each rater spends
    ``think`` (low, high) seconds on an image before submitting (0: as fast as possible)."""
    db = open_db(db_path)
    rubric = rating.study_rubric(db, study, rater_ids[0])
    loop = _Loop(db_path, study, [c.key for c in rubric.criteria],
                 list(rubric.criteria[0].values), time.monotonic() + seconds,
                 stop or threading.Event(), think)
    out, lock = LoadResult(), threading.Lock()
    threads = [threading.Thread(target=_rater_loop, args=(loop, r, i, out, lock))
               for i, r in enumerate(rater_ids)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.seconds = time.monotonic() - start
    _check(db, out, study_store.get_study(db, study).id)
    db.close()
    return out


def _check(db, out: LoadResult, study_id: int) -> None:
    rows = rating_store.current_rating_keys(db, study_id)
    keys = set(rows)
    out.current_rows = len(rows)
    out.duplicate_keys = len(rows) - len(keys)
    out.missing_keys = len(out.expected_keys - keys) + len(keys - out.expected_keys)
    # From the keys rather than rating_store.max_raters_per_image, whose subquery has no
    # alias (PostgreSQL refuses it; reported to the store's owner).
    raters: dict[int, set[int]] = {}
    for image_id, rater_id, _ in keys:
        raters.setdefault(image_id, set()).add(rater_id)
    out.max_raters_per_image = max((len(r) for r in raters.values()), default=0)
