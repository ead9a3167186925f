"""Benchmark of ``python -m concord`` start-up: help, commands that fail on their input,
and ``stats --json`` over 1,000,000 ratings end to end.

Each case is a fresh interpreter (``subprocess``), wall time from start to exit, best of
``--repeat`` runs (the machine is shared: the best run is the one least disturbed):

* ``--help``: the parser only (no command module is imported).
* failing commands: ``stats`` / ``export`` / ``raters add`` of a study that does not exist,
  ``import`` / ``import-ratings`` / ``import-scores`` (CSV and TIIF) of a file that does
  not exist, and ``score`` with an unknown metric; each must exit 1 with one line on
  stderr.
* ``stats --json``: the study of ``bench/bench_dashboard.py`` (2,500 prompts × 8 models ×
  25 raters × 2 criteria = 1,000,000 ratings, two metrics), seeded into a fresh database;
  computed (``--no-cache``), then served from the report cache of an unchanged database
  (one run fills it first).
* the floor under any computed report on this machine: an interpreter importing pandas
  and scipy.stats (what every statistic needs) and nothing else, and ``stats --json
  --no-cache`` of a study of ``--small-prompts`` prompts (3,200 ratings by default).

Run from the repository root:  .venv/bin/python bench/bench_cli_startup.py [--prompts N]
Targets (issue 14): --help ≤ 0.3 s, a failing command ≤ 0.5 s, stats --json < 3 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[1]

FAILING = (
    ("stats", "--study", "nope"),
    ("export", "--study", "nope"),
    ("raters", "add", "--study", "nope", "someone"),
    ("import", "missing/study.yaml"),
    ("import-ratings", "--study", "x", "--format", "csv", "missing.csv"),
    ("import-scores", "--study", "x", "--format", "csv", "missing.csv"),
    ("import-scores", "--study", "x", "--format", "tiif", "missing.jsonl"),
    ("score", "--study", "x", "--metric", "nope"),
)


def best_of(argv: list[str], repeat: int, expect: int) -> float:
    """The shortest wall time of ``python -m concord ARGV`` over ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "concord", *argv], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != expect:
            raise RuntimeError(f"{argv}: exit {done.returncode}, expected {expect}: "
                               f"{done.stderr[-500:]}")
    return min(times)


def best_imports(repeat: int) -> float:
    """The shortest wall time of an interpreter that imports pandas and scipy.stats."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import pandas, scipy.stats"], cwd=ROOT,
                       check=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    """Seed the 1 M-rating database, time every case, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=2500, help="prompts of the stats study")
    ap.add_argument("--small-prompts", type=int, default=8,
                    help="prompts of the small study whose computed report is the floor")
    ap.add_argument("--repeat", type=int, default=5, help="runs per case (best is shown)")
    args = ap.parse_args()

    from bench.bench_dashboard import seeded_db

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        empty = str(Path(tmp) / "empty.db")
        rows.append(("--help", best_of(["--help"], args.repeat, 0), 0.3))
        for argv in FAILING:
            rows.append((" ".join(argv), best_of(["--db", empty, *argv], args.repeat, 1), 0.5))
        rows.append(("floor: python -c 'import pandas, scipy.stats'",
                     best_imports(args.repeat), 3.0))
        small, n_small, _ = seeded_db(Path(tmp), args.small_prompts)
        rows.append((f"floor: stats --json --no-cache ({n_small:,} ratings, computed)",
                     best_of(["--db", str(small), "stats", "--study", "bench", "--json",
                              "--no-cache"], args.repeat, 0), 3.0))
        path, n, _ = seeded_db(Path(tmp), args.prompts)
        bad = ["--db", str(path), "stats", "--study", "bench", "--dimension", "nope"]
        rows.append((f"stats --dimension nope ({n:,} ratings)",
                     best_of(bad, args.repeat, 1), 0.5))
        argv = ["--db", str(path), "stats", "--study", "bench", "--json"]
        rows.append((f"stats --json --no-cache ({n:,} ratings, computed)",
                     best_of([*argv, "--no-cache"], args.repeat, 0), 3.0))
        best_of(argv, 1, 0)  # computes and stores the report
        rows.append((f"stats --json ({n:,} ratings, unchanged: report cache)",
                     best_of(argv, args.repeat, 0), 3.0))
    width = max(len(r[0]) for r in rows)
    print(f"{'command':<{width}}  best of {args.repeat} (s)  target (s)")
    for name, seconds, target in rows:
        mark = "" if seconds <= target else "  over"
        print(f"{name:<{width}}  {seconds:>14.3f}  {target:>10.1f}{mark}")


if __name__ == "__main__":
    main()
