"""Backup and restore of a study with --ratings rating rows, and a rater's submit meanwhile.

A rater keeps submitting on their own connection while `backup` copies the database; the
table shows how long a backup and a restore take and whether the rater waited.
Re-run: `.venv/bin/python bench/bench_backup.py [--ratings 100000]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from concord.services import studies  # noqa: E402
from concord.services.labelling import rating  # noqa: E402
from concord.services.labelling.common import new_submission  # noqa: E402
from concord.store import backup as backup_store  # noqa: E402
from concord.store.db import open_db  # noqa: E402
from concord.store.raters import ensure_rater, rater_for_token  # noqa: E402
from tests.helpers import make_folder_study  # noqa: E402


def _seed(path: Path, tmp: Path, n_ratings: int) -> None:
    """A study of 1,000 images whose ratings are inserted directly (fast)."""
    db = open_db(path)
    studies.import_manifest(db, make_folder_study(tmp / "s", prompts=500, models=("a", "b"),
                                                  k=1000))
    images = [r[0] for r in db.execute("SELECT id FROM images")]
    rows, k = [], 0
    while len(rows) < n_ratings:
        rid = ensure_rater(db, f"seed{k}").id
        k += 1
        for image in images[: (n_ratings - len(rows)) // 2]:
            sub = uuid.uuid4().hex
            rows += [(1, image, rid, c, 1.0, 1, sub, "rate", 2.0, "2026") for c in ("SC", "PR")]
    db.conn.executemany("INSERT INTO ratings (study_id, image_id, rater_id, criterion, value,"
                        " revision, submission, action, seconds, created_at)"
                        " VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    db.conn.commit()
    db.close()


def _rater(path: Path, stop: threading.Event, waits: list[float]) -> None:
    db = open_db(path)
    [inv] = studies.invite(db, "s", ["live"], "x")
    rid = rater_for_token(db, inv.url.split("token=")[1]).id
    while not stop.is_set() and (item := rating.next_item(db, "s", rid)) is not None:
        start = time.perf_counter()
        rating.submit(db, "s", rid, item.image_id, {"SC": 1, "PR": 1},
                      submission=new_submission())
        waits.append(time.perf_counter() - start)
        time.sleep(0.005)
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ratings", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=ROOT / "data") as d:
        tmp = Path(d)
        path = tmp / "live.db"
        _seed(path, tmp, args.ratings)
        stop, waits = threading.Event(), []
        thread = threading.Thread(target=_rater, args=(path, stop, waits))
        thread.start()
        time.sleep(0.5)
        before, took = len(waits), []
        db = open_db(path, migrate=False)
        for i in range(3):
            start = time.perf_counter()
            backup_store.backup(db, tmp / f"b{i}.db")
            took.append(time.perf_counter() - start)
        during = waits[before:]
        stop.set()
        thread.join()
        db.close()
        start = time.perf_counter()
        backup_store.restore(path, tmp / "b2.db", confirm=True)
        restore_s = time.perf_counter() - start
        size = (tmp / "b0.db").stat().st_size / 1e6
    print(f"\n| measure | value |\n|---|---|\n| rating rows | {args.ratings:,} |")
    print(f"| backup file | {size:.1f} MB |")
    print(f"| backup (3 runs), s | {', '.join(f'{t:.2f}' for t in took)} |")
    print(f"| restore incl. safety copy, s | {restore_s:.2f} |")
    print(f"| rater submits during the backups | {len(during)} |")
    print(f"| submit median / max during backups, ms | {statistics.median(during) * 1000:.1f}"
          f" / {max(during) * 1000:.1f} |")


if __name__ == "__main__":
    main()
