"""`import-scores`: tidy CSV, TIIF-Bench judge outputs, JSONL score files; staged in chunks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from concord.errors import InputError
from concord.services import studies
from concord.services.metrics import scores as metric_scores
from concord.store import studies as study_store
from tests.foundation_helpers import make_folder_study, shared_path, unchanged, write_png

pytestmark = pytest.mark.both_engines

HEADER = "prompt_id,model,metric,value,sample,question_id,judge\n"
JUDGE_FILE = ("benchmarks", "tiif", "eval_results_testmini",
              "tiif_testmini_eval_results_GPT-4o.jsonl")


def _csv(tmp_path: Path, body: str, name: str = "s.csv") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def _fails(db, study: str, path: Path, fmt: str = "csv") -> InputError:
    with unchanged(db), pytest.raises(InputError) as info:
        metric_scores.import_scores(db, study, fmt, path)
    return info.value


@pytest.fixture
def scored(db, tmp_path):
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=2))
    return db


def _judge_slice(tmp_path: Path, n: int) -> Path:
    lines = shared_path(*JUDGE_FILE).read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "tiif_testmini_eval_results_GPT-4o.jsonl"
    path.write_text("".join(lines[:n]), encoding="utf-8")
    return path


def test_csv_into_a_manifest_study(scored, tmp_path):
    path = _csv(tmp_path, "p0,m1,clip,0.31,0,,\np0,m1,vqa,1,0,q1,judge-a\np1,m2,clip,0.2,,,\n")
    s = metric_scores.import_scores(scored, "s", "csv", path)
    assert (s.created_study, s.rows, s.stored) == (False, 3, 3)
    frame = metric_scores.scores(scored, "s").sort_values(["metric", "prompt_id"])
    cols = ["prompt_id", "model", "metric", "judge", "question_id", "value"]
    assert frame[cols].values.tolist() == [
        ["p0", "m1", "clip", "", "", 0.31], ["p1", "m2", "clip", "", "", 0.2],
        ["p0", "m1", "vqa", "judge-a", "q1", 1.0]]


def test_csv_creates_a_scores_only_study(db, tmp_path):
    s = metric_scores.import_scores(db, "new", "csv", _csv(tmp_path, "a,X,clip,0.5,,,\n"))
    assert s.created_study
    assert study_store.get_study(db, "new").settings["layout"] == "scores-only (csv)"


def test_every_bad_row_is_named(db, tmp_path):
    path = _csv(tmp_path, "a,X,,0.5,,,\na,X,clip,x,,,\na,X,clip,inf,,,\na,Y,clip,1,1.5,,\n")
    err = _fails(db, "new", path)
    got = {(p.row, p.field) for p in err.problems}
    assert got == {(2, "metric"), (3, "value"), (4, "value"), (5, "sample")}
    assert all(p.file == str(path) for p in err.problems)


def test_duplicate_scores_are_refused(db, tmp_path):
    path = _csv(tmp_path, "a,X,clip,0.5,,,\nb,X,clip,0.5,,,\na,X,clip,0.7,,,\n")
    p = _fails(db, "new", path).problems[0]
    assert (p.row, p.field) == (4, "value")
    assert "'a'/'X'/clip scored again (first on line 2;" in p.message
    # A row with a question id is another score of the image; the empty one is the same.
    path = _csv(tmp_path, "a,X,clip,0.5,,q1,\nb,X,clip,0.5,,,\na,X,clip,0.7,,,\n"
                          "a,X,clip,0.9,,,\n", name="q.csv")
    p = _fails(db, "new", path).problems[0]
    assert p.row == 5 and "(first on line 4;" in p.message


def test_unknown_target_in_a_manifest_study(scored, tmp_path):
    path = _csv(tmp_path, "p0,m1,clip,0.5,,,\np0,m7,clip,0.5,,,\n")
    p = _fails(scored, "s", path).problems[0]
    assert (p.row, p.field) == (3, "prompt_id")
    assert "'m7'" in p.message


def test_missing_scores_file(db, tmp_path):
    assert "file not found" in str(_fails(db, "new", tmp_path / "none.csv"))


def test_reimport_changes_nothing_and_a_new_value_replaces_the_old(scored, tmp_path):
    path = _csv(tmp_path, "p0,m1,clip,0.5,,,\np1,m1,clip,0.25,,,\n")
    metric_scores.import_scores(scored, "s", "csv", path)
    with unchanged(scored):
        assert metric_scores.import_scores(scored, "s", "csv", path).stored == 0
    changed = _csv(tmp_path, "p0,m1,clip,0.75,,,\np1,m1,clip,0.25,,,\n", "b.csv")
    assert metric_scores.import_scores(scored, "s", "csv", changed).stored == 1
    values = sorted(metric_scores.scores(scored, "s")["value"].tolist())
    assert values == [0.25, 0.75]


# --- TIIF judge outputs ----------------------------------------------------------------

@pytest.mark.shared
def test_tiif_slice_creates_a_scores_only_study(db, tmp_path):
    path = _judge_slice(tmp_path, 200)
    records = [json.loads(x) for x in path.read_text().splitlines()]
    s = metric_scores.import_scores(db, "tiif", "tiif", path)
    n_questions = sum(len(r["questions"]) for r in records)
    assert s.created_study
    assert s.rows == s.stored == n_questions
    frame = metric_scores.scores(db, "tiif")
    assert set(frame["metric"]) == {"tiif-judge"}
    assert set(frame["judge"]) == {"GPT-4o"}  # from the file name
    correct = sum(a.strip().lower() == p.strip().lower() for r in records
                  for a, p in zip(r["gt_answers"], r["model_pred"], strict=True))
    assert frame["value"].sum() == correct
    first = records[0]
    key = f"{first['attribute']}/{first['line_idx']}/long"
    q = db.execute("SELECT q.text, q.answer FROM questions q JOIN prompts p ON p.id = q.prompt_id"
                   " WHERE p.key = ? ORDER BY q.position", [key]).fetchall()
    assert q == list(zip(first["questions"], first["gt_answers"], strict=True))
    with unchanged(db):
        assert metric_scores.import_scores(db, "tiif", "tiif", path).stored == 0


@pytest.mark.shared
def test_tiif_judge_name_can_be_given(db, tmp_path):
    metric_scores.import_scores(db, "t", "tiif", _judge_slice(tmp_path, 2), judge="gpt-4o-2024")
    assert set(metric_scores.scores(db, "t")["judge"]) == {"gpt-4o-2024"}


@pytest.mark.shared
def test_tiif_scores_attach_to_a_manifest_study(db, tmp_path):
    prompts = shared_path("benchmarks", "tiif", "testmini_prompts")
    questions = shared_path("benchmarks", "tiif", "testmini_eval_prompts")
    root = tmp_path / "tiif"
    for model in ("DALLE3", "other"):
        for idx in range(3):
            write_png(root / "res" / model / "2d_spatial_relation" / "long" / f"{idx}.png",
                      size=(8, 8))
    manifest = root / "study.yaml"
    manifest.write_text(f"name: t\nlayout: tiif\nroot: res\nprompts: {prompts}\n"
                        f"questions: {questions}\n")
    studies.import_manifest(db, manifest)
    s = metric_scores.import_scores(db, "t", "tiif", _judge_slice(tmp_path, 3))
    assert not s.created_study
    frame = metric_scores.scores(db, "t")
    assert set(frame["model"]) == {"DALLE3"}
    assert set(frame["prompt_id"]) == {f"2d_spatial_relation/{i}/long" for i in range(3)}
    assert frame["skill"].isna().all()
    assert frame["answer"].notna().all()  # joined to the manifest's questions


@pytest.mark.shared
def test_tiif_record_for_an_image_not_in_the_study(db, tmp_path):
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=1))
    p = _fails(db, "s", _judge_slice(tmp_path, 2), fmt="tiif").problems[0]
    assert p.field == "prompt_id"
    assert "2d_spatial_relation/0/long" in p.message


def test_bad_tiif_lines_are_named(db, tmp_path):
    path = tmp_path / "eval_results_x.jsonl"
    good = {"source_path": "r/M/color/short/0.json", "attribute": "color",
            "desc": "short_description", "jsonl_file": "color_eval_prompts.jsonl",
            "line_idx": 0, "questions": ["q?"], "gt_answers": ["yes"], "model_pred": ["no"]}
    path.write_text(json.dumps(good) + "\n{not json\n"
                    + json.dumps({**good, "desc": "medium"}) + "\n")
    err = _fails(db, "t", path, fmt="tiif")
    assert {(p.file, p.row) for p in err.problems} == {(str(path), 2), (str(path), 3)}


# --- JSONL score files and the chunked staging table -----------------------------------

def _jsonl(tmp_path: Path, *records: dict, name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_jsonl_file_keeps_details_errors_and_question_rows(scored, tmp_path):
    path = _jsonl(tmp_path,
                  {"prompt_id": "p0", "model": "m1", "metric": "tiif", "value": 0.5,
                   "details": {"n_correct": 1}},
                  {"prompt_id": "p0", "model": "m1", "metric": "tiif", "question_id": "q1",
                   "value": 0.9, "details": {"pred": "yes", "correct": True}},
                  {"prompt_id": "p1", "model": "m1", "metric": "tiif", "value": None,
                   "error": "unreadable image"})
    s = metric_scores.import_scores(scored, "s", "jsonl", path)
    assert (s.rows, s.stored) == (3, 3)
    rows = {(r["question_id"], r["value"], r["error"], r["details"]) for r in scored.query(
        "SELECT question_id, value, error, details FROM metric_scores")}
    assert rows == {("", 0.5, None, '{"n_correct":1}'),
                    ("q1", 0.9, None, '{"correct":true,"pred":"yes"}'),
                    ("", None, "unreadable image", "{}")}
    with unchanged(scored):
        assert metric_scores.import_scores(scored, "s", "jsonl", path).stored == 0


def test_a_long_import_commits_in_bounded_chunks(scored, tmp_path, monkeypatch):
    from concord.store.imports import score_staging

    monkeypatch.setattr(score_staging, "CHUNK", 3)
    body = "".join(f"p{i % 2},m{1 + i % 2},metric{i},{i / 10},0,,\n" for i in range(10))
    # Write transactions counted where the store opens them (both engines; SQLite's trace
    # hook has no PostgreSQL counterpart).
    opened: list[int] = []
    real = score_staging.transaction

    def counted(db):
        opened.append(1)
        return real(db)

    monkeypatch.setattr(score_staging, "transaction", counted)
    s = metric_scores.import_scores(scored, "s", "csv", _csv(tmp_path, body))
    assert (s.rows, s.stored) == (10, 10)
    # 4 staging chunks + the publish flag + 4 publishing chunks + the final check, at least
    assert len(opened) >= 10
    assert scored.execute("SELECT COUNT(*) FROM score_staging").fetchone()[0] == 0
    assert scored.execute("SELECT COUNT(*) FROM score_imports").fetchone()[0] == 0


def _orphan(db, status: str, value: float) -> None:
    """An import left by a killed process: staged rows, owner pid gone."""
    from concord.store import items
    from concord.store import studies as study_store
    from concord.store.imports import score_staging

    study = study_store.get_study(db, "s")
    image = items.image_keys(db, study.id)[("p0", "m1", 0)]
    import_id = score_staging.begin(db, study.id, "killed.jsonl")
    score_staging.stage(db, import_id, [(image, "orphan", "", "", value, "{}", None, None,
                                         None)])
    db.execute("UPDATE score_imports SET status = ?, pid = 999999999 WHERE id = ?",
               [status, import_id])
    db.conn.commit()


def test_a_killed_publish_is_finished_and_a_killed_staging_dropped(scored, tmp_path):
    _orphan(scored, "publishing", 0.25)
    _orphan(scored, "staging", 0.75)
    assert scored.execute("SELECT COUNT(*) FROM metric_scores").fetchone()[0] == 0
    metric_scores.import_scores(scored, "s", "csv", _csv(tmp_path, "p1,m1,clip,0.5,,,\n"))
    got = sorted((r["metric"], r["value"]) for r in scored.query(
        "SELECT metric, value FROM metric_scores"))
    assert got == [("clip", 0.5), ("orphan", 0.25)]
    assert scored.execute("SELECT COUNT(*) FROM score_imports").fetchone()[0] == 0


def test_jsonl_import_from_the_command_line(tmp_path):
    from concord.cli import main

    db = str(tmp_path / "c.db")
    path = _jsonl(tmp_path, {"prompt_id": "a", "model": "X", "metric": "m", "value": 1})
    assert main(["--db", db, "import-scores", "--study", "n", "--format", "jsonl",
                 str(path)]) == 0
    bad = _jsonl(tmp_path, {"prompt_id": "a", "model": "X", "metric": "m", "value": "1"},
                 name="bad.jsonl")
    assert main(["--db", db, "import-scores", "--study", "n", "--format", "jsonl",
                 str(bad)]) == 1
