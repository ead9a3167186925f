"""Scoring runs that can be trusted and watched: the resume key, pre-checks before any model
loads, one live run per (study, metric, judge), progress, SIGTERM and stale runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from concord.cli import main
from concord.store import runs as run_store
from concord.store.db import open_db

REPO = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.both_engines


@pytest.fixture
def study(database_at, tmp_path, study_maker):
    """A database with study 'tiny' (3 prompts × 2 models, questions) and one without."""
    db_path = database_at("concord")
    db = open_db(db_path)
    study_maker(db, tmp_path / "images")
    study_maker(db, tmp_path / "bare", name="bare", questions=False)
    db.close()
    return db_path


def _score(db_path, *args, study="tiny"):
    return main(["--db", str(db_path), "score", "--study", study, "--device", "cpu",
                 "--no-progress", *args])


def _query(db_path, sql, *params):
    db = open_db(db_path)
    try:
        return list(db.query(sql, list(params)))
    finally:
        db.close()


def test_other_score_changing_options_rescore(study, tiny_dirs, capsys):
    model = str(tiny_dirs["llava"])
    assert _score(study, "--metric", "vqascore", "--model", model) == 0
    first = {r["image_id"]: r["value"] for r in _query(
        study, "SELECT image_id, value FROM metric_scores WHERE metric = 'vqascore'")}
    capsys.readouterr()
    assert _score(study, "--metric", "vqascore", "--model", model) == 0
    assert "6 already done" in capsys.readouterr().out
    assert _score(study, "--metric", "vqascore", "--model", model,
                  "--option", "repetition_penalty=1.5") == 0
    out = capsys.readouterr().out
    assert "scored 6 images" in out and "0 already done" in out
    rows = _query(study, "SELECT image_id, value, options_key FROM metric_scores"
                         " WHERE metric = 'vqascore'")
    assert len(rows) == 6  # replaced, not duplicated
    assert len({r["options_key"] for r in rows}) == 1
    assert any(r["value"] != first[r["image_id"]] for r in rows)


def test_batch_size_and_sharing_do_not_change_the_key(study, tiny_dirs, capsys):
    model = str(tiny_dirs["qwen2_5_vl"])
    assert _score(study, "--metric", "soft-tifa", "--model", model, "--limit", "2") == 0
    capsys.readouterr()
    assert _score(study, "--metric", "soft-tifa", "--model", model, "--batch-size", "3",
                  "--no-share-prefix", "--limit", "2") == 0
    assert "2 already done" in capsys.readouterr().out


def test_spellings_of_one_local_judge_are_one_judge(study, tiny_dirs, capsys, monkeypatch):
    folder = tiny_dirs["llava"]
    assert _score(study, "--metric", "vqascore", "--model", str(folder) + "/") == 0
    monkeypatch.chdir(folder.parent)
    capsys.readouterr()
    assert _score(study, "--metric", "vqascore", "--model", f"./{folder.name}") == 0
    assert "6 already done" in capsys.readouterr().out
    judges = {r["judge"] for r in _query(study, "SELECT DISTINCT judge FROM metric_scores")}
    assert judges == {str(folder.resolve())}


def test_question_metric_on_a_study_without_questions_is_one_error(study, capsys):
    # a model path that does not exist: the pre-check must come before any loading
    assert _score(study, "--metric", "soft-tifa", "--model", "/no/such/model",
                  study="bare") == 1
    err = capsys.readouterr().err
    assert "scores each prompt's questions, but study 'bare' has none" in err
    assert err.count("\n") == 1
    assert _query(study, "SELECT COUNT(*) AS n FROM metric_scores")[0]["n"] == 0
    assert _query(study, "SELECT COUNT(*) AS n FROM runs")[0]["n"] == 0


def test_a_second_live_run_of_the_same_target_is_refused(study, tiny_dirs, capsys):
    db = open_db(study)
    study_id = db.execute("SELECT id FROM studies WHERE name = 'tiny'").fetchone()[0]
    judge = str(tiny_dirs["llava"].resolve())
    run_store.start_run(db, run_id="other", study_id=study_id, metric="vqascore", judge=judge,
                        params={}, options_key=None, shard="", n_total=6)
    db.close()
    assert _score(study, "--metric", "vqascore", "--model", str(tiny_dirs["llava"])) == 1
    err = capsys.readouterr().err
    assert "run other" in err and "is already scoring 'vqascore'" in err
    # a disjoint shard of the same target may run beside it only if the other is sharded
    assert _score(study, "--metric", "geneval2-vqascore", "--model",
                  str(tiny_dirs["llava"])) == 0


def test_dead_runs_become_stale_and_do_not_block(study, tiny_dirs):
    db = open_db(study)
    study_id = db.execute("SELECT id FROM studies WHERE name = 'tiny'").fetchone()[0]
    judge = str(tiny_dirs["llava"].resolve())
    run_store.start_run(db, run_id="dead", study_id=study_id, metric="vqascore", judge=judge,
                        params={}, options_key=None, shard="", n_total=6)
    run_store.start_run(db, run_id="silent", study_id=study_id, metric="tiif", judge=judge,
                        params={}, options_key=None, shard="", n_total=6)
    assert run_store.mark_stale(db) == []  # both belong to this live process
    db.execute("UPDATE runs SET pid = 999999999 WHERE id = 'dead'")
    db.execute("UPDATE runs SET host = 'elsewhere', heartbeat_at = '2020-01-01T00:00:00+00:00'"
               " WHERE id = 'silent'")
    db.conn.commit()
    assert set(run_store.mark_stale(db)) == {"dead", "silent"}
    db.close()
    assert _score(study, "--metric", "vqascore", "--model", str(tiny_dirs["llava"])) == 0
    status = {r["id"]: r["status"] for r in _query(study, "SELECT id, status FROM runs")}
    assert status["dead"] == status["silent"] == "stale"
    assert sorted(status.values()).count("done") == 1


def test_finished_run_records_status_counts_and_key(study, tiny_dirs):
    assert _score(study, "--metric", "vqascore", "--model", str(tiny_dirs["llava"]),
                  "--images-per-step", "2") == 0
    [run] = _query(study, "SELECT * FROM runs")
    assert run["status"] == "done"
    assert (run["n_total"], run["n_scored"], run["n_errors"]) == (6, 6, 0)
    assert run["pid"] == os.getpid() and run["heartbeat_at"] >= run["started_at"]
    keys = {r["options_key"] for r in _query(study, "SELECT options_key FROM metric_scores")}
    assert keys == {run["options_key"]} and run["options_key"]


def test_failed_model_load_is_recorded_as_failed(study, tmp_path, capsys):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json")
    assert _score(study, "--metric", "vqascore", "--model", str(tmp_path / "broken")) == 1
    assert "cannot load model" in capsys.readouterr().err
    [run] = _query(study, "SELECT status, error FROM runs")
    assert run["status"] == "failed" and "cannot load model" in run["error"]


def _long_run(db_path, tmp_path, study_maker, tiny_dirs):
    """(database, process): a `score` process on 240 images, one image per step."""
    db = open_db(db_path)
    study_maker(db, tmp_path / "big", n_prompts=60, n_models=4)
    db.close()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "concord", "--db", str(db_path), "score", "--study", "tiny",
         "--metric", "soft-tifa", "--model", str(tiny_dirs["qwen2_5_vl"]), "--device", "cpu",
         "--images-per-step", "1", "--no-progress"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return db_path, proc


def test_sigterm_ends_the_run_as_cancelled(database_at, tmp_path, study_maker, tiny_dirs):
    db_path, proc = _long_run(database_at("big"), tmp_path, study_maker, tiny_dirs)
    try:
        _wait(lambda: _query(db_path, "SELECT n_scored FROM runs WHERE n_scored > 0"), proc)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, out
    assert "cancelled" in out and "Traceback" not in out
    [run] = _query(db_path, "SELECT status, n_scored, finished_at FROM runs")
    assert run["status"] == "cancelled" and run["finished_at"]
    assert 0 < run["n_scored"] < 240
    images = _query(db_path, "SELECT COUNT(DISTINCT image_id) AS n FROM metric_scores")
    assert images[0]["n"] >= run["n_scored"]


def test_a_step_whose_write_a_cancel_interrupts_is_not_counted(study, tiny_dirs,
                                                                monkeypatch, capsys):
    """SIGTERM inside a step's write rolls the step back; the run's count says so."""
    from concord.services.metrics import score_output
    from concord.services.metrics.scoring import RunCancelled

    real, calls = score_output.write_scores, []

    def cancelled_on_the_second_step(*args, **kwargs):
        calls.append(real(*args, **kwargs))
        if len(calls) == 2:
            raise RunCancelled  # inside the step's transaction, after its rows went in
        return calls[-1]

    monkeypatch.setattr(score_output, "write_scores", cancelled_on_the_second_step)
    assert _score(study, "--metric", "vqascore", "--model", str(tiny_dirs["llava"]),
                  "--images-per-step", "2") == 143
    assert "cancelled" in capsys.readouterr().out
    [run] = _query(study, "SELECT status, n_scored, n_errors FROM runs")
    stored = _query(study, "SELECT COUNT(DISTINCT image_id) AS n FROM metric_scores")
    assert (run["status"], run["n_scored"], run["n_errors"]) == ("cancelled", 2, 0)
    assert stored[0]["n"] == 2


def _wait(check, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"scoring exited early: {proc.stdout.read()}")
        if check():
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


def _record_run(db_path, run_id, **changes):
    """A 'running' run of study tiny in the runs table, then ``changes`` to its row."""
    db = open_db(db_path)
    study_id = db.execute("SELECT id FROM studies WHERE name = 'tiny'").fetchone()[0]
    run_store.start_run(db, run_id=run_id, study_id=study_id, metric="vqascore", judge="j",
                        params={}, options_key=None, shard="", n_total=6)
    for column, value in changes.items():
        db.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", [value, run_id])
    db.conn.commit()
    db.close()


def _runs(db_path, *args):
    return main(["--db", str(db_path), "runs", *args])


def test_runs_list_shows_each_run_with_its_status(study, tiny_dirs, capsys):
    assert _score(study, "--metric", "gned", "--limit", "2") == 0
    capsys.readouterr()
    assert _runs(study, "list", "--study", "tiny") == 0
    header, line = capsys.readouterr().out.splitlines()
    assert header.split()[:5] == ["run", "study", "metric", "judge", "status"]
    [run] = _query(study, "SELECT id FROM runs")
    assert line.split()[:4] == [run["id"], "tiny", "gned", "done"]
    assert _runs(study, "list", "--json") == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["run"], row["status"], row["scored"], row["of"]) == (run["id"], "done", 2, 2)
    assert _runs(study, "list", "--study", "nope") == 1
    assert "no study named 'nope'" in capsys.readouterr().err


def test_runs_cancel_stops_a_live_run(database_at, tmp_path, study_maker, tiny_dirs, capsys):
    db_path, proc = _long_run(database_at("big"), tmp_path, study_maker, tiny_dirs)
    try:
        _wait(lambda: _query(db_path, "SELECT id FROM runs WHERE n_scored > 0"), proc)
        [run] = _query(db_path, "SELECT id FROM runs")
        assert _runs(db_path, "cancel", run["id"]) == 0
        assert f"asked run {run['id']} (pid {proc.pid}) to stop" in capsys.readouterr().out
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, out
    [run] = _query(db_path, "SELECT status FROM runs")
    assert run["status"] == "cancelled"
    assert _runs(db_path, "cancel", "nope") == 1
    assert "no run 'nope'" in capsys.readouterr().err


def test_runs_cancel_marks_a_run_without_a_process_stale(study, capsys):
    _record_run(study, "dead", pid=999_999_999)
    assert _runs(study, "cancel", "dead") == 0
    assert "had no live process (pid 999999999" in capsys.readouterr().out
    assert _query(study, "SELECT status FROM runs")[0]["status"] == "stale"
    assert _runs(study, "cancel", "dead") == 1
    assert "run dead is stale, not running" in capsys.readouterr().err


def test_runs_cancel_never_signals_a_process_that_reused_the_pid(study, capsys):
    """The run's process died and the system gave its pid to a later process: that one
    must not get the SIGTERM."""
    other = subprocess.Popen(["sleep", "60"])
    try:
        _record_run(study, "reused", pid=other.pid, started_at="2020-01-01T00:00:00+00:00")
        assert _runs(study, "cancel", "reused") == 0
        assert "marked stale" in capsys.readouterr().out
        time.sleep(0.2)
        assert other.poll() is None  # still running: not signalled
    finally:
        other.kill()
        other.wait()


def test_runs_cancel_refuses_a_run_on_another_host(study, capsys):
    _record_run(study, "remote", host="elsewhere", pid=12345)
    assert _runs(study, "cancel", "remote") == 1
    err = capsys.readouterr().err
    assert "run remote runs on elsewhere (pid 12345); cancel it there" in err
    assert _query(study, "SELECT status FROM runs")[0]["status"] == "running"
