"""vqascore: t2v_metrics' template, P(Yes) over the full vocabulary."""

from __future__ import annotations

import math

import pytest
import torch

from evaluators.base import ScoreRequest
from evaluators.hf_backend import HFVLMBackend
from evaluators.vqascore import QUESTION, VQAScore
from tests.support.tiny_models import build_tiny_vlm


def _requests(paths, prompts=("a red cube", "two cats on a sofa", "a blue table")):
    return [ScoreRequest(i, p, prompts[i % len(prompts)]) for i, p in enumerate(paths)]


def test_question_template_is_t2v_metrics():
    assert QUESTION.format("a cat") == 'Does this figure show "a cat"? Please answer Yes or No.'


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "llava", "idefics3"])
def test_score_is_p_yes_over_the_full_vocabulary(backends, image_files, image_maker, arch):
    backend = backends[arch]
    metric = VQAScore(backend=backend)
    result = metric.score(_requests(image_files[:1]))[0]
    text, context = backend.render(QUESTION.format("a red cube"))
    yes = backend.first_token_id(context, backend.spaced(context, "Yes"))
    logits = backend.model(**backend.encode([image_maker(0)], [text])).logits[0, -1].float()
    expected = torch.softmax(logits, -1)[yes].item()
    assert result.error is None
    assert 0.0 < result.value < 1.0
    assert result.value == pytest.approx(expected, abs=1e-6)
    assert result.details["answer_tokens"] == [yes]
    assert metric.judge == backend.model_id


def test_batch_equals_one_at_a_time(backends, image_files):
    metric = VQAScore(backend=backends["qwen2_5_vl"])
    requests = _requests(image_files)
    batch = [r.value for r in metric.score(requests)]
    single = [metric.score([req])[0].value for req in requests]
    assert batch == pytest.approx(single, abs=1e-5)


def test_multi_token_answer_is_the_geometric_mean_of_forced_tokens(backends, image_files,
                                                                   image_maker):
    backend = backends["llava"]
    metric = VQAScore(backend=backend, answer="red cube on a table")
    result = metric.score(_requests(image_files[:1]))[0]
    text, context = backend.render(QUESTION.format("a red cube"))
    ids = backend.answer_token_ids(context, " red cube on a table")
    steps = backend.answer_logprobs([image_maker(0)], [text], [ids])[0]
    assert len(ids) > 1
    assert result.value == pytest.approx(math.exp(sum(steps) / len(steps)), rel=1e-6)


def test_repetition_penalty_comes_from_the_generation_config(image_files, backends):
    def loader():
        model, processor = build_tiny_vlm("qwen2_5_vl")
        model.generation_config.repetition_penalty = 1.05  # as Qwen2/2.5-VL ship
        return model, processor

    penalised = VQAScore(backend=HFVLMBackend("qwen-rp", loader=loader))
    assert penalised.processing().repetition_penalty == 1.05
    plain = VQAScore(backend=HFVLMBackend("qwen-rp", loader=loader), repetition_penalty=1.0)
    a = penalised.score(_requests(image_files[:1]))[0].value
    b = plain.score(_requests(image_files[:1]))[0].value
    assert a != pytest.approx(b, abs=1e-9)  # "Yes" occurs in the question: penalised


def test_unreadable_image_fails_alone(backends, image_files, tmp_path):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    requests = [ScoreRequest(0, image_files[0], "a cube"), ScoreRequest(1, bad, "a cube"),
                ScoreRequest(2, None, "a cube")]
    results = VQAScore(backend=backends["llava"]).score(requests)
    assert results[0].error is None
    assert results[0].value is not None
    assert results[1].value is None
    assert "unreadable image" in results[1].error
    assert "no file" in results[2].error


def test_needs_a_template_with_one_placeholder():
    with pytest.raises(ValueError, match="exactly one"):
        VQAScore("m", question="no placeholder")


def test_default_judge_is_the_reference_one():
    assert VQAScore().judge == "Qwen/Qwen3-VL-8B-Instruct"
