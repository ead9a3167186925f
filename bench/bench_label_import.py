"""Benchmark of ``import-pairs`` and ``import-rankings`` against ``import-ratings``.

The same number of label rows of each kind, imported into a new study in a fresh process
each (so peak RSS is its own), the three kinds interleaved round by round: the ratings
import (a tidy CSV: the baseline, the project's long-optimised path), arena-style votes
without prompt ids (every vote an item of its own: the heaviest layout, one prompt, two
images and one pair per vote) and rankings as one row per ranked image (8 models per
prompt). Ratios are taken within each round.

Run from the repository root:
    .venv/bin/python bench/bench_label_import.py [--rows N] [--rounds R]
Prints one table: kind, rows, median wall s, ratio to ratings (median and range of the
rounds), peak RSS MB.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import resource, sys, time
sys.path.insert(0, {root!r})
from concord.services.imports.ratings import import_ratings
from concord.store.db import open_db
db = open_db({db!r})
start = time.perf_counter()
import_ratings(db, "bench", {fmt!r}, __import__("pathlib").Path({path!r}))
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
MODELS = [f"model{m}" for m in range(8)]


def write_files(folder: Path, rows: int) -> dict[str, tuple[str, Path]]:
    """One file per kind, each ``rows`` label rows."""
    ratings, votes, ranks = (folder / n for n in ("r.csv", "v.jsonl", "k.csv"))
    with ratings.open("w") as f:
        f.write("prompt_id,model,rater,criterion,value\n")
        for i in range(rows):
            f.write(f"p{i // 40},{MODELS[i % 8]},rater{i // 8 % 5},likert,{i % 5 + 1}\n")
    with votes.open("w") as f:
        for i in range(rows):
            a, b = MODELS[i % 8], MODELS[(i * 3 + 1) % 8]
            b = b if b != a else MODELS[(i + 1) % 8]
            f.write(f'{{"model_a": "{a}", "model_b": "{b}", "winner": "{"ab"[i % 2]}", '
                    f'"judge": "u{i % 500}", "tstamp": {1.7e9 + i}}}\n')
    with ranks.open("w") as f:
        f.write("prompt_id,rater,model,rank\n")
        for i in range(rows):
            f.write(f"p{i // 40},r{i // 8 % 5},{MODELS[i % 8]},{(i * 5 + i // 8) % 8 + 1}\n")
    return {"ratings": ("csv", ratings), "votes": ("pairs", votes),
            "rankings": ("rankings", ranks)}


def run_one(fmt: str, path: Path, folder: Path) -> tuple[float, float]:
    db = folder / f"{fmt}-{time.monotonic_ns()}.db"
    code = CHILD.format(root=str(ROOT), db=str(db), fmt=fmt, path=str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = write_files(folder, args.rows)
        times: dict[str, list[float]] = {k: [] for k in files}
        peaks: dict[str, float] = dict.fromkeys(files, 0.0)
        for r in range(args.rounds):
            order = list(files)[r % 3:] + list(files)[:r % 3]  # rotate who goes first
            for kind in order:
                wall, rss = run_one(*files[kind], folder)
                times[kind].append(wall)
                peaks[kind] = max(peaks[kind], rss)
        print(f"{'kind':<10} {'rows':>9} {'wall s':>8} {'ratio':>6} {'range':>13} "
              f"{'peak MB':>8}")
        for kind in files:
            ratios = [t / b for t, b in zip(times[kind], times["ratings"], strict=True)]
            print(f"{kind:<10} {args.rows:>9,} {statistics.median(times[kind]):>8.2f} "
                  f"{statistics.median(ratios):>6.2f} {min(ratios):>6.2f}–{max(ratios):<6.2f} "
                  f"{peaks[kind]:>8.0f}")


if __name__ == "__main__":
    main()
