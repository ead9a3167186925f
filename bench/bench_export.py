"""Benchmark of the CSV / JSONL / Parquet export of 1,000,000 human ratings.

Design: 2,500 prompts × 8 models × 25 raters × 2 criteria (SC, PR) = 1,000,000 current
ratings on the {0, 0.5, 1, 2} scale, seeded straight into the store's tables with
``executemany`` inside one transaction (the import path is benchmarked separately), then
exported with ``services.labels.export_bytes`` — what ``python -m concord export`` runs.

Run from the repository root:  .venv/bin/python bench/bench_export.py [--prompts N] [--all]
Prints one table: format, seconds, rows/s, output MB, peak MB (tracemalloc, in a separate
run because tracing slows Python code down), and the process's max RSS.
``--all`` also times JSONL and Parquet (CSV only by default).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_dashboard import CRITERIA, MODELS, RATERS, setup_study
from concord.services.exports import labels
from concord.store import open_db, transaction
from concord.store.db import now


def seed(db, n_prompts: int, rng: np.random.Generator) -> int:
    """Fill one study with ratings; returns how many were written."""
    stamp = now()
    with transaction(db):
        cur = db.execute("INSERT INTO studies (name, protocol, rubric, settings, created_at)"
                         " VALUES ('bench', 'score', 'imagenhub-text-to-image', '{}', ?)",
                         [stamp])
        sid = cur.lastrowid
        setup_study(db, sid, n_prompts, stamp)
        ex = db.conn.executemany
        n_images = n_prompts * MODELS
        values = rng.choice([0.0, 0.5, 1.0, 2.0], size=(n_images, RATERS, len(CRITERIA)))
        seconds = rng.gamma(2.0, 4.0, size=(n_images, RATERS)).round(3)
        ex("INSERT INTO ratings (study_id, image_id, rater_id, criterion, value, revision,"
           " submission, action, seconds, created_at) VALUES (?, ?, ?, ?, ?, 1, ?, 'rate', ?, ?)",
           ((sid, i + 1, r + 1, c, float(values[i, r, k]), f"s{i}-{r}", float(seconds[i, r]),
             stamp)
            for i in range(n_images) for r in range(RATERS) for k, c in enumerate(CRITERIA)))
    return n_images * RATERS * len(CRITERIA)


def max_rss_mb() -> float:
    """The process's peak resident set size so far (MB; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(db, fmt: str) -> tuple[float, int, float]:
    """(seconds, output bytes, tracemalloc peak MB) of one export."""
    start = time.perf_counter()
    data = labels.export_bytes(db, "bench", fmt)
    seconds = time.perf_counter() - start
    size = len(data)
    del data
    tracemalloc.start()
    labels.export_bytes(db, "bench", fmt)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, size, peak


def main() -> None:
    """Seed, export, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=2500)
    ap.add_argument("--all", action="store_true", help="also JSONL and Parquet")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="concord-bench-") as tmp:
        db = open_db(Path(tmp) / "bench.db")
        start = time.perf_counter()
        n = seed(db, args.prompts, np.random.default_rng(0))
        seed_s = time.perf_counter() - start
        print(f"{n:,} ratings ({args.prompts} prompts × {MODELS} models × {RATERS} raters × "
              f"{len(CRITERIA)} criteria) seeded in {seed_s:.1f} s")
        print(f"{'format':<9}{'seconds':>9}{'rows/s':>11}{'output MB':>11}{'peak MB':>9}"
              f"{'max RSS MB':>12}")
        for fmt in ("csv", "jsonl", "parquet") if args.all else ("csv",):
            seconds, size, peak = run(db, fmt)
            print(f"{fmt:<9}{seconds:>9.2f}{n / seconds:>11,.0f}{size / 2**20:>11.1f}"
                  f"{peak:>9.0f}{max_rss_mb():>12.0f}")
        db.close()


if __name__ == "__main__":
    main()
