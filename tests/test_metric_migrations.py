"""Migrations of the metrics branch (m101-m103) on a database written before them."""

from __future__ import annotations

from sqlite_utils import Database

from concord.plan import StudyPlan
from concord.store.migrations import migrations
from concord.store.studies import apply_plan


def _old_db(tmp_path) -> Database:
    db = Database(tmp_path / "old.db")
    migrations.apply(db, stop_before="m101_run_tracking")
    apply_plan(db, StudyPlan(name="s", protocol="score", rubric=None, root=None,
                             models=["m"], prompts=[], images=[]))
    sid = db.execute("SELECT id FROM studies").fetchone()[0]
    db.execute("INSERT INTO prompts (study_id, key, text) VALUES (?, 'p', 't')", [sid])
    db.execute("INSERT INTO images (study_id, prompt_id, model_id, public_id) VALUES"
               " (?, 1, 1, 'x')", [sid])
    for run, metric, finished in (("r1", "tifa", "2026-01-02"), ("r2", "vqascore", None)):
        db.execute("INSERT INTO runs (id, study_id, metric, params, started_at, finished_at)"
                   " VALUES (?, ?, ?, '{}', '2026-01-01', ?)", [run, sid, metric, finished])
    for metric, run, q in (("tifa", "r1", ""), ("tifa", "r1", "0"), ("tifa", None, "9")):
        db.execute("INSERT INTO metric_scores (study_id, image_id, metric, question_id, value,"
                   " run_id, created_at) VALUES (?, 1, ?, ?, 1.0, ?, 'now')",
                   [sid, metric, q, run])
    db.conn.commit()
    return db


def test_unfinished_runs_become_stale_and_finished_ones_done(tmp_path):
    db = _old_db(tmp_path)
    migrations.apply(db)
    status = dict(db.execute("SELECT id, status FROM runs").fetchall())
    assert status == {"r1": "done", "r2": "stale"}
    cols = {c.name for c in db["metric_scores"].columns}
    assert "options_key" in cols


def test_our_tifa_runs_are_renamed_imported_tifa_scores_kept(tmp_path):
    db = _old_db(tmp_path)
    migrations.apply(db)
    got = sorted(db.execute("SELECT metric, question_id FROM metric_scores").fetchall())
    assert got == [("geneval2-tifa", ""), ("geneval2-tifa", "0"), ("tifa", "9")]
    assert db.execute("SELECT metric FROM runs WHERE id = 'r1'").fetchone()[0] == \
        "geneval2-tifa"
    assert migrations.pending(db) == []
