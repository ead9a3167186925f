"""``python -m concord score`` end to end on a tiny study and tiny models."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from concord.cli import main
from concord.services.metrics.scoring import ScoringError, Shard, parse_shard
from concord.store.db import open_db

REPO = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.both_engines


@pytest.fixture
def study(database_at, tmp_path, study_maker):
    """A database with study 'tiny': 3 prompts × 2 models, image 3 corrupt."""
    db_path = database_at("concord")
    db = open_db(db_path)
    study_maker(db, tmp_path / "images", corrupt=3)
    db.close()
    return db_path


def _score(db_path, *args):
    return main(["--db", str(db_path), "score", "--study", "tiny", "--device", "cpu",
                 "--no-progress", *args])


def _rows(db_path, metric):
    db = open_db(db_path)
    try:
        return list(db.query("SELECT image_id, judge, question_id, value, error, run_id,"
                             " created_at FROM metric_scores WHERE metric = ?"
                             " ORDER BY image_id, question_id", [metric]))
    finally:
        db.close()


def test_score_writes_rows_and_resumes(study, tiny_dirs, capsys):
    model = str(tiny_dirs["llava"])
    assert _score(study, "--metric", "vqascore", "--model", model, "--batch-size", "4") == 0
    assert "scored 5 images (1 errors" in capsys.readouterr().out
    rows = _rows(study, "vqascore")
    assert len(rows) == 6
    assert {r["judge"] for r in rows} == {model}
    errors = [r for r in rows if r["error"]]
    assert len(errors) == 1
    assert errors[0]["value"] is None
    assert "unreadable image" in errors[0]["error"]
    assert all(0 < r["value"] < 1 for r in rows if not r["error"])
    # a rerun skips what is scored and retries only the error
    assert _score(study, "--metric", "vqascore", "--model", model) == 0
    out = capsys.readouterr().out
    assert "scored 0 images (1 errors" in out
    assert "5 already done" in out
    again = _rows(study, "vqascore")
    assert [r["created_at"] for r in again if not r["error"]] == \
           [r["created_at"] for r in rows if not r["error"]]


def test_runs_are_recorded(study, tiny_dirs):
    _score(study, "--metric", "vqascore", "--model", str(tiny_dirs["llava"]))
    db = open_db(study)
    runs = list(db.query("SELECT * FROM runs"))
    db.close()
    assert len(runs) == 1
    assert (runs[0]["n_scored"], runs[0]["n_errors"]) == (5, 1)
    assert runs[0]["finished_at"] is not None
    assert {r["run_id"] for r in _rows(study, "vqascore")} == {runs[0]["id"]}


def test_shards_cover_every_image_exactly_once(study, tiny_dirs):
    model = str(tiny_dirs["qwen2_5_vl"])
    db = open_db(study)
    all_ids = {r["id"] for r in db.query("SELECT id FROM images")}
    db.close()
    _score(study, "--metric", "geneval2-vqascore", "--model", model, "--shard", "0/2")
    first = {r["image_id"] for r in _rows(study, "geneval2-vqascore")}
    assert first == {i for i in all_ids if Shard(0, 2).holds(i)}
    _score(study, "--metric", "geneval2-vqascore", "--model", model, "--shard", "1/2")
    rows = _rows(study, "geneval2-vqascore")
    assert sorted(r["image_id"] for r in rows) == sorted(all_ids)  # each exactly once
    assert len({r["run_id"] for r in rows}) == 2


def test_question_metric_writes_one_row_per_question(study, tiny_dirs):
    assert _score(study, "--metric", "soft-tifa", "--model", str(tiny_dirs["qwen2_5_vl"]),
                  "--limit", "2") == 0
    rows = _rows(study, "soft-tifa")
    assert [r["question_id"] for r in rows] == ["", "0", "1", "", "0", "1"]
    assert all(r["value"] is not None for r in rows)


def test_options_reach_the_metric(study, tiny_dirs, capsys):
    assert _score(study, "--metric", "paircomp", "--model", str(tiny_dirs["llava"]),
                  "--option", "top_k=none", "--limit", "1") == 0
    assert len(_rows(study, "paircomp")) == 1
    assert _score(study, "--metric", "paircomp", "--model", "m", "--option", "nope=1") == 1
    assert "unexpected keyword argument 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--metric", "vqascor"], "did you mean 'vqascore'"),
    (["--metric", "vqascore", "--shard", "2/2"], "--shard i/n needs 0 <= i < n, got '2/2'"),
    (["--metric", "vqascore", "--shard", "half"], "--shard must look like i/n"),
    (["--metric", "vqascore", "--model", "/no/such/dir"], "model path '/no/such/dir' does not"),
    (["--metric", "vqascore", "--model", "org/uncached"], "not found locally and HF_HUB_OFF"),
    (["--metric", "gned", "--model", "x"], "uses no judge model"),
    (["--metric", "vqascore", "--device", "tpu"], "--device must be auto, cpu, cuda"),
    (["--metric", "vqascore", "--option", "oops"], "--option must be KEY=VALUE"),
])
def test_user_errors_are_one_line(study, capsys, args, message):
    assert _score(study, *args) == 1
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
    assert err.startswith("error: ")


def test_unknown_study_lists_the_studies(study, capsys):
    assert main(["--db", str(study), "score", "--study", "nope", "--metric", "gned"]) == 1
    assert "no study named 'nope' (studies: tiny)" in capsys.readouterr().err


def test_unknown_metric_fails_at_once_from_the_command_line(study):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-m", "concord", "--db", str(study), "score",
                          "--study", "tiny", "--metric", "soft-tifaa"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert "did you mean 'soft-tifa'" in out.stderr
    assert "valid metrics: consistency" in out.stderr


def test_parse_shard():
    assert parse_shard("3/4") == Shard(3, 4)
    with pytest.raises(ScoringError, match="'0/0'"):
        parse_shard("0/0")
    assert sum(Shard(i, 3).holds(42) for i in range(3)) == 1


def test_ocr_metric_runs_without_a_judge(study):
    assert _score(study, "--metric", "gned", "--limit", "2") == 0
    rows = _rows(study, "gned")
    assert len(rows) == 2
    assert {r["judge"] for r in rows} == {""}
    assert all(r["value"] == 0.0 for r in rows)  # no text expected, none read


def test_consistency_over_an_ocr_base_from_the_command_line(study):
    assert _score(study, "--metric", "consistency", "--option", "base=gned", "--limit", "1") == 0
    rows = _rows(study, "consistency")
    assert len(rows) == 1 and rows[0]["judge"] == ""


@pytest.mark.parametrize("missing", ["torch", "transformers"])
def test_a_misspelt_metric_is_named_before_the_missing_packages(
        monkeypatch, capsys, tmp_path, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # what `import torch` sees when absent
    args = ["--db", str(tmp_path / "c.db"), "score", "--study", "s", "--metric"]
    assert main([*args, "vqascor"]) == 1
    err = capsys.readouterr().err
    assert "did you mean 'vqascore'" in err and "requirements-metrics.txt" not in err
    assert main([*args, "vqascore"]) == 1  # a real metric: then the install line
    assert "pip install -r requirements-metrics.txt" in capsys.readouterr().err


class _CountingRegistry(dict):
    """The registry's dict, counting the look-ups of each name."""

    def __init__(self, entries):
        super().__init__(entries)
        self.looked_up: list[str] = []

    def get(self, key, default=None):
        self.looked_up.append(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.looked_up.append(key)
        return super().__getitem__(key)


def test_score_looks_the_metric_up_once(study, monkeypatch):
    from evaluators import registry

    counting = _CountingRegistry(registry.EVALUATORS)
    monkeypatch.setattr(registry, "EVALUATORS", counting)
    assert _score(study, "--metric", "gned", "--limit", "1") == 0
    assert counting.looked_up == ["gned"]


@pytest.mark.parametrize("module", ["score.py", "score_args.py", "runs.py"])
def test_the_score_command_reaches_evaluators_only_through_the_service(module):
    """The scoring CLI parses and prints: it imports neither evaluators nor torch."""
    tree = ast.parse((REPO / "concord" / "cli" / module).read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in names if m.split(".")[0] in ("evaluators", "torch")]


def test_device_map_auto_runs_on_a_machine_without_a_gpu(study, tiny_dirs, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the CPU-only placement is not what runs here")
    model = str(tiny_dirs["llava"])
    args = ("--metric", "vqascore", "--model", model, "--device", "auto", "--limit", "2")
    assert _score(study, *args, "--device-map", "auto") == 0, capsys.readouterr().err
    assert "scored 2 images" in capsys.readouterr().out
    # the resume key holds the dtype the weights really loaded in: fp32 on a CPU
    assert _score(study, *args, "--dtype", "float32") == 0
    assert "2 already done" in capsys.readouterr().out
