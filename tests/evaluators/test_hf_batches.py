"""Micro-batches: bucketing by image size, preparation on a worker thread, batch size from
free memory, and halving on out-of-memory (injected) without changing any score."""

from __future__ import annotations

import threading

import pytest
import torch

from evaluators import hf_batches, hf_flat, hf_memory
from evaluators.hf_backend import HFVLMBackend
from evaluators.token_probs import seen_tokens

QUESTIONS = ["Is the cube red?", "Is it blue?", "How many pigs are there?"]


@pytest.fixture
def backend(backends):
    """A fresh backend (own batch size and counters) on the loaded tiny Qwen2.5-VL."""
    loaded = backends["qwen2_5_vl"]
    return HFVLMBackend("q", batch_size=4, loader=lambda: (loaded.model, loaded.processor))


def _pairs(backend, image_maker, n_images=3):
    images = [image_maker(i, (40 + 30 * i, 40)) for i in range(n_images)]
    texts = [backend.render(q)[0] for q in QUESTIONS]
    return [im for im in images for _ in texts], texts * n_images


def _reference(backends, images, texts):
    loaded = backends["qwen2_5_vl"]
    flat = HFVLMBackend("ref", batch_size=1, share_prefix=False,
                        loader=lambda: (loaded.model, loaded.processor))
    return flat.next_token_logprobs(images, texts)


def test_unshared_pairs_are_bucketed_by_image_size(backend, image_maker):
    backend.disable_sharing("test")
    sizes = [(90, 90), (30, 30), (60, 60), (30, 30), (90, 90)]
    pairs = [hf_batches.Pair(i, image_maker(0, s), "t") for i, s in enumerate(sizes)]
    batches = hf_batches.plan(backend, pairs)
    assert [[p.index for p in b.flat] for b in batches] == [[1, 3, 2, 0], [4]]


def test_groups_are_packed_whole_up_to_the_batch_size(backend, image_maker):
    images, texts = _pairs(backend, image_maker)
    pairs = [hf_batches.Pair(i, im, t) for i, (im, t) in enumerate(zip(images, texts,
                                                                       strict=True))]
    batches = hf_batches.plan(backend, pairs)
    assert [[len(g.pairs) for g in b.groups] for b in batches] == [[3], [3], [3]]
    backend.batch_size = 6
    batches = hf_batches.plan(backend, pairs)
    assert [[len(g.pairs) for g in b.groups] for b in batches] == [[3, 3], [3]]


def test_preparation_runs_on_the_worker_thread(backend, image_maker, monkeypatch):
    threads = []
    real = hf_flat.process

    def spy(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(hf_flat, "process", spy)
    backend.prefix_verified = True  # the one-off self-check prepares on the main thread
    backend.next_token_logprobs(*_pairs(backend, image_maker))
    assert threads
    assert all(name.startswith("concord-prep") for name in threads)


class _OOMAbove:
    """Wraps a model: a forward with more than ``limit`` rows raises CUDA's OOM error (the
    whole model, and its base model, which the shared path calls before the LM head)."""

    def __init__(self, model, limit):
        self.inner, self.limit, self.refused = model, limit, 0
        self.model = lambda **kwargs: self._forward(model.model, kwargs)

    def __call__(self, **kwargs):
        return self._forward(self.inner, kwargs)

    def _forward(self, module, kwargs):
        if kwargs["input_ids"].shape[0] > self.limit:
            self.refused += 1
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return module(**kwargs)

    def eval(self):
        return self

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.parametrize("share", [True, False])
def test_out_of_memory_halves_the_batch_and_goes_on(backends, image_maker, share, caplog):
    loaded = backends["qwen2_5_vl"]
    wrapped = _OOMAbove(loaded.model, limit=2)
    backend = HFVLMBackend("q", batch_size=8, share_prefix=share,
                           loader=lambda: (wrapped, loaded.processor))
    backend.prefix_verified = True  # the self-check would add forwards of its own
    images, texts = _pairs(backend, image_maker)
    got = backend.next_token_logprobs(images, texts)
    assert wrapped.refused >= 1
    assert backend.batch_size <= 2
    assert backend.counters["oom_halvings"] >= 1
    assert "out of memory at" in caplog.text
    assert (got - _reference(backends, images, texts)).abs().max() <= 1e-4


def test_out_of_memory_with_one_pair_is_a_clear_error(backends, image_maker):
    loaded = backends["qwen2_5_vl"]
    wrapped = _OOMAbove(loaded.model, limit=0)
    backend = HFVLMBackend("q", batch_size=4, share_prefix=False,
                           loader=lambda: (wrapped, loaded.processor))
    with pytest.raises(hf_batches.OutOfMemory, match=r"one \(image, question\) pair per forward"):
        backend.next_token_logprobs(*_pairs(backend, image_maker, 1))


def test_other_errors_are_not_taken_for_out_of_memory():
    assert hf_memory.is_oom(torch.OutOfMemoryError("x"))
    assert hf_memory.is_oom(RuntimeError("DefaultCPUAllocator: can't allocate memory: 9 GB"))
    assert not hf_memory.is_oom(RuntimeError("shape mismatch"))
    assert not hf_memory.is_oom(ValueError("out of memory"))


def test_auto_batch_size_follows_free_memory(backends):
    model = backends["qwen2_5_vl"].model
    per_token = hf_memory.bytes_per_token(model)
    assert per_token == (2 * 2 * 2 * 8 + 4 * 32 + 2 * 64) * 4  # tiny config, fp32
    # one row of logits per pair (head output, fp32 copy, processed copy, log-softmax)
    assert hf_memory.logit_bytes(model) == 465 * (4 + 3 * 4)
    per_pair = per_token * 100 + 465 * 16
    assert hf_memory.auto_batch_size(model, 100, free=per_pair * 10) == 5
    assert hf_memory.auto_batch_size(model, 100, free=per_pair * 10 - 2) == 4
    assert hf_memory.auto_batch_size(model, 100, free=0) == 1
    assert hf_memory.auto_batch_size(model, 100, free=1 << 50) == 16  # CPU cap


def test_auto_batch_size_is_resolved_on_first_use(backends, image_maker):
    loaded = backends["qwen2_5_vl"]
    backend = HFVLMBackend("q", batch_size="auto",
                           loader=lambda: (loaded.model, loaded.processor))
    images, texts = _pairs(backend, image_maker, 1)
    got = backend.next_token_logprobs(images, texts)
    assert isinstance(backend.batch_size, int) and backend.batch_size >= 1
    assert (got - _reference(backends, images, texts)).abs().max() <= 1e-4


@pytest.mark.parametrize("size", [0, -1, "big", 1.5])
def test_bad_batch_size_is_refused(size):
    with pytest.raises(ValueError, match="batch_size must be >= 1 or 'auto'"):
        HFVLMBackend("m", batch_size=size)


def test_seen_tokens_ignores_masked_copies_of_a_real_token():
    ids = torch.tensor([[5, 7, 5, 9]])
    mask = torch.tensor([[1, 1, 0, 0]])  # the second 5 is padding or an answer token
    for _ in range(20):  # duplicate scatter writes have no defined order
        seen = seen_tokens(ids, mask, 10)
        assert seen[0].nonzero().flatten().tolist() == [5, 7]
