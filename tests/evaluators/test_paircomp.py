"""paircomp: PairComp's exact question and its {yes,Yes,YES} / {no,No,NO} ratio."""

from __future__ import annotations

import math

import pytest
import torch

from evaluators.base import ScoreRequest
from evaluators.paircomp import INTERNVL2_5_SYSTEM, QUESTION, PairComp

CAPTION = "a red cube on a blue table"


def _request(path, item_id=0):
    return ScoreRequest(item_id, path, CAPTION, extra={"pair": 7, "caption": 1})


def test_question_is_the_string_the_reference_code_sends():
    assert QUESTION.format("a cat") == (
        ' Does this image match the description "a cat", please directly respond with yes or no')


def test_rendered_prompt_has_a_space_after_the_image_newline(backends):
    text, _ = backends["llava"].render(QUESTION.format(CAPTION))
    assert '<image>\n Does this image match the description "a red cube on a blue table", ' \
           "please directly respond with yes or no\nASSISTANT:" in text


def _hand_ratio(backend, image, top_k=None):
    """S from a plain forward pass, with the token ids looked up by hand."""
    text, context = backend.render(QUESTION.format(CAPTION))
    with torch.inference_mode():
        logits = backend.model(**backend.encode([image], [text])).logits[0, -1].float()
    if top_k is not None:
        kth = torch.topk(logits, top_k).values[-1]
        logits = torch.where(logits < kth, torch.tensor(float("-inf")), logits)
    p = torch.softmax(logits, -1).double()
    sep = "" if context.endswith("\n") else "Ġ"
    ids = backend.tokenizer.convert_tokens_to_ids
    p_yes = sum(p[ids(sep + w)] for w in ("yes", "Yes", "YES"))
    p_no = sum(p[ids(sep + w)] for w in ("no", "No", "NO"))
    return (p_yes / (p_yes + p_no)).item()


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "llava"])
def test_ratio_equals_hand_computation_from_logits(backends, image_files, image_maker, arch):
    metric = PairComp(backend=backends[arch], top_k=None)
    result = metric.score([_request(image_files[1])])[0]
    expected = _hand_ratio(backends[arch], image_maker(1))
    # fp32 log-softmax in the backend vs an fp32 softmax here: equal to float32 precision
    assert result.details["raw"] == pytest.approx(expected, abs=1e-6)
    assert result.value == round(result.details["raw"], 4)
    assert abs(result.value - expected) <= 5e-5 + 1e-6
    assert result.details["pair"] == 7
    assert result.details["caption"] == 1
    assert len(set(result.details["yes_ids"])) == 3


def test_reference_top_k_drops_tokens_outside_the_top_k(backends, image_files, image_maker):
    backend = backends["qwen2_5_vl"]
    for k in (50, 200):
        result = PairComp(backend=backend, top_k=k).score([_request(image_files[2])])[0]
        expected = _hand_ratio(backend, image_maker(2), top_k=k)
        if math.isnan(expected):
            assert result.value is None
            assert "top-k" in result.error
        else:
            assert result.details["raw"] == pytest.approx(expected, abs=1e-6)


def test_all_six_tokens_outside_top_k_is_an_error_not_a_number(backends, image_files):
    result = PairComp(backend=backends["llava"], top_k=1).score([_request(image_files[0])])[0]
    if result.value is None:
        assert result.error == "no yes/no token among the top-k next tokens (0/0)"
    else:  # the single kept token happens to be one of the six
        assert result.value in (0.0, 1.0)


def test_values_are_rounded_to_four_decimals_and_batch_invariant(backends, image_files):
    metric = PairComp(backend=backends["idefics3"], top_k=None)
    requests = [_request(p, i) for i, p in enumerate(image_files)]
    batch = metric.score(requests)
    single = [metric.score([r])[0] for r in requests]
    for b, s in zip(batch, single, strict=True):
        assert b.value == round(b.value, 4)
        assert 0.0 <= b.value <= 1.0
        assert b.details["raw"] == pytest.approx(s.details["raw"], abs=1e-5)


def test_needs_an_explicit_judge():
    with pytest.raises(ValueError, match="needs a judge model"):
        PairComp()
    with pytest.raises(ValueError, match="top_k"):
        PairComp("m", top_k=0)


def test_reference_system_message_on_request(backends, image_files):
    metric = PairComp(backend=backends["qwen2_5_vl"], system="internvl2_5", top_k=None)
    text, _ = backends["qwen2_5_vl"].render(QUESTION.format(CAPTION), metric.system)
    assert text.startswith("<|im_start|>system\n" + INTERNVL2_5_SYSTEM + "<|im_end|>\n")
    assert metric.score([_request(image_files[0])])[0].error is None
