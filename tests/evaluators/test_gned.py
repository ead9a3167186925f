"""gned: TIIF-Bench's GNED and recall, the OCR filter and real RapidOCR on rendered text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from evaluators.base import Question, ScoreRequest
from evaluators.gned import (
    GNED,
    gned,
    ground_truth,
    image_scores,
    normalized_edit_distance,
    ocr_recall,
    summarise_ocr_file,
)
from evaluators.ocr import RapidOCREngine, filter_detections
from tests.helpers import SHARED

FIXTURES = SHARED / "benchmarks" / "tiif" / "fixtures"
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")


def _json_values(text: str) -> list:
    decoder, values, pos = json.JSONDecoder(), [], 0
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        value, pos = decoder.raw_decode(text, pos)
        values.append(value)
    return values


@pytest.mark.shared
@pytest.mark.skipif(not (FIXTURES / "synth_ocr.json").is_file(),
                    reason="needs ../shared/benchmarks/tiif/fixtures (the reference outputs)")
def test_reproduces_the_reference_output_exactly():
    records = json.loads((FIXTURES / "synth_ocr.json").read_text())
    summary, *calls = _json_values((FIXTURES / "synth_ocr.gned_stdout.txt").read_text())
    ours = {"file_name": "synth_ocr.json", **summarise_ocr_file(records)}
    assert ours == summary  # exact float equality
    assert len(calls) == 9
    for call in calls:
        assert gned(call["gt"], call["ocr"]) == call["gned"], call


def test_normalized_edit_distance():
    assert normalized_edit_distance("", "") == 0.0
    assert normalized_edit_distance("tea", "te") == pytest.approx(1 / 3)
    assert normalized_edit_distance("dr1nk", "drink") == pytest.approx(0.2)
    assert normalized_edit_distance("abc", "") == 1.0


def test_gned_examples_from_the_reference_notes():
    assert gned(["drink", "tea"], ["drink tea"]) == 0.0
    assert gned(["drink", "tea"], ["dr1nk", "te"]) == pytest.approx(0.26666666666666666)
    assert gned(["drink", "tea", "eat"], ["drink"]) == pytest.approx(2 / 3)
    assert gned(["drink"], ["drink tea cake"]) == pytest.approx(2 / 3)
    assert gned(["drink", "tea"], ["drink  tea"]) == pytest.approx(1 / 3)  # empty token
    assert gned(["abc"], ["ABC"]) == 1.0  # no case folding in the pure function


def test_recall_is_greedy_with_threshold():
    assert ocr_recall(["drink", "tea"], ["dr1nk", "te"]) == 0.5  # NED(tea, te) > 0.3
    assert ocr_recall(["eat", "cake"], ["EAT".lower(), "cak"]) == 1.0
    assert ocr_recall(["tea", "tea"], ["tea"]) == 0.5  # a token is used once
    with pytest.raises(ValueError, match="empty ground-truth"):
        ocr_recall([], ["x"])


def test_image_scores_lower_case_and_empty_ocr():
    assert image_scores(["Drink"], ["DRINK"]) == (0.0, 1.0)
    assert image_scores(["drink", "tea"], []) == (1.0, 0.0)  # no OCR -> [""]


def test_empty_ground_truth_policy():
    assert image_scores([], []) == (0.0, None)       # nothing asked, nothing read
    assert image_scores([], ["  "]) == (0.0, None)   # only empty tokens: nothing read
    assert image_scores([], ["stray text"]) == (1.0, None)


def test_filter_drops_clutter_and_unsure_single_characters():
    detections = [("OPEN", 0.99), ("●", 0.99), ("O", 0.6), ("A", 0.95), ("...", 0.9),
                  ("24/7", 0.8)]
    assert filter_detections(detections) == ["OPEN", "A", "24/7"]


def test_ground_truth_from_questions_then_meta():
    questions = (Question("0", "Is the text 'drink' in the image?"),
                 Question("1", "Is the text 'Tea Time' in the image?  "),
                 Question("2", "Is the cup red?"))
    assert ground_truth(ScoreRequest(0, None, "p", questions)) == (
        ["drink", "Tea", "Time"], "questions")  # words, as OCR text becomes tokens
    assert ground_truth(ScoreRequest(0, None, "p", extra={"text": ["A", "B C"]})) == (
        ["A", "B", "C"], "meta")
    assert ground_truth(ScoreRequest(0, None, "p", extra={"text": "OPEN  24 h"})) == (
        ["OPEN", "24", "h"], "meta")
    assert ground_truth(ScoreRequest(0, None, "p")) == ([], "none")


@pytest.mark.parametrize("read", [["COFFEE SHOP"], ["coffee", "shop"], ["Coffee Shop "]])
def test_a_multi_word_text_read_perfectly_scores_zero(image_files, read):
    metric = GNED(ocr=lambda image: [(t, 0.99) for t in read])
    questions = (Question("0", "Is the text 'COFFEE SHOP' in the image?"),)
    [result] = metric.score([ScoreRequest(1, image_files[0], "p", questions)])
    expected_empty = read[0].endswith(" ")  # OCR's trailing space is an empty token
    assert result.value == pytest.approx(1 / 3 if expected_empty else 0.0)
    assert result.details["recall"] == 1.0
    assert result.details["gt"] == ["COFFEE", "SHOP"]


def test_a_multi_word_text_read_in_part():
    # [coffee, shop] vs OCR [coffee, shap]: (0 + 1/4) / 2; recall 2/2 (NED 0.25 <= 0.3)
    assert image_scores(["COFFEE", "SHOP"], ["coffee shap"]) == (pytest.approx(0.125), 1.0)


def test_evaluator_with_injected_engine(image_files, tmp_path):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"junk")
    metric = GNED(ocr=lambda image: [("Drink Tea", 0.99), ("•", 0.99)])
    questions = (Question("0", "Is the text 'drink' in the image?"),
                 Question("1", "Is the text 'cake' in the image?"))
    good, broken = metric.score([ScoreRequest(1, image_files[0], "p", questions),
                                 ScoreRequest(2, bad, "p", questions)])
    # tokens [drink, tea] vs GT [drink, cake]: (0 + NED(tea, cake) = 4/4) / 2 words
    assert good.value == pytest.approx(0.5)
    assert good.details["ocr"] == ["Drink Tea"]
    assert good.details["recall"] == 0.5
    assert good.details["gt_source"] == "questions"
    assert broken.value is None
    assert "unreadable image" in broken.error
    assert not GNED.higher_is_better
    assert not GNED.needs_judge
    assert metric.judge == ""


def _render(text: str, path: Path) -> Path:
    image = Image.new("RGB", (512, 192), (245, 242, 230))
    font = (ImageFont.truetype(str(DEJAVU), 56) if DEJAVU.is_file()
            else ImageFont.load_default(size=56))
    ImageDraw.Draw(image).text((30, 60), text, font=font, fill=(20, 20, 30))
    image.save(path)
    return path


@pytest.fixture(scope="module")
def rapidocr():
    engine = RapidOCREngine()
    engine.load()
    return engine


def test_real_rapidocr_reads_rendered_text(rapidocr, tmp_path):
    path = _render("CONCORD 2026", tmp_path / "text.png")
    metric = GNED(ocr=rapidocr)
    request = ScoreRequest(0, path, "a sign", extra={"text": ["CONCORD", "2026"]})
    result = metric.score([request])[0]
    assert " ".join(result.details["ocr"]) == "CONCORD 2026"
    assert result.value == 0.0
    assert result.details["recall"] == 1.0


def test_real_rapidocr_on_a_blank_image(rapidocr, tmp_path):
    path = tmp_path / "blank.png"
    Image.new("RGB", (256, 256), (255, 255, 255)).save(path)
    result = GNED(ocr=rapidocr).score(
        [ScoreRequest(0, path, "p", extra={"text": ["hello"]})])[0]
    assert result.details["ocr"] == []
    assert result.value == 1.0
    assert result.details["recall"] == 0.0
