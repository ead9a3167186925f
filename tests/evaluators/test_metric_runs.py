"""Metric runs started the way the app starts them: a detached process, watched through the
runs table and its log, cancelled with SIGTERM."""

from __future__ import annotations

import time

import pytest

from concord.config import Settings
from concord.errors import ConcordError
from concord.services.metrics import runs as metric_runs
from concord.services.metrics.runs import RunRequest
from concord.store.db import open_db

pytestmark = pytest.mark.both_engines


@pytest.fixture
def env(database_at, tmp_path, study_maker):
    # Settings as the app makes them; a PostgreSQL URL is not in the child's environment.
    settings = Settings.from_env(database_at("concord"))
    db = open_db(settings.database)
    study_maker(db, tmp_path / "images")
    study_maker(db, tmp_path / "bare", name="bare", questions=False)
    yield db, settings
    db.close()


def _until(db, settings, run_id, statuses, timeout=240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = metric_runs.view(db, settings, run_id)
        if v.status in statuses:
            return v
        time.sleep(0.3)
    raise AssertionError(f"run {run_id} still {v.status}: {v.log}")


def test_a_started_run_is_watched_to_the_end(env, tiny_dirs):
    db, settings = env
    req = RunRequest("tiny", "vqascore", judge=str(tiny_dirs["llava"]), device="cpu",
                     batch_size="4", options=("repetition_penalty=1.0",))
    run_id = metric_runs.start(db, settings, req)
    assert run_id in metric_runs.active(db)
    v = _until(db, settings, run_id, {"done", "failed"})
    assert v.status == "done", v.log
    assert (v.done, v.total, v.fraction) == (6, 6, 1.0)
    assert "scored 6 images" in v.log
    [row] = metric_runs.past_runs(db, "tiny")
    assert (row["run"], row["status"], row["options"]) == (run_id, "done",
                                                           "repetition_penalty=1.0")
    assert db.execute("SELECT COUNT(*) FROM metric_scores").fetchone()[0] == 6


def test_cancel_ends_a_run_as_cancelled(database_at, tmp_path, study_maker, tiny_dirs):
    settings = Settings.from_env(database_at("big"))
    db = open_db(settings.database)
    study_maker(db, tmp_path / "big", n_prompts=60, n_models=4)
    run_id = metric_runs.start(db, settings, RunRequest(
        "tiny", "soft-tifa", judge=str(tiny_dirs["qwen2_5_vl"]), device="cpu"))
    deadline = time.monotonic() + 240
    while metric_runs.view(db, settings, run_id).done == 0:
        assert time.monotonic() < deadline, metric_runs.view(db, settings, run_id).log
        time.sleep(0.2)
    metric_runs.cancel(db, run_id)
    v = _until(db, settings, run_id, {"cancelled", "done", "failed"})
    assert v.status == "cancelled", v.log
    assert 0 < v.done < 240
    with pytest.raises(ConcordError, match="is cancelled, not running"):
        metric_runs.cancel(db, run_id)
    db.close()


def test_a_launch_that_fails_its_pre_check_shows_why(env):
    db, settings = env
    run_id = metric_runs.start(db, settings, RunRequest("bare", "soft-tifa", device="cpu"))
    deadline = time.monotonic() + 120
    while (v := metric_runs.view(db, settings, run_id)).status == "starting":
        assert time.monotonic() < deadline
        time.sleep(0.3)
    assert v.status == "exited"
    assert "study 'bare' has none" in v.log
    assert run_id in metric_runs.active(db)  # kept on the page for a while


@pytest.mark.parametrize(("change", "message"), [
    ({"study": "nope"}, "no study named 'nope'"),
    ({"metric": "tifa"}, "unknown metric 'tifa'"),
    ({"device": "tpu"}, "device must be auto, cpu, cuda or cuda:N"),
    ({"batch_size": "0"}, "batch size must be a number >= 1 or auto"),
    ({"options": ("top_k",)}, "options are KEY=VALUE"),
])
def test_bad_requests_start_nothing(env, change, message):
    db, settings = env
    req = RunRequest(**{"study": "tiny", "metric": "vqascore", **change})
    with pytest.raises(ConcordError, match=message):
        metric_runs.start(db, settings, req)
    assert not metric_runs.log_dir(settings).exists()


def test_log_tail_reads_the_end_of_a_long_log(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(10_000)))
    assert metric_runs.log_tail(log, 3) == "line 9997\nline 9998\nline 9999"
    assert metric_runs.log_tail(tmp_path / "missing.log") == ""
