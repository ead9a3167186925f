"""consistency: the base metric's image value, tagged by paraphrase group."""

from __future__ import annotations

import pytest

from evaluators.base import Question, ScoreRequest
from evaluators.consistency import Consistency
from evaluators.vqascore import VQAScore


def _request(i, path, group):
    return ScoreRequest(i, path, f"prompt {i}", extra={
        "paraphrase_group": group, "dimension": "abstract", "variant": f"v{i}"})


def test_values_are_the_base_metric_values(backends, image_files):
    backend = backends["qwen2_5_vl"]
    requests = [_request(i, p, f"g{i % 2}") for i, p in enumerate(image_files[:4])]
    results = Consistency(backend=backend).score(requests)
    base = VQAScore(backend=backend).score(requests)
    assert [r.value for r in results] == pytest.approx([b.value for b in base], abs=1e-9)
    assert [r.details["paraphrase_group"] for r in results] == ["g0", "g1", "g0", "g1"]
    assert results[0].details["base"] == "vqascore"
    assert results[0].details["dimension"] == "abstract"
    assert Consistency(backend=backend).judge == backend.model_id


def test_any_base_metric_works_also_without_a_judge(image_files):
    metric = Consistency(base="gned", ocr=lambda image: [("cat", 0.99)])
    assert metric.judge == ""
    request = ScoreRequest(0, image_files[0], "a cat", extra={"text": ["cat"],
                                                                "paraphrase_group": "g"})
    result = metric.score([request])[0]
    assert result.value == 0.0
    assert result.details["base"] == "gned"


def test_question_metric_base_gives_its_image_aggregate(backends, image_files):
    questions = (Question("0", "Is it red?", "yes"), Question("1", "Is it blue?", "no"))
    request = ScoreRequest(0, image_files[0], "p", questions, {"paraphrase_group": "g"})
    result = Consistency(base="tiif", backend=backends["llava"]).score([request])[0]
    assert result.value in (0.0, 0.5, 1.0)  # TIIF's per-image accuracy
    assert not result.question_values


def test_errors_pass_through(backends, tmp_path):
    bad = tmp_path / "x.png"
    bad.write_bytes(b"junk")
    result = Consistency(backend=backends["llava"]).score([_request(0, bad, "g")])[0]
    assert result.value is None
    assert "unreadable image" in result.error


def test_cannot_wrap_itself():
    with pytest.raises(ValueError, match="cannot wrap itself"):
        Consistency(base="consistency")
