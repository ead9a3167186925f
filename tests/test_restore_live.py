"""`restore --yes` while raters keep submitting: every rating a rater was told was saved is
in the restored database or in the safety copy, and raters only ever get clear messages.

The raters are threads of this process, each on its own connection, going through the
rating service exactly as the app does; the restores run as separate `python -m concord`
processes, as a researcher would run them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from concord.services import studies
from concord.store import open_db
from tests.foundation_helpers import ROOT, invited, make_folder_study
from tests.support.live_raters import PROGRESS_WAIT_S, Raters, submissions_in

RATERS = ("ann", "ben", "cat")
RESTORES = 3


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
    kept = submissions_in(path).union(*map(submissions_in, safety))
    lost = [s for s in raters.acked if s not in kept]
    assert lost == [], f"{len(lost)} of {len(raters.acked)} acknowledged ratings lost"
    # Submits for items the restore took back are refused in one line (the item was
    # never given in the restored database); nothing else reaches a rater.
    assert all("never given to you" in m or "try again" in m for m in raters.messages), \
        raters.messages[:5]
