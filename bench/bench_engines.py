"""SQLite against PostgreSQL on the same work, interleaved, each step a fresh process.

Steps, each run ``--rounds`` times per engine, alternating engines:

* ``import-ratings`` of an N-row CSV (bench_ratings_import's rows: 4 models × 5 raters ×
  SC/PR per prompt) into a new study — the staged import, written in chunks;
* ``stats --json --no-cache`` of that study — every rating read back, the whole report;
* ``migrate-db`` of the database to the other engine (SQLite → PostgreSQL, and back);
* one rater's next item + submit, 100 times, through the service layer, one connection
  per step as the app's page runs have (median ms per step).

PostgreSQL runs on a throw-away server on this machine (tests/support/pg_server.py, fsync
on); on a shared 2-core machine the server competes with the client for the cores, which
a separate database host would not. Prints each time and the ratio PostgreSQL / SQLite of
the medians. Run from the repository root:

    .venv/bin/python bench/bench_engines.py [--rows 200000] [--rounds 3]
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
sys.path.insert(0, str(ROOT))

from bench.bench_ratings_import import write_valid  # noqa: E402

LOOP = """
import statistics, sys, time
from concord.services import studies
from concord.services.labelling import rating
from concord.store.db import open_db
from concord.store.raters import rater_for_token
from tests.helpers import make_folder_study
where, root = sys.argv[1], sys.argv[2]
db = open_db(where)
studies.import_manifest(db, make_folder_study(__import__("pathlib").Path(root) / "loop",
                        prompts=60, models=("a", "b"), k=3))
rid = rater_for_token(db, studies.invite(db, "loop", ["r"], "x")[0].url.split("=")[1]).id
db.close()
steps = []
for _ in range(100):
    start = time.perf_counter()
    db = open_db(where)
    item = rating.next_item(db, "loop", rid)
    rating.submit(db, "loop", rid, item.image_id, {"SC": 1, "PR": 1}, submission=item.submission)
    db.close()
    steps.append(time.perf_counter() - start)
print(statistics.median(steps))
"""


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "concord", *argv], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(argv[:4])}: {done.stderr.strip()[-400:]}")
    return time.perf_counter() - start


def _loop(where: str, root: Path) -> float:
    done = subprocess.run([sys.executable, "-c", LOOP, where, str(root)], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the rater loop failed: {done.stderr.strip()[-600:]}")
    return 1000 * float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from tests.support.pg_server import PgServer

    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as d, PgServer(port=5496) as server:
        tmp = Path(d)
        csv = tmp / "ratings.csv"
        rows = write_valid(csv, args.rows)
        for n in range(args.rounds):
            for engine in ("sqlite", "postgresql"):
                where = (str(tmp / f"r{n}.db") if engine == "sqlite"
                         else server.create_database(f"r{n}"))
                other = (server.create_database(f"c{n}") if engine == "sqlite"
                         else str(tmp / f"c{n}.db"))
                add = times.setdefault
                add(("import-ratings", engine), []).append(_timed(
                    ["--db", where, "import-ratings", "--study", "big", "--format", "csv",
                     str(csv)]))
                add(("stats --json --no-cache", engine), []).append(_timed(
                    ["--db", where, "stats", "--study", "big", "--json", "--no-cache",
                     "--n-boot", "200", "--n-perm", "200"]))
                add(("migrate-db to the other engine", engine), []).append(_timed(
                    ["migrate-db", "--from", where, "--to", other]))
                add(("next item + submit (ms, median of 100)", engine), []).append(
                    _loop(where, tmp / f"loop-{engine}-{n}"))
    print(f"\n{rows:,} rating rows; {args.rounds} rounds, engines alternating\n")
    print("| step | SQLite | PostgreSQL | ratio PG / SQLite (medians) |\n|---|---|---|---|")
    for step in dict.fromkeys(s for s, _ in times):
        lite, post = times[step, "sqlite"], times[step, "postgresql"]
        unit = "" if step.startswith("next") else " s"
        print(f"| {step} | {' / '.join(f'{t:.2f}' for t in lite)}{unit} | "
              f"{' / '.join(f'{t:.2f}' for t in post)}{unit} | "
              f"{statistics.median(post) / statistics.median(lite):.2f} |")


if __name__ == "__main__":
    main()
