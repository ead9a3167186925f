"""20 raters submitting concurrently for a minute through the service layer.

Counts acknowledged ratings, replays (double clicks, second tabs), errors, and checks
the database afterwards: zero lost, zero duplicated, no image over its k raters.
Re-run: `.venv/bin/python bench/bench_concurrency.py [--seconds 60] [--raters 20]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from concord import loadtest  # noqa: E402
from concord.services import studies  # noqa: E402
from concord.store.db import open_db  # noqa: E402
from concord.store.raters import rater_for_token  # noqa: E402
from tests.helpers import make_folder_study  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--raters", type=int, default=20)
    parser.add_argument("--prompts", type=int, default=2500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t0 = time.perf_counter()
        manifest = make_folder_study(tmp / "load", prompts=args.prompts, models=("a", "b"), k=3)
        db_path = tmp / "load.db"
        db = open_db(db_path)
        studies.import_manifest(db, manifest)
        invites = studies.invite(db, "load", [f"r{i:02d}" for i in range(args.raters)], "x")
        ids = [rater_for_token(db, i.url.split("token=")[1]).id for i in invites]
        print(f"study of {2 * args.prompts} images ready in {time.perf_counter() - t0:.0f} s")
        r = loadtest.run(db_path, "load", ids, seconds=args.seconds)
    print("\n| measure | value |\n|---|---|")
    rows = [("raters (threads, one connection each)", args.raters),
            ("seconds", f"{r.seconds:.1f}"),
            ("ratings acknowledged (stored=True)", r.stored),
            ("submits per second", f"{r.stored / r.seconds:.0f}"),
            ("replayed submits (double click / second tab)", r.replays),
            ("replays that stored anything", r.replays_stored),
            ("errors (incl. database locked)", len(r.errors)),
            ("current rating rows / expected", f"{r.current_rows} / {2 * r.stored}"),
            ("lost or unexpected (image, rater, criterion) keys", r.missing_keys),
            ("duplicated keys", r.duplicate_keys),
            ("max raters on one image (k = 3)", r.max_raters_per_image)]
    for name, value in rows:
        print(f"| {name} | {value} |")
    if r.errors:
        print("\n".join(r.errors[:10]))


if __name__ == "__main__":
    main()
