"""Many raters submitting at once through the service layer (used by a test and a bench).

Each simulated rater runs in its own thread with its own connection, asks for its next
image, (optionally) thinks for a while like a person, submits, and now and then replays
the same submission (a double click) or sends a second, fresh submission for the same
image (a second tab). Afterwards the database
must hold exactly one current rating per (image, rater, criterion) the raters were told
was stored, and no image may have more raters than the study asks for.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from concord.services import common, rating
from concord.store import ratings as rating_store
from concord.store.db import open_db


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
    latencies: list[float] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Pace:
    """How a simulated rater works: ``think`` seconds per item on average (exponential,
    0 = as fast as possible), stopping at ``until`` (monotonic) or when ``stop()``."""

    until: float
    think: float = 0.0
    stop: Callable[[], bool] = lambda: False


def _think(rng: random.Random, pace: Pace) -> bool:
    """Wait like a person looking at the image (in short steps, so a stop is seen);
    False when the run ended meanwhile (the rater leaves without submitting)."""
    if pace.think <= 0:
        return True
    end = time.monotonic() + rng.expovariate(1.0 / pace.think)
    while time.monotonic() < end:
        if pace.stop() or time.monotonic() >= pace.until:
            return False
        time.sleep(min(0.2, max(end - time.monotonic(), 0)))
    return True


def _rater_loop(db_path: Path, study: str, rater_id: int, criteria: list[str],
                scale: list[float], pace: Pace, seed: int, out: LoadResult,
                lock: threading.Lock) -> None:
    rng = random.Random(seed)
    db = open_db(db_path, migrate=False)
    try:
        while time.monotonic() < pace.until and not pace.stop():
            item = rating.next_item(db, study, rater_id)
            if item is None:
                return
            if not _think(rng, pace):
                return
            values = {c: rng.choice(scale) for c in criteria}
            t0 = time.perf_counter()
            res = rating.submit(db, study, rater_id, item.image_id, values,
                                submission=item.submission)
            with lock:
                out.latencies.append(time.perf_counter() - t0)
            replays = [item.submission] if rng.random() < 0.3 else []
            if rng.random() < 0.2:
                replays.append(common.new_submission())  # a second tab
            again = [rating.submit(db, study, rater_id, item.image_id, values, submission=s)
                     for s in replays]
            with lock:
                out.stored += res.stored
                out.replays += len(again)
                out.replays_stored += sum(a.stored for a in again)
                if res.stored:
                    out.expected_keys.update((item.image_id, rater_id, c) for c in criteria)
    except Exception as exc:  # every failure is counted; the checks require none
        with lock:
            out.errors.append(f"rater {rater_id}: {type(exc).__name__}: {exc}")
    finally:
        db.close()


def run(db_path: Path, study: str, rater_ids: list[int], seconds: float, *,
        think: float = 0.0, stop: Callable[[], bool] | None = None) -> LoadResult:
    """Run one thread per rater for ``seconds`` (or until ``stop()``), then check the
    database. ``think``: mean seconds a rater looks at an image before submitting."""
    db = open_db(db_path)
    rubric = rating.study_rubric(db, study, rater_ids[0])
    criteria = [c.key for c in rubric.criteria]
    scale = list(rubric.criteria[0].values)
    out, lock = LoadResult(), threading.Lock()
    pace = Pace(time.monotonic() + seconds, think, stop or (lambda: False))
    threads = [threading.Thread(target=_rater_loop, args=(db_path, study, r, criteria, scale,
                                                         pace, i, out, lock))
               for i, r in enumerate(rater_ids)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.seconds = time.monotonic() - start
    _check(db, out)
    db.close()
    return out


def _check(db, out: LoadResult) -> None:
    rows = rating_store.current_rating_keys(db)
    keys = set(rows)
    out.current_rows = len(rows)
    out.duplicate_keys = len(rows) - len(keys)
    out.missing_keys = len(out.expected_keys - keys) + len(keys - out.expected_keys)
    out.max_raters_per_image = rating_store.max_raters_per_image(db)
