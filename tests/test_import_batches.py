"""Large ratings imports: streamed, written as an invisible batch in short transactions,
published at once; a killed import leaves nothing visible; raters are never blocked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from concord.errors import ProblemLog
from concord.importers import ratings_csv
from concord.services import studies
from concord.services.exports import labels
from concord.services.imports.ratings import import_ratings
from concord.services.labelling import rating
from concord.services.labelling.common import new_submission
from concord.store import frames
from concord.store import ratings as rating_store
from concord.store import studies as study_store
from concord.store.db import open_db
from concord.store.imports import batches, rating_writes
from tests.foundation_helpers import (
    ROOT,
    invited,
    make_folder_study,
    rate_next,
    snapshot,
    unchanged,
)
from tests.helpers import target_of
from tests.support import loadtest

pytestmark = pytest.mark.both_engines

HEADER = "prompt_id,model,rater,criterion,value,sample,seconds\n"


def write_ratings_csv(path: Path, prompts: int, *, models=("m1", "m2"), raters=10,
                      bad_last: bool = False) -> int:
    """prompts × models × raters × (SC, PR) rows on the 0/0.5/1 scale; returns the count."""
    n = 0
    with path.open("w", encoding="utf-8") as f:
        f.write(HEADER)
        for p in range(prompts):
            for m in models:
                for r in range(raters):
                    for c in ("SC", "PR"):
                        f.write(f"p{p},{m},r{r},{c},{(p + r) % 3 / 2:g},0,{r}.5\n")
                        n += 1
        if bad_last:
            f.write("p0,m1,r0,SC,1,0,-3\n")
    return n


def test_nothing_is_visible_before_the_batch_is_published(db, tmp_path, monkeypatch):
    rows = write_ratings_csv(tmp_path / "r.csv", prompts=10)
    seen, real = {}, batches.publish

    def look_then_publish(conn, batch, **kw):
        other = open_db(target_of(db))
        seen["studies"] = study_store.list_study_names(other)
        seen["current"] = other.execute("SELECT COUNT(*) FROM current_ratings").fetchone()[0]
        seen["written"] = other.execute("SELECT COUNT(*) FROM ratings").fetchone()[0]
        seen["frame"] = len(frames.ratings_frame(other, batch.study_id))
        other.close()
        real(conn, batch, **kw)

    monkeypatch.setattr(batches, "publish", look_then_publish)
    import_ratings(db, "big", "csv", tmp_path / "r.csv")
    assert seen == {"studies": [], "current": 0, "written": rows, "frame": 0}
    assert len(labels.ratings(db, "big")) == rows
    assert db.execute("SELECT state FROM import_batches").fetchall() == [("published",)]


@pytest.mark.parametrize("existing", [False, True])
def test_a_failure_while_writing_leaves_the_database_as_it_was(db, tmp_path, monkeypatch,
                                                               existing):
    if existing:
        import_ratings(db, "big", "csv", _small(tmp_path))
    write_ratings_csv(tmp_path / "r.csv", prompts=20)
    real = rating_writes.write_ratings

    def write_then_fail(*args, **kw):
        real(*args, **kw)
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(rating_writes, "write_ratings", write_then_fail)
    with unchanged(db), pytest.raises(RuntimeError, match="disk on fire"):
        import_ratings(db, "big", "csv", tmp_path / "r.csv")


def _small(tmp_path: Path) -> Path:
    path = tmp_path / "small.csv"
    path.write_text(HEADER + "p0,m1,r0,SC,1,0,\nq0,m1,old,PR,0.5,0,\n")
    return path


def test_a_rater_editing_during_an_import_keeps_every_revision(db, tmp_path, monkeypatch):
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=2))
    ann = invited(db, "s", "ann")
    image = rate_next(db, "s", ann, sc=1, pr=1)
    key = db.execute("SELECT p.key, m.name FROM images i JOIN prompts p ON p.id = i.prompt_id"
                     " JOIN models m ON m.id = i.model_id WHERE i.id = ?", [image]).fetchone()
    path = tmp_path / "r.csv"
    path.write_text(HEADER + f"{key[0]},{key[1]},ann,SC,0,0,\n")
    real, during = rating_writes.write_ratings, {}

    def write_then_rater_edits(*args, **kw):
        out = real(*args, **kw)
        other = open_db(target_of(db))  # the pending import row is there, invisible
        during["current"] = rating_store.current_values(other, image, ann)
        during["history"] = len(rating_store.rating_history(other, study_id(db), ann))
        during["last"] = rating_store.last_new_rating(other, study_id(db), ann)
        rating.submit(other, "s", ann, image, {"SC": 2, "PR": 2}, submission=new_submission(),
                      edit=True)
        other.close()
        return out

    monkeypatch.setattr(rating_writes, "write_ratings", write_then_rater_edits)
    assert import_ratings(db, "s", "csv", path).changed == 1
    assert during["current"] == {"SC": 1.0, "PR": 1.0}
    assert during["history"] == 2 and during["last"][0] == image
    revisions = db.execute("SELECT revision, value, action FROM ratings WHERE image_id = ? AND"
                           " rater_id = ? AND criterion = 'SC' ORDER BY revision",
                           [image, ann]).fetchall()
    assert revisions == [(1, 1.0, "rate"), (2, 0.0, "import"), (3, 2.0, "edit")]
    assert rating_store.current_values(db, image, ann) == {"SC": 2.0, "PR": 2.0}


def study_id(db, name: str = "s") -> int:
    return study_store.get_study(db, name).id


def _kill_while_writing(db_file: Path, csv: Path, study: str) -> None:
    """Run the CLI import in a subprocess and SIGKILL it once pending rows are written."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "concord", "--db", str(db_file), "import-ratings", "--study",
         study, "--format", "csv", str(csv)], cwd=ROOT, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    watch = open_db(db_file)
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if watch.execute("SELECT 1 FROM ratings WHERE batch IN (SELECT id FROM"
                             " import_batches WHERE state = 'pending') LIMIT 1").fetchone():
                break
            time.sleep(0.005)
        assert proc.poll() is None, f"the import ended before it could be killed: {proc.stderr}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        watch.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("existing", [False, True])
def test_kill_9_while_writing_leaves_nothing_visible_and_the_next_run_cleans_up(
        tmp_path, existing):
    db_file = tmp_path / "k.db"
    db = open_db(db_file)
    if existing:
        import_ratings(db, "big", "csv", _small(tmp_path))
    before = snapshot(db)
    current = db.execute("SELECT * FROM current_ratings ORDER BY id").fetchall()
    rows = write_ratings_csv(tmp_path / "r.csv", prompts=2000)  # 80,000 rows
    _kill_while_writing(db_file, tmp_path / "r.csv", "big")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert study_store.list_study_names(db) == (["big"] if existing else [])
    assert db.execute("SELECT * FROM current_ratings ORDER BY id").fetchall() == current
    assert db.execute("SELECT COUNT(*) FROM import_batches WHERE state = 'pending'"
                      ).fetchone()[0] == 1
    assert batches.discard_stale(db) != []  # what the next import does first
    assert snapshot(db) == before
    s = import_ratings(db, "big", "csv", tmp_path / "r.csv")
    assert (s.added, s.changed) == ((rows - 1, 1) if existing else (rows, 0))  # p0/m1/r0/SC
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == rows + 2 * existing
    db.close()


def test_raters_are_not_blocked_by_a_large_import(tmp_path):
    db_file = tmp_path / "c.db"
    db = open_db(db_file)
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=150, k=3))
    ids = [invited(db, "s", f"rater{i}") for i in range(6)]
    write_ratings_csv(tmp_path / "r.csv", prompts=6000)  # 240,000 rows
    stop = threading.Event()
    proc = subprocess.Popen(
        [sys.executable, "-m", "concord", "--db", str(db_file), "import-ratings", "--study",
         "big", "--format", "csv", str(tmp_path / "r.csv")], cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    threading.Thread(target=lambda: (proc.wait(), stop.set()), daemon=True).start()
    result = loadtest.run(db_file, "s", ids, seconds=600, stop=stop)
    assert proc.wait() == 0, proc.stderr.read()
    assert result.errors == []
    assert result.stored > 0
    assert (result.missing_keys, result.duplicate_keys) == (0, 0)
    assert max(result.waits) < 3.0, sorted(result.waits)[-5:]
    assert len(labels.ratings(db, "big")) == 240_000
    db.close()


def test_reading_a_large_file_takes_bounded_memory_and_names_its_bad_last_row(tmp_path):
    path = tmp_path / "r.csv"
    rows = write_ratings_csv(path, prompts=4000, raters=10, bad_last=True)  # 160,001 rows
    log, read = ProblemLog(), 0
    tracemalloc.start()
    for chunk in ratings_csv.read_chunks(path, log):
        read += len(chunk[0])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert read == rows
    assert peak < 40 * 2**20, f"{peak / 2**20:.0f} MB"  # one chunk, not the file
    [p] = log.shown
    assert (p.row, p.field) == (rows + 2, "seconds")


def test_a_bad_last_row_of_a_large_file_writes_nothing(db, tmp_path):
    rows = write_ratings_csv(tmp_path / "r.csv", prompts=2000, bad_last=True)
    with unchanged(db), pytest.raises(Exception, match=f"row {rows + 2}, field 'seconds'"):
        import_ratings(db, "big", "csv", tmp_path / "r.csv")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_study_an_abandoned_import_was_creating_stays_hidden_until_removed(db, tmp_path):
    batch = batches.begin(db, study_id=None, new=batches.NewStudy("ghost", None, {}),
                          source="x.csv")
    batches._MINE.discard(batch.id)  # as if its process had died
    db.execute("UPDATE import_batches SET pid = ? WHERE id = ?", [_dead_pid(), batch.id])
    db.conn.commit()
    assert study_store.list_study_names(db) == []
    with pytest.raises(Exception, match="no study named 'ghost'"):
        study_store.get_study(db, "ghost")
    manifest = make_folder_study(tmp_path / "ghost", prompts=1)
    with pytest.raises(Exception, match="being created by a ratings import"):
        studies.import_manifest(db, manifest)
    assert batches.discard_stale(db) == [batch.id]
    assert studies.import_manifest(db, manifest).created


def test_a_live_import_into_the_same_study_is_refused(db, tmp_path):
    import_ratings(db, "s", "csv", _small(tmp_path))
    batch = batches.begin(db, study_id=study_id(db, "s"), new=None, source="other.csv")
    with unchanged(db), pytest.raises(Exception, match="another import into this study"):
        import_ratings(db, "s", "csv", _small(tmp_path))
    batches.discard(db, batch.id)
