"""The shared-image-prefix path equals the unshared one (fp32, within 1e-4), and falls back
where it cannot apply: prefix-LM models, tokenisation that merges across the boundary, a
failed self-check."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
import torch

from evaluators import hf_flat, hf_prefix
from evaluators.hf_backend import HFVLMBackend
from evaluators.token_probs import Processing

SHARING = ("llava", "qwen2_5_vl", "qwen3_vl", "idefics3")
QUESTIONS = ["Is the cube red? Answer in one word.",
             "How many pigs are in the image? Answer in one word.",
             "Is the text 'drink' in the image?",
             'Does this figure show "a red cube on a blue table"? Please answer Yes or No.']
ANSWERS = ["Yes", "red cube", " four pigs on a table", "No"]


def sharpen(model):
    """Re-draw the matrices with std 0.25: the default init (0.02) leaves a tiny model almost
    blind to positions, so a position bug would change scores by only ~1e-4."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for weight in model.parameters():
            if weight.ndim >= 2:
                weight.normal_(0, 0.25, generator=generator)
    return model


@pytest.fixture(scope="module")
def pair_backends(tiny_dirs):
    """Per architecture: a sharing backend and an unshared one on the same weights."""
    out = {}
    for arch, folder in tiny_dirs.items():
        loaded = HFVLMBackend(str(folder), device="cpu")
        loaded.load()  # the production from_pretrained path
        model = sharpen(copy.deepcopy(loaded.model))
        # 12 pairs per forward: the three images of a workload share one prefill batch
        shared = HFVLMBackend(str(folder), batch_size=12,
                              loader=lambda m=model, p=loaded.processor: (m, p))
        flat = HFVLMBackend("flat", batch_size=5, share_prefix=False,
                            loader=lambda m=model, p=loaded.processor: (m, p))
        out[arch] = (shared, flat)
    return out


def _workload(backend, image_maker, system=None):
    # three sizes: different prefix lengths (Qwen's dynamic resolution, Idefics3's tiles)
    images = [image_maker(0, (28, 28)), image_maker(4, (30, 60)), image_maker(8, (120, 30))]
    rendered = [backend.render(q, system) for q in QUESTIONS]
    pairs = [(im, text, ctx) for im in images for text, ctx in rendered]
    return [p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs]


@pytest.mark.parametrize("penalty", [1.0, 1.3])
@pytest.mark.parametrize("arch", SHARING)
def test_shared_prefix_equals_unshared_next_token(pair_backends, image_maker, arch, penalty):
    shared, flat = pair_backends[arch]
    images, texts, _ = _workload(shared, image_maker)
    before = shared.counters["shared_pairs"]
    processing = Processing(repetition_penalty=penalty)
    a = shared.next_token_logprobs(images, texts, processing)
    b = flat.next_token_logprobs(images, texts, processing)
    assert shared.share_reason is None
    assert shared.counters["shared_pairs"] - before == len(texts)
    prefix = shared.split_prefix(texts[0])[0]
    lengths = {hf_flat.process(shared, [im], [prefix])["input_ids"].shape[1]
               for im in images[::len(QUESTIONS)]}
    # one prefill batch of three prefix lengths (left-padded); LLaVA's crop is fixed-size
    assert len(lengths) == (1 if arch == "llava" else 3)
    assert (a - b).abs().max().item() <= 1e-4
    assert (a.exp() - b.exp()).abs().max().item() <= 1e-5


@pytest.mark.parametrize("arch", SHARING)
def test_shared_prefix_equals_unshared_teacher_forced(pair_backends, image_maker, arch):
    shared, flat = pair_backends[arch]
    images, texts, contexts = _workload(shared, image_maker)
    answers = [shared.answer_token_ids(c, shared.spaced(c, ANSWERS[i % 4]))
               for i, c in enumerate(contexts)]
    assert len({len(a) for a in answers}) > 1  # unequal answer lengths in one batch
    processing = Processing(repetition_penalty=1.2)
    a = shared.answer_logprobs(images, texts, answers, processing)
    b = flat.answer_logprobs(images, texts, answers, processing)
    for x, y, ans in zip(a, b, answers, strict=True):
        assert len(x) == len(y) == len(ans)
        assert x == pytest.approx(y, abs=1e-4)


def test_system_turn_and_chunks_larger_than_the_batch(pair_backends, image_maker):
    shared, flat = pair_backends["qwen2_5_vl"]
    images, texts, _ = _workload(shared, image_maker, system="You are a careful judge.")
    assert all("careful judge" in t for t in texts)
    shared.batch_size = 3  # 4 questions per image: suffix rows run in two chunks
    try:
        a = shared.next_token_logprobs(images, texts)
    finally:
        shared.batch_size = 12
    assert (a - flat.next_token_logprobs(images, texts)).abs().max().item() <= 1e-4


def test_rope_deltas_never_leak_between_batches(pair_backends, image_maker):
    shared, flat = pair_backends["qwen2_5_vl"]
    images, texts, _ = _workload(shared, image_maker)
    shared.next_token_logprobs(images, texts)
    assert shared.model.model.rope_deltas is None
    # one image alone afterwards (unshared path) still equals a fresh computation
    single = shared.next_token_logprobs(images[:1], texts[:1])
    assert (single - flat.next_token_logprobs(images[:1], texts[:1])).abs().max() <= 1e-5


def test_prefix_lm_model_falls_back(pair_backends, image_maker):
    shared, flat = pair_backends["paligemma"]
    assert "prefix-LM" in shared.share_reason
    images, texts, _ = _workload(shared, image_maker)
    a = shared.next_token_logprobs(images, texts)
    assert (a - flat.next_token_logprobs(images, texts)).abs().max() <= 1e-5
    assert shared.counters["shared_pairs"] == 0


class _MergingTokenizer:
    """Characters as tokens, except that "ab" is one token; adds an end token if asked."""

    def __init__(self, end=None):
        self.end = end

    def __call__(self, text):
        ids, i = [], 0
        while i < len(text):
            ids.append(1000 if text.startswith("ab", i) else ord(text[i]))
            i += 2 if ids[-1] == 1000 else 1
        return SimpleNamespace(input_ids=ids + ([self.end] if self.end else []))


def test_suffix_ids_need_the_prefix_tokens_to_start_the_whole():
    tok = _MergingTokenizer()
    assert hf_prefix.suffix_ids(tok, "<img>x", "<img>xyz") == [ord("y"), ord("z")]
    assert hf_prefix.suffix_ids(tok, "<img>a", "<img>abc") is None  # "a"+"b" merge
    assert hf_prefix.suffix_ids(tok, "<img>", "<other>") is None
    assert hf_prefix.suffix_ids(tok, "<img>", "<img>") is None
    assert hf_prefix.suffix_ids(_MergingTokenizer(end=2), "<img>x", "<img>xy") is None


def test_pairs_that_cannot_share_go_unshared_in_the_same_call(pair_backends, image_maker):
    shared, flat = pair_backends["llava"]
    odd = "USER: <image> Is it red?\nASSISTANT:"  # no newline after the image: no prefix
    assert shared.split_prefix(odd) is None
    texts = [odd, shared.render("Is it red?")[0], shared.render("Is it blue?")[0]]
    images = [image_maker(0)] * 3
    before = dict(shared.counters)
    a = shared.next_token_logprobs(images, texts)
    assert shared.counters["flat_pairs"] - before.get("flat_pairs", 0) == 1
    assert shared.counters["shared_pairs"] - before.get("shared_pairs", 0) == 2
    assert (a - flat.next_token_logprobs(images, texts)).abs().max() <= 1e-5


def test_failed_self_check_switches_sharing_off(pair_backends, image_maker, monkeypatch):
    shared, flat = pair_backends["qwen2_5_vl"]
    backend = HFVLMBackend("fresh", batch_size=8,
                           loader=lambda: (shared.model, shared.processor))
    real = hf_prefix._positions
    monkeypatch.setattr(hf_prefix, "_positions",  # off by one: what a bug would do
                        lambda *a: real(*a) + 1)
    images, texts, _ = _workload(backend, image_maker)
    a = backend.next_token_logprobs(images, texts)
    assert "self-check failed" in backend.share_reason
    assert (a - flat.next_token_logprobs(images, texts)).abs().max() <= 1e-5
    assert backend.counters["flat_pairs"] >= len(texts)


def test_unsupported_reasons():
    def config(head=True, **text):
        cfg = SimpleNamespace(model_type="x", **text)
        cfg.get_text_config = lambda: cfg
        return SimpleNamespace(config=cfg, model=object(),
                               get_output_embeddings=lambda: object() if head else None)

    proc = SimpleNamespace(chat_template="t", image_token="<image>")
    assert hf_prefix.unsupported_reason(config(), proc) is None
    assert "no separate language-model head" in hf_prefix.unsupported_reason(
        config(head=False), proc)
    assert "soft-capping" in hf_prefix.unsupported_reason(
        config(final_logit_softcapping=30.0), proc)
    assert "hybrid" in hf_prefix.unsupported_reason(
        config(layer_types=["full_attention", "sliding_attention"]), proc)
    assert "sliding" in hf_prefix.unsupported_reason(
        config(use_sliding_window=True, sliding_window=4096), proc)
    assert "no chat template" in hf_prefix.unsupported_reason(
        config(), SimpleNamespace(chat_template=None, image_token="<image>"))


def test_cache_with_sliding_layers_is_refused():
    cache = SimpleNamespace(layers=[type("DynamicSlidingWindowLayer", (), {})()])
    with pytest.raises(hf_prefix.SharingUnsupported, match="DynamicSlidingWindowLayer"):
        hf_prefix._check_cache(cache)


@pytest.mark.parametrize("answers", [False, True])
@pytest.mark.parametrize("arch", SHARING)
def test_the_head_runs_once_per_read(pair_backends, image_maker, arch, answers):
    """Each suffix row's last hidden state is gathered before the LM head: 12 questions of
    4 lengths are 12 rows of logits (the head on every row × every distinct last position
    would be 48), and teacher forcing reads one row per answer token."""
    shared, _ = pair_backends[arch]
    verified, shared.prefix_verified = shared.prefix_verified, True  # the unshared
    images, texts, contexts = _workload(shared, image_maker)  # self-check calls the head too
    rows = []
    hook = shared.model.get_output_embeddings().register_forward_hook(
        lambda module, args, out: rows.append(args[0].shape[:-1].numel()))
    try:
        if answers:
            ids = [shared.answer_token_ids(c, a) for c, a in zip(contexts, ANSWERS * 3,
                                                                  strict=True)]
            shared.answer_logprobs(images, texts, ids)
            expected = sum(len(i) for i in ids)
        else:
            shared.next_token_logprobs(images, texts)
            expected = len(texts)
    finally:
        hook.remove()
        shared.prefix_verified = verified
    assert len({len(t) for t in texts}) > 1  # the questions end at different positions
    assert rows[0] == 1 * len(images[::len(QUESTIONS)])  # the prefill keeps one position
    assert sum(rows[1:]) == expected
