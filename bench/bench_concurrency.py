"""Raters submitting concurrently through the service layer, alone or during a big import.

Counts acknowledged ratings, replays (double clicks, second tabs), errors, and checks
the database afterwards: zero lost, zero duplicated, no image over its k raters. With
``--import-rows N``, a ``python -m concord import-ratings`` of an N-row CSV (a new study)
runs in another process meanwhile and the raters work until it has finished; the table
then shows how long each rater write (next item, submit) took: p50 / p99 / max.
Re-run: `.venv/bin/python bench/bench_concurrency.py [--seconds 60] [--raters 20]`
        `.venv/bin/python bench/bench_concurrency.py --raters 100 --import-rows 1000000`
``--engine postgresql`` runs the same on a throw-away PostgreSQL server
(tests/support/pg_server.py; the raters alone on a copy of the database made with
``CREATE DATABASE … TEMPLATE``).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_ratings_import import write_valid  # noqa: E402
from concord.services import studies  # noqa: E402
from concord.store.db import open_db  # noqa: E402
from concord.store.raters import rater_for_token  # noqa: E402
from tests.helpers import make_folder_study  # noqa: E402
from tests.support import loadtest  # noqa: E402


def _import_alongside(db_path: Path, csv: Path, stop: threading.Event) -> dict:
    """Start the import in another process; ``stop`` is set when it ends."""
    out: dict = {}

    def run() -> None:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "concord", "--db", str(db_path),
                               "import-ratings", "--study", "imported", "--format", "csv",
                               str(csv)], cwd=ROOT, capture_output=True, text=True)
        out.update(seconds=time.perf_counter() - start, rc=proc.returncode,
                   err=proc.stderr.strip()[-300:])
        stop.set()

    threading.Thread(target=run, daemon=True).start()
    return out


def _waits(r: loadtest.LoadResult) -> str:
    return (f"{1000 * r.wait_quantile(0.5):.0f} / {1000 * r.wait_quantile(0.99):.0f} / "
            f"{1000 * max(r.waits, default=0):.0f}")


@contextlib.contextmanager
def _server(engine: str):
    """A throw-away PostgreSQL server for ``--engine postgresql`` (None for SQLite)."""
    if engine == "sqlite":
        yield None
        return
    from tests.support.pg_server import PgServer

    with PgServer(port=5497) as server:
        yield server


def _copy(server, db_path, tmp: Path):
    if server is None:
        shutil.copy(db_path, tmp / "alone.db")
        return tmp / "alone.db"
    from concord.store import pg

    pg.close_pools()  # a template database must have no connections
    with server.admin() as conn:
        conn.execute("CREATE DATABASE alone TEMPLATE load")
    return server.url("alone")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--raters", type=int, default=20)
    parser.add_argument("--prompts", type=int, default=2500)
    parser.add_argument("--import-rows", type=int, default=0)
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--think", default=None, metavar="LOW,HIGH",
                        help="seconds a rater spends on an image (default 0,0; 3,8 with "
                             "--import-rows)")
    args = parser.parse_args()
    think = tuple(float(x) for x in (args.think or ("3,8" if args.import_rows else "0,0"))
                  .split(","))
    with tempfile.TemporaryDirectory() as d, _server(args.engine) as server:
        tmp = Path(d)
        t0 = time.perf_counter()
        manifest = make_folder_study(tmp / "load", prompts=args.prompts, models=("a", "b"), k=3)
        db_path = server.create_database("load") if server else tmp / "load.db"
        db = open_db(db_path)
        studies.import_manifest(db, manifest)
        invites = studies.invite(db, "load", [f"r{i:02d}" for i in range(args.raters)], "x")
        ids = [rater_for_token(db, i.url.split("token=")[1]).id for i in invites]
        stop, imported, alone = threading.Event(), {}, None
        if args.import_rows:
            rows = write_valid(tmp / "import.csv", args.import_rows)
            db.close()
            alone_at = _copy(server, db_path, tmp)  # the same study for the raters alone
            db = open_db(db_path)
        print(f"study of {2 * args.prompts} images ready in {time.perf_counter() - t0:.0f} s")
        if args.import_rows:
            imported = _import_alongside(db_path, tmp / "import.csv", stop)
        r = loadtest.run(db_path, "load", ids,
                         seconds=3600 if args.import_rows else args.seconds, stop=stop,
                         think=think)
        if args.import_rows:
            stop.wait()  # the raters may run out of images first
            count = db.execute("SELECT COUNT(*) FROM current_ratings c JOIN studies s ON"
                               " s.id = c.study_id WHERE s.name = 'imported'").fetchone()[0]
            alone = loadtest.run(alone_at, "load", ids, seconds=r.seconds, think=think)
    print("\n| measure | value |\n|---|---|")
    table = [("engine", args.engine), ("raters (threads, one connection each)", args.raters),
             ("seconds a rater spends on an image", f"{think[0]:g}–{think[1]:g}"),
             ("seconds", f"{r.seconds:.1f}")]
    if args.import_rows:
        table += [("import rows / seconds / rows per s",
                   f"{rows:,} / {imported['seconds']:.1f} / {rows / imported['seconds']:,.0f}"),
                  ("import exit code, rows visible after it", f"{imported['rc']}, {count:,}")]
    table += [("ratings acknowledged (stored=True)", r.stored),
              ("submits per second", f"{r.stored / r.seconds:.0f}"),
              ("rater writes timed (next item + submits)", len(r.waits)),
              ("write wait p50 / p99 / max (ms)", _waits(r))]
    if alone is not None:
        table += [("same raters without the import: p50 / p99 / max (ms)", _waits(alone))]
    table += [("replayed submits (double click / second tab)", r.replays),
              ("replays that stored anything", r.replays_stored),
              ("errors (incl. database locked)", len(r.errors)),
              ("current rating rows / expected", f"{r.current_rows} / {2 * r.stored}"),
              ("lost or unexpected (image, rater, criterion) keys", r.missing_keys),
              ("duplicated keys", r.duplicate_keys),
              ("max raters on one image (k = 3)", r.max_raters_per_image)]
    for name, value in table:
        print(f"| {name} | {value} |")
    if r.errors or imported.get("rc"):
        print("\n".join(r.errors[:10]), imported.get("err", ""))


if __name__ == "__main__":
    main()
