"""geneval2-vqascore: GenEval 2's prompt and its unnormalised sum over four Yes variants."""

from __future__ import annotations

import pytest
import torch

from evaluators.base import ScoreRequest
from evaluators.geneval2 import VQA_QUESTION, YES_ANSWERS, GenEval2VQAScore


def test_prompt_and_answer_list_are_the_reference_ones():
    assert VQA_QUESTION.format("a pig") == (
        'Does this image show "a pig"? Answer the question with Yes or No.')
    assert YES_ANSWERS == ("Yes", "yes", " yes", " Yes")


def test_value_is_the_sum_of_first_token_probabilities(backends, image_files, image_maker):
    backend = backends["qwen2_5_vl"]
    result = GenEval2VQAScore(backend=backend).score(
        [ScoreRequest(0, image_files[3], "a green backpack and a pig")])[0]
    text, _ = backend.render(VQA_QUESTION.format("a green backpack and a pig"))
    with torch.inference_mode():
        logits = backend.model(**backend.encode([image_maker(3)], [text])).logits[0, -1]
    probs = torch.softmax(logits.float(), -1)
    # the reference: probs[encode(a)[0]] for each string (Qwen adds no BOS), summed
    ids = [backend.tokenizer.encode(a, add_special_tokens=False)[0] for a in YES_ANSWERS]
    assert result.details["token_ids"] == ids
    assert result.value == pytest.approx(sum(probs[i].item() for i in ids), rel=1e-5)
    assert 0.0 < result.value < 1.0  # not normalised by the "no" side
    assert not result.question_values


def test_batch_equals_one_at_a_time(backends, image_files):
    metric = GenEval2VQAScore(backend=backends["paligemma"])
    requests = [ScoreRequest(i, p, f"prompt {i}") for i, p in enumerate(image_files)]
    batch = [r.value for r in metric.score(requests)]
    single = [metric.score([r])[0].value for r in requests]
    assert batch == pytest.approx(single, abs=1e-6)
