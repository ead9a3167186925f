"""A/B benchmark of a 1,000,000-rating report: this tree against another checkout.

Two cases, each run alternately with the code of this tree (B) and of ``--base`` (A, e.g.
``git worktree add /tmp/base <commit>`` or ``git archive <commit> | tar -x -C /tmp/base``
with a ``.venv`` link), every run a fresh interpreter, so a change in the machine's load
weighs on both alike:

* ``full_report``: ``bench/bench_stats.py``'s frames (2,500 prompts × 8 models × 25 raters
  × SC/PR, O derived, 100,000 ranking rows, 2 metrics), ratings + rankings + scores,
  1,000 resamples and permutations; the time of the call alone (the frames are built
  before the clock starts);
* ``stats --json --no-cache``: ``bench/bench_dashboard.py``'s seeded 1,000,000-rating
  database, the whole command (interpreter, read, statistics, JSON);
* ``stats --json`` from the report cache: the same database and command, the report read
  back from the cache (each tree stores its own entry, keyed by its code, in a run before
  the timed ones): the request's resolution, the fingerprint and the JSON.

Prints, per case, every time of both trees, their medians and the ratio B / A of the
medians. Run from the repository root:

    .venv/bin/python bench/bench_report_ab.py --base /tmp/base [--rounds 3] [--prompts N]
        [--skip-cli | --skip-report]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[1]
TIMED = """
import sys, time
sys.path.insert(0, "bench")
from bench_stats import make_frames
from concord.stats import IMAGENHUB_O, full_report
ratings, scores, rankings = make_frames({prompts})
start = time.perf_counter()
full_report(ratings, rankings, scores, n_boot=1000, n_perm=1000, derived=[IMAGENHUB_O])
print(time.perf_counter() - start)
"""


def report_seconds(tree: Path, prompts: int) -> float:
    """``full_report`` of the bench frames, timed inside a fresh interpreter of ``tree``."""
    done = subprocess.run([sys.executable, "-c", TIMED.format(prompts=prompts)], cwd=tree,
                          capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def cli_seconds(tree: Path, db_path: Path, *, cached: bool = False) -> float:
    """Wall time of ``stats --json`` (``--no-cache`` unless ``cached``) run with the code of
    ``tree``."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "concord", "--db", str(db_path), "stats",
                    "--study", "bench", "--json", *(() if cached else ("--no-cache",))],
                   cwd=tree, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="checkout of the baseline")
    ap.add_argument("--rounds", type=int, default=3, help="runs per tree and case")
    ap.add_argument("--prompts", type=int, default=2500)
    ap.add_argument("--skip-cli", action="store_true", help="only the full_report case")
    ap.add_argument("--skip-report", action="store_true", help="only the stats cases")
    args = ap.parse_args()
    trees = {"A (base)": args.base.resolve(), "B (this tree)": ROOT}
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cases = {} if args.skip_report else {
            "full_report": lambda t: report_seconds(t, args.prompts)}
        if not args.skip_cli:
            from bench.bench_dashboard import seeded_db

            db_path, n, _ = seeded_db(Path(tmp), args.prompts)
            cases[f"stats --json --no-cache ({n:,} ratings)"] = (
                lambda t: cli_seconds(t, db_path))
            for tree in trees.values():  # each tree's entry, stored before the timed runs
                cli_seconds(tree, db_path, cached=True)
            cases[f"stats --json, report cache ({n:,} ratings)"] = (
                lambda t: cli_seconds(t, db_path, cached=True))
        for _ in range(args.rounds):
            for case, run in cases.items():
                for name, tree in trees.items():   # alternate A and B within each round
                    times.setdefault((case, name), []).append(run(tree))
    print(f"{'case':<44} {'tree':<14} {'runs (s)':<28} {'median':>7} {'B / A':>6}")
    for case in cases:
        med = {name: statistics.median(times[(case, name)]) for name in trees}
        for name in trees:
            runs = ", ".join(f"{t:.2f}" for t in times[(case, name)])
            ratio = f"{med[name] / med['A (base)']:.2f}" if name != "A (base)" else ""
            print(f"{case:<44} {name:<14} {runs:<28} {med[name]:>7.2f} {ratio:>6}")


if __name__ == "__main__":
    main()
