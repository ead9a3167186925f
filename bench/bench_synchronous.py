"""What durable commits cost: a rater's submit with ``synchronous = NORMAL`` vs ``FULL`` (WAL).

Concord opens its database with ``synchronous = FULL`` so that a rating the page reported
as saved survives a power cut (NORMAL may lose the last commits: the WAL is only fsynced
at checkpoints). This bench measures the price: one rater rating N images through the
service layer (next item + submit, two transactions), and the bare commit of one rating
row, under each setting, on the disk that holds ``--dir`` (default: the repository's
``data/``, where the real database lives).
Re-run: `.venv/bin/python bench/bench_synchronous.py [--ratings 300] [--dir data]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from concord.services import studies  # noqa: E402
from concord.services.labelling import rating  # noqa: E402
from concord.services.labelling.common import new_submission  # noqa: E402
from concord.store.db import open_db, transaction  # noqa: E402
from concord.store.raters import rater_for_token  # noqa: E402
from tests.helpers import make_folder_study  # noqa: E402


def _rater_loop(db_path: Path, mode: str, n: int) -> list[float]:
    """Seconds per (next item + submit) of one rater, under ``mode``."""
    db = open_db(db_path)
    db.execute(f"PRAGMA synchronous = {mode}")
    [inv] = studies.invite(db, "sync", [f"r-{mode}"], "x")
    rid = rater_for_token(db, inv.url.split("token=")[1]).id
    times = []
    for _ in range(n):
        start = time.perf_counter()
        item = rating.next_item(db, "sync", rid)
        rating.submit(db, "sync", rid, item.image_id, {"SC": 1, "PR": 1},
                      submission=new_submission())
        times.append(time.perf_counter() - start)
    db.close()
    return times


def _bare_commits(db_path: Path, mode: str, n: int) -> list[float]:
    """Seconds per one-row INSERT + COMMIT, under ``mode``."""
    db = open_db(db_path)
    db.execute(f"PRAGMA synchronous = {mode}")
    times = []
    for i in range(n):
        start = time.perf_counter()
        with transaction(db):
            db.execute("INSERT INTO audit_log (at, actor, action) VALUES (?, 'bench', ?)",
                       [str(i), mode])
        times.append(time.perf_counter() - start)
    db.close()
    return times


def _row(what: str, mode: str, times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    p99 = ms[min(len(ms) - 1, int(0.99 * len(ms)))]
    return (f"| {what} | {mode} | {statistics.median(ms):.2f} | {p99:.2f} | "
            f"{len(ms) / sum(times):.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ratings", type=int, default=300)
    parser.add_argument("--dir", type=Path, default=ROOT / "data")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        tmp = Path(d)
        # enough images for three raters (k = 3) to rate args.ratings each
        manifest = make_folder_study(tmp / "sync", prompts=args.ratings // 2 + 20,
                                     models=("a", "b"), k=3)
        db_path = tmp / "sync.db"
        studies.import_manifest(open_db(db_path), manifest)
        print(f"disk of {args.dir.resolve()}; {args.ratings} submits and commits per setting")
        print("\n| operation | synchronous | median ms | p99 ms | per second |")
        print("|---|---|---|---|---|")
        _rater_loop(db_path, "OFF", 20)  # warm-up: caches and the first WAL pages
        for mode in ("NORMAL", "FULL"):
            print(_row("rater: next item + submit", mode, _rater_loop(db_path, mode,
                                                                    args.ratings)))
        for mode in ("NORMAL", "FULL"):
            print(_row("bare commit of one row", mode, _bare_commits(db_path, mode,
                                                                     args.ratings)))


if __name__ == "__main__":
    main()
