"""Inputs that must fail alone, never a whole step: a decompression bomb, an image shape the
judge's processor refuses, a question without text (refused at import, an error row if a
database holds one already)."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from concord.cli import main
from concord.errors import InputError
from concord.services import studies
from concord.store.db import open_db
from evaluators.base import Question, ScoreRequest, load_images, open_image
from tests.foundation_helpers import png_header_only


def test_a_decompression_bomb_is_an_unreadable_image(tmp_path, image_maker):
    bomb = png_header_only(tmp_path / "bomb.png", 20_000, 20_000)
    with pytest.raises(OSError, match="too large to decode safely"):
        open_image(bomb)
    good = tmp_path / "good.png"
    image_maker(1).save(good)
    images, failed = load_images([ScoreRequest(0, bomb, "p"), ScoreRequest(1, good, "p")])
    assert list(images) == [1]
    assert str(bomb) in failed[0].error and "too large" in failed[0].error


def test_a_bomb_in_a_study_is_one_error_row(tmp_path, study_maker, caplog):
    db_path = tmp_path / "c.db"
    db = open_db(db_path)
    study_maker(db, tmp_path / "images", n_prompts=2, n_models=1)
    db.close()
    png_header_only(tmp_path / "images" / "m0" / "p1.png", 20_000, 20_000)  # replaced later
    assert main(["--db", str(db_path), "score", "--study", "tiny", "--metric", "gned",
                 "--no-progress"]) == 0
    db = open_db(db_path)
    rows = list(db.query("SELECT value, error FROM metric_scores ORDER BY image_id"))
    db.close()
    assert rows[0]["error"] is None and rows[0]["value"] is not None
    assert "too large to decode safely" in rows[1]["error"]
    assert "step failed" not in caplog.text  # its step was not rerun image by image


def _request(item, image, questions=()):
    return ScoreRequest(item, image, "a red cube", tuple(questions))


@pytest.fixture
def qwen_paths(tmp_path, image_maker):
    """A 1×300 image (Qwen-VL's processor refuses aspect ratios over 200) and two good."""
    paths = [tmp_path / "thin.png", tmp_path / "a.png", tmp_path / "b.png"]
    Image.new("RGB", (1, 300), (90, 10, 10)).save(paths[0])
    image_maker(2).save(paths[1])
    image_maker(3).save(paths[2])
    return paths


@pytest.mark.parametrize("metric", ["vqascore", "soft-tifa"])
def test_an_image_the_processor_refuses_fails_alone(tiny_dirs, qwen_paths, metric):
    """Flat pairs (vqascore) and shared-prefix groups (soft-tifa's questions) alike."""
    from evaluators.registry import create_evaluator

    questions = (Question("0", "Is the cube red?", "yes"), Question("1", "Is it big?", "no"))
    make = lambda: create_evaluator(metric, model=str(tiny_dirs["qwen2_5_vl"]),  # noqa: E731
                                    device="cpu", batch_size=8)
    evaluator = make()
    results = evaluator.score([_request(i, p, questions) for i, p in enumerate(qwen_paths)])
    assert results[0].value is None
    assert "processor refused the image" in results[0].error
    assert "aspect ratio" in results[0].error
    alone = make().score([_request(i, p, questions) for i, p in enumerate(qwen_paths)
                          if i > 0])
    assert [r.value for r in results[1:]] == pytest.approx([r.value for r in alone], abs=1e-6)
    backend = evaluator.backend
    assert backend.counters["refused_pairs"] == (1 if metric == "vqascore" else 2)


def test_a_question_without_text_is_an_error_row_and_not_asked(tiny_dirs, image_files):
    from evaluators.registry import create_evaluator

    evaluator = create_evaluator("soft-tifa", model=str(tiny_dirs["qwen2_5_vl"]),
                                 device="cpu")
    questions = (Question("0", "  ", "yes"), Question("1", "Is the cube red?", "yes"))
    [result] = evaluator.score([_request(0, image_files[0], questions)])
    assert result.question_values["0"] is None
    assert result.question_details["0"] == {"error": "empty question"}
    assert result.question_values["1"] is not None and result.value is not None
    counters = evaluator.backend.counters
    assert counters["flat_pairs"] + counters["shared_pairs"] == 1  # only the real question


def _geneval2(tmp_path, question):
    row = {"prompt": "a red cube", "atom_count": 1, "skills": ["color"],
           "vqa_list": [[question, "yes"]]}
    (tmp_path / "g2.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "out" / "m1").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(tmp_path / "out" / "m1" / "0.png")
    (tmp_path / "map.json").write_text(json.dumps({"a red cube": "m1/0.png"}))
    manifest = tmp_path / "m.yaml"
    manifest.write_text("name: g2\nlayout: geneval2\nroot: out\nprompts: g2.jsonl\n"
                        "models: {m1: map.json}\n")
    return manifest


def _tiif(tmp_path, question):
    (tmp_path / "p").mkdir()
    (tmp_path / "q").mkdir()
    (tmp_path / "p" / "color_prompts.jsonl").write_text(json.dumps(
        {"short_description": "a red cup", "long_description": "a long red cup"}) + "\n")
    (tmp_path / "q" / "color_eval_prompts.jsonl").write_text(json.dumps(
        {"yn_question_list": ["Is the cup red?", question],
         "yn_answer_list": ["yes", "no"]}) + "\n")
    (tmp_path / "r" / "m1" / "color" / "short").mkdir(parents=True)
    Image.new("RGB", (8, 8)).save(tmp_path / "r" / "m1" / "color" / "short" / "0.png")
    manifest = tmp_path / "m.yaml"
    manifest.write_text("name: t\nlayout: tiif\nroot: r\nprompts: p\nquestions: q\n"
                        "variants: [short]\n")
    return manifest


@pytest.mark.parametrize("question", ["", " \t", None])
@pytest.mark.parametrize(("layout", "where"), [
    (_geneval2, ("g2.jsonl", 1, "vqa_list", "question 0")),
    (_tiif, ("q/color_eval_prompts.jsonl", 1, "yn_question_list", "question 1")),
])
def test_a_question_without_text_is_refused_at_import(tmp_path, layout, where, question):
    manifest = layout(tmp_path, question)
    db = open_db(tmp_path / "c.db")
    with pytest.raises(InputError) as info:
        studies.import_manifest(db, manifest)
    problem = info.value.problems[0]  # (the mapping then names a prompt it lacks)
    file, row, field, text = where
    assert (problem.file, problem.row, problem.field) == (str(tmp_path / file), row, field)
    assert f"{text} has no text" in problem.message
    assert db.execute("SELECT COUNT(*) FROM studies").fetchone()[0] == 0
    db.close()


def test_a_refused_first_image_does_not_stop_the_auto_batch_size(tiny_dirs, qwen_paths):
    from evaluators.registry import create_evaluator

    evaluator = create_evaluator("vqascore", model=str(tiny_dirs["qwen2_5_vl"]),
                                 device="cpu", batch_size="auto")
    results = evaluator.score([_request(i, p) for i, p in enumerate(qwen_paths)])
    assert results[0].error and [r.error for r in results[1:]] == [None, None]
    assert evaluator.backend.batch_size >= 1 and not evaluator.backend._auto_batch
