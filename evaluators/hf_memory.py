"""Memory: pairs per forward from the free memory, and recognising out-of-memory errors."""

from __future__ import annotations

import gc
import os
from typing import Any

import torch

# Use at most this share of the free memory for one forward's tensors (activations of
# the vision tower and the MLP peaks are not in the estimate).
_SAFETY = 0.5
_MAX_PAIRS = {"cuda": 256, "cpu": 16}  # CPU throughput stops growing early


def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation failure (CUDA, or a CPU allocator refusing)."""
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text
                                              or "can't allocate memory" in text)


def release(device: torch.device) -> None:
    """Give cached blocks back after an out-of-memory error."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def free_bytes(device: torch.device) -> int:
    """Free memory where the model runs (GPU: the CUDA driver's count; CPU: available RAM)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError):
        return 4 << 30


def bytes_per_token(model: Any) -> int:
    """KV cache plus one layer's transient activations per token, in the model's dtype."""
    config = model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden = int(getattr(text, "hidden_size", 4096))
    heads = int(getattr(text, "num_attention_heads", 32))
    kv_heads = int(getattr(text, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(text, "head_dim", None) or hidden // heads)
    layers = int(getattr(text, "num_hidden_layers", 32))
    inter = int(getattr(text, "intermediate_size", 4 * hidden))
    size = torch.finfo(model.dtype).bits // 8 if model.dtype.is_floating_point else 4
    return (2 * layers * kv_heads * head_dim + 4 * hidden + 2 * inter) * size


def logit_bytes(model: Any) -> int:
    """The logits of one read: the head's output in the model's dtype, its fp32 copy, the
    processed copy and the log-softmax (4 bytes each), one vocabulary row each."""
    config = model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    size = torch.finfo(model.dtype).bits // 8 if model.dtype.is_floating_point else 4
    return int(getattr(text, "vocab_size", 152_064)) * (size + 3 * 4)


def auto_batch_size(model: Any, tokens_per_pair: int, free: int | None = None) -> int:
    """(image, question) pairs per forward that fit in the free memory (at least 1)."""
    device = model.device
    free = free_bytes(device) if free is None else free
    per_pair = max(1, tokens_per_pair) * bytes_per_token(model) + logit_bytes(model)
    cap = _MAX_PAIRS["cuda" if device.type == "cuda" else "cpu"]
    return max(1, min(cap, int(free * _SAFETY) // per_pair))
