"""Score files (``score --output``) for Slurm arrays, ``merge-scores`` exactly once, and two
processes of one torchrun-style job splitting a study."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from concord.cli import main
from concord.errors import InputError
from concord.services.metrics import scores as metric_scores
from concord.store.db import open_db
from tests.foundation_helpers import unchanged

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def study(tmp_path, study_maker):
    db_path = tmp_path / "concord.db"
    db = open_db(db_path)
    study_maker(db, tmp_path / "images")
    db.close()
    return db_path


def _score(db_path, *args):
    return main(["--db", str(db_path), "score", "--study", "tiny", "--device", "cpu",
                 "--no-progress", *args])


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def _scores(db_path, metric="soft-tifa"):
    db = open_db(db_path)
    try:
        return sorted((r["image_id"], r["question_id"], r["value"], r["details"])
                      for r in db.query("SELECT * FROM metric_scores WHERE metric = ?",
                                        [metric]))
    finally:
        db.close()


def test_output_file_holds_run_scores_and_end_and_the_db_no_scores(study, tiny_dirs, tmp_path):
    out = tmp_path / "s0.jsonl"
    assert _score(study, "--metric", "soft-tifa", "--model", str(tiny_dirs["qwen2_5_vl"]),
                  "--output", str(out)) == 0
    lines = _lines(out)
    assert lines[0]["type"] == "run" and lines[0]["study"] == "tiny"
    assert lines[-1]["type"] == "end" and lines[-1]["status"] == "done"
    scores = [x for x in lines if x["type"] == "score"]
    assert len(scores) == 6 * 3  # image row + 2 questions per image
    assert {x["question_id"] for x in scores} == {"", "0", "1"}
    assert all("answers" in x["details"] for x in scores if x["question_id"])
    assert _scores(study) == []


def test_a_rerun_resumes_from_its_file_and_repairs_a_torn_line(study, tiny_dirs, tmp_path,
                                                                capsys):
    out = tmp_path / "s.jsonl"
    args = ["--metric", "vqascore", "--model", str(tiny_dirs["llava"]), "--output", str(out)]
    assert _score(study, *args, "--limit", "4") == 0
    with out.open("a") as f:
        f.write('{"type": "score", "prompt_id": "p2", "mod')  # killed mid-write
    capsys.readouterr()
    assert _score(study, *args) == 0
    assert "scored 2 images" in capsys.readouterr().out
    assert len([x for x in _lines(out) if x["type"] == "score"]) == 6


def test_a_cancel_between_a_steps_rows_and_its_count_resumes_without_a_duplicate(
        study, tiny_dirs, tmp_path, capsys, monkeypatch):
    """SIGTERM after the second step's rows reached the file, before its count did: the
    run records the first step only (never more than the file holds), and the rerun
    scores just the images the file lacks."""
    from concord.services.metrics import score_output
    from concord.services.metrics.scoring import RunCancelled

    out = tmp_path / "s.jsonl"
    args = ["--metric", "vqascore", "--model", str(tiny_dirs["llava"]), "--output", str(out),
            "--images-per-step", "2"]
    real, calls = score_output.run_store.progress, []

    def cancelled_at_the_second_count(*a, **kw):
        calls.append(a)
        if len(calls) == 2:
            raise RunCancelled
        return real(*a, **kw)

    with monkeypatch.context() as m:
        m.setattr(score_output.run_store, "progress", cancelled_at_the_second_count)
        assert _score(study, *args) == 143
    db = open_db(study)
    try:
        [run] = list(db.query("SELECT status, n_scored FROM runs"))
    finally:
        db.close()
    assert (run["status"], run["n_scored"]) == ("cancelled", 2)
    assert _lines(out)[-1] == {**_lines(out)[-1], "type": "end", "status": "cancelled"}
    capsys.readouterr()
    assert _score(study, *args) == 0
    assert "scored 2 images" in capsys.readouterr().out
    scored = [(x["prompt_id"], x["model"]) for x in _lines(out) if x["type"] == "score"]
    assert len(scored) == len(set(scored)) == 6


def test_shard_files_merge_exactly_once_like_a_direct_run(study, tiny_dirs, tmp_path, capsys,
                                                          study_maker):
    model = str(tiny_dirs["qwen2_5_vl"])
    files = [tmp_path / f"task-{i}.jsonl" for i in range(3)]
    for i, f in enumerate(files):
        assert _score(study, "--metric", "soft-tifa", "--model", model, "--shard", f"{i}/3",
                      "--output", str(f)) == 0
    capsys.readouterr()
    written = [f for f in files if f.exists()]  # a shard with no image writes no file
    assert len(written) >= 2
    assert main(["--db", str(study), "merge-scores", "--study", "tiny",
                 *map(str, written)]) == 0
    assert f"18 scores read from {len(written)} file(s), 18 stored" in capsys.readouterr().out
    merged = _scores(study)
    db = open_db(study)
    with unchanged(db):
        again = metric_scores.merge_score_files(db, "tiny", [tmp_path])  # a folder works too
    assert again.stored == 0 and again.rows == 18
    runs = list(db.query("SELECT status, shard FROM runs WHERE shard != ''"))
    db.close()
    assert sorted(r["shard"] for r in runs) == [f"{i}/3" for i, f in enumerate(files)
                                                if f.exists()]
    assert {r["status"] for r in runs} == {"done"}
    # the same numbers and details as scoring straight into a fresh copy of the study
    direct = tmp_path / "direct.db"
    db = open_db(direct)
    study_maker(db, tmp_path / "images")
    db.close()
    assert _score(direct, "--metric", "soft-tifa", "--model", model) == 0
    assert [m[1:] for m in merged] == [d[1:] for d in _scores(direct)]


def _file(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


ROW = {"prompt_id": "p0", "model": "m0", "metric": "x", "value": 0.5}


def test_conflicting_options_are_refused_and_nothing_is_written(study, tmp_path):
    a = _file(tmp_path / "a.jsonl", {**ROW, "options_key": "k1"})
    b = _file(tmp_path / "b.jsonl", {**ROW, "value": 0.7, "options_key": "k2"})
    db = open_db(study)
    with unchanged(db), pytest.raises(InputError) as info:
        metric_scores.merge_score_files(db, "tiny", [a, b])
    db.close()
    [problem] = info.value.problems
    assert problem.file == str(b) and problem.row == 1 and "other options" in problem.message


def test_a_value_beats_an_error_and_the_later_run_wins(study, tmp_path):
    run = {"type": "run", "metric": "x", "judge": "", "study": "tiny"}
    a = _file(tmp_path / "a.jsonl", {**run, "run_id": "r1", "started_at": "2026-01-01"},
              {**ROW, "run_id": "r1"}, {**ROW, "prompt_id": "p1", "value": None,
                                        "error": "unreadable", "run_id": "r1"})
    b = _file(tmp_path / "b.jsonl", {**run, "run_id": "r2", "started_at": "2026-02-01"},
              {**ROW, "value": 0.9, "run_id": "r2"}, {**ROW, "prompt_id": "p1", "value": 0.3,
                                                      "run_id": "r2"})
    db = open_db(study)
    metric_scores.merge_score_files(db, "tiny", [b, a])
    got = metric_scores.scores(db, "tiny").set_index("prompt_id")["value"].to_dict()
    stale = db.execute("SELECT status FROM runs WHERE id = 'r1'").fetchone()[0]
    db.close()
    assert got == {"p0": 0.9, "p1": 0.3}
    assert stale == "stale"  # a run line without its end line: the task was killed (or runs)
    with a.open("a") as f:  # ... it finished after all: merging again records its end
        f.write(json.dumps({"type": "end", "run_id": "r1", "status": "done", "n_scored": 1,
                            "n_errors": 1, "finished_at": "2026-01-02"}) + "\n")
    db = open_db(study)
    metric_scores.merge_score_files(db, "tiny", [b, a])
    status = db.execute("SELECT status, n_scored FROM runs WHERE id = 'r1'").fetchone()
    db.close()
    assert tuple(status) == ("done", 1)


def test_every_bad_line_is_named_and_nothing_is_written(study, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([
        "{not json",
        json.dumps({"model": "m0", "metric": "x", "value": 1}),
        json.dumps({**ROW, "value": "high"}),
        json.dumps({**ROW, "value": None}),
        json.dumps({**ROW, "sample": -1}),
        json.dumps({**ROW, "details": [1]}),
        json.dumps({"type": "summary"}),
        json.dumps({"type": "end", "run_id": "nope", "status": "done"}),
        '{"prompt_id": "p0", "model": "m0", "metric": "x", "value": NaN}',
        json.dumps(ROW),
    ]) + "\n")
    db = open_db(study)
    with unchanged(db), pytest.raises(InputError) as info:
        metric_scores.import_scores(db, "tiny", "jsonl", path)
    db.close()
    got = {(p.row, p.field) for p in info.value.problems}
    assert got == {(1, None), (2, "prompt_id"), (3, "value"), (4, "error"), (5, "sample"),
                   (6, "details"), (7, "type"), (8, "run_id"), (9, "value")}
    assert all(p.file == str(path) for p in info.value.problems)


def test_a_file_scored_for_another_study_is_refused(study, tmp_path, capsys):
    path = _file(tmp_path / "x.jsonl", {"type": "run", "run_id": "r", "metric": "x",
                                        "judge": "", "study": "other", "started_at": "t"}, ROW)
    assert main(["--db", str(study), "merge-scores", "--study", "tiny", str(path)]) == 1
    assert "scored for study 'other', not 'tiny'" in capsys.readouterr().err


def _rank(db_path, rank, world, *extra):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RANK": str(rank), "WORLD_SIZE": str(world),
           "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(world)}
    return subprocess.Popen([sys.executable, "-m", "concord", "--db", str(db_path), "score",
                             "--study", "tiny", "--metric", "vqascore", "--device", "auto",
                             "--no-progress", *extra],
                            cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_two_ranks_split_the_study_and_land_once(study, tiny_dirs, tmp_path):
    model = str(tiny_dirs["llava"])
    procs = [_rank(study, r, 2, "--model", model) for r in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert "rank 0/2" in outs[0] and "rank 1/2" in outs[1]
    rows = _scores(study, "vqascore")
    assert sorted(r[0] for r in rows) == list(range(1, 7))  # every image exactly once
    db = open_db(study)
    runs = sorted((r["shard"], r["params"]) for r in db.query("SELECT * FROM runs"))
    db.close()
    assert [r[0] for r in runs] == ["0/1:0/2", "0/1:1/2"]
    assert all('"device":"auto"' in r[1] for r in runs)
    procs = [_rank(study, r, 2, "--model", model, "--output", str(tmp_path / "o.jsonl"),
                   "--metric", "geneval2-vqascore") for r in range(2)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    assert sorted(p.name for p in tmp_path.glob("o.rank*.jsonl")) == ["o.rank0.jsonl",
                                                                       "o.rank1.jsonl"]
