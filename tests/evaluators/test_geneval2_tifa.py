"""geneval2-tifa: GenEval 2's binary TIFA (decoded argmax vs the answers); `tifa` is reserved."""

from __future__ import annotations

import pytest
import torch

from evaluators.base import Question, ScoreRequest
from evaluators.geneval2 import GenEval2TIFA
from evaluators.vlm_metric import Query

COUNT = Question("0", "How many pigs are in the image?", "four", "count")
YES = Question("1", "Is the backpack green?", "Yes", "attribute")


def _logprobs_peaked_at(backend, token: str) -> torch.Tensor:
    logits = torch.zeros(len(backend.tokenizer))
    logits[backend.tokenizer.convert_tokens_to_ids(token)] = 10.0
    return torch.log_softmax(logits, -1)


@pytest.mark.parametrize(("question", "token", "expected"), [
    (YES, "Yes", 1.0), (YES, "Ġyes", 1.0), (YES, "No", 0.0),
    (COUNT, "Four", 1.0), (COUNT, "4", 1.0), (COUNT, "Ġfour", 1.0),
    # ' 4' starts with the bare space: its decoded argmax ' ' is not an answer string
    (COUNT, "Ġ", 0.0), (COUNT, "three", 0.0),
])
def test_binary_score_compares_the_decoded_argmax(backends, question, token, expected):
    backend = backends["qwen2_5_vl"]
    metric = GenEval2TIFA(backend=backend)
    request = ScoreRequest(0, None, "p", (question,))
    _, context = backend.render(question.text)
    read = metric.read(_logprobs_peaked_at(backend, token), context,
                       Query(question.id, question.text), request)
    assert read.value == expected
    assert read.details["pred"] == backend.tokenizer.convert_tokens_to_string([token])


def test_scores_are_binary_and_averaged(backends, image_files):
    result = GenEval2TIFA(backend=backends["idefics3"]).score(
        [ScoreRequest(0, image_files[1], "p", (COUNT, YES))])[0]
    values = list(result.question_values.values())
    assert set(values) <= {0.0, 1.0}
    assert result.value == pytest.approx(sum(values) / 2)
    assert "soft" in result.question_details["1"]


def test_the_name_tifa_is_a_clear_error_pointing_to_geneval2_tifa():
    from evaluators.registry import UnknownEvaluatorError, evaluator_class

    with pytest.raises(UnknownEvaluatorError) as info:
        evaluator_class("tifa")
    message = str(info.value)
    assert "multiple-choice" in message
    assert "'geneval2-tifa'" in message


@pytest.mark.parametrize("metric", ["geneval2-tifa", "soft-tifa"])
def test_multiple_choice_questions_are_never_scored_as_yes_no(backends, image_files, metric):
    from evaluators.registry import create_evaluator

    colour = Question("2", "What color is the backpack?", "green", "color")
    result = create_evaluator(metric, backend=backends["qwen2_5_vl"]).score(
        [ScoreRequest(0, image_files[0], "p", (YES, colour))])[0]
    assert result.question_values["2"] is None
    assert "multiple-choice" in result.question_details["2"]["error"]
    assert result.question_values["1"] is not None  # the yes/no question still scores
    assert result.details["n_failed"] == 1
