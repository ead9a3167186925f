"""soft-tifa: GenEval 2's per-question soft scores, incl. the bare-space count variant."""

from __future__ import annotations

import math

import pytest
import torch

from evaluators.base import Question, ScoreRequest
from evaluators.geneval2 import QUESTION_SUFFIX, SoftTIFA, answer_strings, geometric_mean

QUESTIONS = (Question("0", "How many pigs are in the image?", "four", "count"),
             Question("1", "Is the backpack green?", "Yes", "attribute"),
             Question("2", "Are there any pigs in the image?", "Yes", "object"))


def _probs(backend, image, question):
    text, _ = backend.render(question + QUESTION_SUFFIX)
    with torch.inference_mode():
        logits = backend.model(**backend.encode([image], [text])).logits[0, -1]
    return torch.softmax(logits.float(), -1)


def test_answer_strings_follow_the_reference():
    assert answer_strings("How many pigs are in the image?", "four") == [
        "four", "Four", " four", " Four", "4", " 4"]
    assert answer_strings("How many pigs?", "eleven")[-2:] == ["other", " other"]
    assert answer_strings("Is the pig pink?", "No") == ["Yes", "yes", " yes", " Yes"]
    with pytest.raises(ValueError, match="without an expected answer"):
        answer_strings("How many pigs?", None)


def test_count_score_is_the_hand_sum_including_the_space_token(backends, image_files,
                                                               image_maker):
    backend = backends["qwen2_5_vl"]
    result = SoftTIFA(backend=backend).score(
        [ScoreRequest(0, image_files[0], "four pigs", QUESTIONS)])[0]
    probs = _probs(backend, image_maker(0), QUESTIONS[0].text)
    # the reference: probs[encode(a)[0]] per answer string (Qwen adds no BOS), summed
    first = [backend.tokenizer.encode(a, add_special_tokens=False)[0]
             for a in ("four", "Four", " four", " Four", "4", " 4")]
    assert backend.tokenizer.convert_ids_to_tokens(first[-1]) == "Ġ"  # ' 4' -> ' ' + '4'
    assert result.question_details["0"]["token_ids"] == first
    hand = sum(probs[i].item() for i in first)
    assert result.question_values["0"] == pytest.approx(hand, rel=1e-5)


def test_yes_questions_and_image_aggregates(backends, image_files, image_maker):
    backend = backends["qwen2_5_vl"]
    result = SoftTIFA(backend=backend).score(
        [ScoreRequest(0, image_files[0], "four pigs", QUESTIONS)])[0]
    probs = _probs(backend, image_maker(0), QUESTIONS[1].text)
    ids = backend.tokenizer.convert_tokens_to_ids
    hand = sum(probs[ids(t)].item() for t in ("Yes", "yes", "Ġyes", "ĠYes"))
    assert result.question_values["1"] == pytest.approx(hand, rel=1e-5)
    values = list(result.question_values.values())
    assert set(result.question_values) == {"0", "1", "2"}
    assert result.value == pytest.approx(sum(values) / 3)
    assert result.details["gm"] == pytest.approx(math.exp(sum(map(math.log, values)) / 3))
    assert result.question_details["0"]["skill"] == "count"


def test_a_bad_question_fails_alone(backends, image_files):
    questions = (*QUESTIONS[1:], Question("9", "How many dogs are in the image?", None))
    result = SoftTIFA(backend=backends["llava"]).score(
        [ScoreRequest(0, image_files[0], "p", questions)])[0]
    assert result.question_values["9"] is None
    assert "without an expected answer" in result.question_details["9"]["error"]
    assert result.value is not None
    assert result.details["n_failed"] == 1


def test_prompt_without_questions_is_an_error(backends, image_files):
    result = SoftTIFA(backend=backends["llava"]).score([ScoreRequest(0, image_files[0], "p")])[0]
    assert result.value is None
    assert "no questions" in result.error


def test_geometric_mean_with_a_zero_is_zero():
    assert geometric_mean([0.5, 0.0]) == 0.0
    assert geometric_mean([0.25, 1.0]) == pytest.approx(0.5)
