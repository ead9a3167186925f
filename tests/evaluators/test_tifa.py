"""tifa: GenEval 2's binary TIFA, the decoded argmax token matched against the answers."""

from __future__ import annotations

import pytest
import torch

from evaluators.base import Question, ScoreRequest
from evaluators.geneval2 import TIFA
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
    metric = TIFA(backend=backend)
    request = ScoreRequest(0, None, "p", (question,))
    _, context = backend.render(question.text)
    read = metric.read(_logprobs_peaked_at(backend, token), context,
                       Query(question.id, question.text), request)
    assert read.value == expected
    assert read.details["pred"] == backend.tokenizer.convert_tokens_to_string([token])


def test_scores_are_binary_and_averaged(backends, image_files):
    result = TIFA(backend=backends["idefics3"]).score(
        [ScoreRequest(0, image_files[1], "p", (COUNT, YES))])[0]
    values = list(result.question_values.values())
    assert set(values) <= {0.0, 1.0}
    assert result.value == pytest.approx(sum(values) / 2)
    assert "soft" in result.question_details["1"]
