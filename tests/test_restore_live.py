"""`restore --yes` while raters keep submitting: every rating a rater was told was saved is
in the restored database or in the safety copy, and raters only ever get clear messages.

The raters are threads of this process, each on its own connection, going through the
rating service exactly as the app does; the restores run as separate `python -m concord`
processes, as a researcher would run them."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from concord.errors import ConcordError
from concord.services import studies
from concord.services.labelling import rating
from concord.services.labelling.common import new_submission
from concord.store import open_db
from tests.foundation_helpers import ROOT, invited, make_folder_study

RATERS = ("ann", "ben", "cat")
RESTORES = 3
# Generous bounds on waiting for the raters: on a loaded machine they only make the test
# slower, never fail it while the raters still progress.
PROGRESS_WAIT_S = 120


class Raters:
    """Rater threads that submit until stopped; what each was told is kept."""

    def __init__(self, path: Path, ids: dict[str, int]) -> None:
        self.stop = threading.Event()
        self.acked: list[str] = []  # submission ids the service said it stored
        self.messages: list[str] = []  # ConcordError messages shown to raters
        self.errors: list[str] = []  # anything else: a traceback on a rater's screen
        self.threads = [threading.Thread(target=self._rate, args=(path, rid), daemon=True)
                        for rid in ids.values()]

    def _rate(self, path: Path, rater_id: int) -> None:
        db = open_db(path)
        try:
            while not self.stop.is_set():
                self._once(db, rater_id)
        finally:
            db.close()

    def _once(self, db, rater_id: int) -> None:
        try:
            item = rating.next_item(db, "s", rater_id)
            if item is None:
                time.sleep(0.01)
                return
            sub = new_submission()
            if rating.submit(db, "s", rater_id, item.image_id, {"SC": 1, "PR": 0.5},
                             submission=sub).stored:
                self.acked.append(sub)
        except ConcordError as exc:  # the page shows it in one line: fine
            self.messages.append(str(exc))
        except Exception as exc:  # what the test is looking for: a traceback
            self.errors.append(repr(exc))

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + PROGRESS_WAIT_S
        while len(self.acked) < count and time.monotonic() < deadline and not self.errors:
            time.sleep(0.01)


def _submissions(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT DISTINCT submission FROM ratings")}
    finally:
        conn.close()


def _restore(db_path: Path, backup: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "concord", "--db", str(db_path), "restore",
                           str(backup), "--yes"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_no_acknowledged_rating_is_lost_by_restores_while_raters_submit(tmp_path):
    path = tmp_path / "live.db"
    db = open_db(path)
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=150, k=3))
    ids = {name: invited(db, "s", name) for name in RATERS}
    db.close()
    backup = tmp_path / "b.db"
    assert subprocess.run([sys.executable, "-m", "concord", "--db", str(path), "backup",
                           str(backup)], cwd=ROOT, capture_output=True).returncode == 0
    raters = Raters(path, ids)
    for t in raters.threads:
        t.start()
    results = []
    try:
        for _ in range(RESTORES):
            raters.wait_for(len(raters.acked) + 15)  # raters are busy when it starts
            results.append(_restore(path, backup))
        raters.wait_for(len(raters.acked) + 15)  # and they go on after the last one
    finally:
        raters.stop.set()
        for t in raters.threads:
            t.join(timeout=PROGRESS_WAIT_S)
    assert raters.errors == []
    for res in results:
        assert res.returncode == 0, res.stderr
        assert "Traceback" not in res.stderr
    safety = sorted(tmp_path.glob("live.db.before-restore-*"))
    assert len(safety) == RESTORES
    kept = _submissions(path).union(*map(_submissions, safety))
    lost = [s for s in raters.acked if s not in kept]
    assert lost == [], f"{len(lost)} of {len(raters.acked)} acknowledged ratings lost"
    # Submits for items the restore took back are refused in one line (the item was
    # never given in the restored database); nothing else reaches a rater.
    assert all("never given to you" in m or "try again" in m for m in raters.messages), \
        raters.messages[:5]
