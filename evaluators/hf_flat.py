"""The unshared path: every (image, text) pair is one row of a left-padded batch.

Left padding with the attention mask puts every row's next-token position in the last
column, so only that position's logits are computed (``logits_to_keep``); softmax in fp32.
Teacher-forced answers are appended after each row's real tokens and re-padded on the left.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from evaluators.token_probs import Processing, process_logits, seen_tokens

# Processors that take one list of images per prompt (a flat list is rejected)
NESTED_IMAGES = ("Idefics3Processor", "Idefics2Processor", "SmolVLMProcessor")
# Per-token inputs besides input_ids/attention_mask; an appended answer token is text (0),
# except that PaliGemma's token_type_ids mark its causal "suffix" (the answer) with 1.
_PER_TOKEN_KEYS = ("token_type_ids", "mm_token_type_ids")
_SUFFIX_TYPE_1 = ("PaliGemmaProcessor",)


def process(backend: Any, images: Sequence[Any], texts: Sequence[str]) -> Any:
    """Processor inputs for a batch (CPU tensors, left-padded); safe from worker threads."""
    proc = backend.processor
    imgs: list[Any] = list(images)
    if type(proc).__name__ in NESTED_IMAGES:
        imgs = [[im] for im in imgs]
    with backend.processor_lock:  # the Rust tokenizer's padding state is not thread-safe
        inputs = proc(images=imgs, text=list(texts), padding=True, return_tensors="pt")
    inputs.pop("labels", None)  # PaliGemmaProcessor always adds labels
    return inputs


def to_device(backend: Any, inputs: Any) -> Any:
    """Move processor inputs to the model's device; floating inputs to its dtype."""
    model = backend.model
    inputs = inputs.to(model.device)
    for key, value in inputs.items():
        if torch.is_tensor(value) and value.is_floating_point():
            inputs[key] = value.to(model.dtype)
    return inputs


@torch.inference_mode()
def next_token(backend: Any, inputs: Any, processing: Processing) -> torch.Tensor:
    """[N, V] fp32 log-probabilities (CPU) of the token after each row."""
    inputs = to_device(backend, inputs)
    logits = backend.model(**inputs, logits_to_keep=1).logits[:, -1, :].float()
    seen = None
    if processing.repetition_penalty != 1.0:
        seen = seen_tokens(inputs["input_ids"], inputs["attention_mask"], logits.shape[-1])
    return torch.log_softmax(process_logits(logits, seen, processing), dim=-1).cpu()


@torch.inference_mode()
def answers(backend: Any, inputs: Any, answer_ids: Sequence[Sequence[int]],
            processing: Processing) -> list[list[float]]:
    """Teacher forcing: log P of each answer token with the answer appended to its row."""
    fill = {"token_type_ids": int(type(backend.processor).__name__ in _SUFFIX_TYPE_1)}
    inputs = append_tokens(to_device(backend, inputs), answer_ids,
                           backend.tokenizer.pad_token_id or 0, fill)
    n_max = max(len(a) for a in answer_ids)
    logits = backend.model(**inputs, logits_to_keep=n_max + 1).logits.float()
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    width = ids.shape[1]
    seen = seen_tokens(ids[:, : width - n_max], mask[:, : width - n_max], logits.shape[-1])
    result: list[list[float]] = [[] for _ in answer_ids]
    for j in range(n_max):
        # column j of the kept logits predicts the token at position width - n_max + j
        target = ids[:, width - n_max + j]
        lp = torch.log_softmax(process_logits(logits[:, j], seen, processing), dim=-1)
        for i, ans in enumerate(answer_ids):
            k = j - (n_max - len(ans))  # index within row i's answer (rows are aligned)
            if k >= 0:
                result[i].append(float(lp[i, target[i]]))
        seen[torch.arange(len(answer_ids)), target] |= mask[:, width - n_max + j].bool()
    return result


def append_tokens(inputs: Any, answer_ids: Sequence[Sequence[int]], pad_id: int,
                  fill: dict[str, int]) -> Any:
    """Append each row's answer ids after its real tokens and re-pad on the left.

    Other per-token inputs get ``fill[key]`` (default 0) at the answer positions.
    """
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    rows = []
    for i, ans in enumerate(answer_ids):
        real = mask[i].bool()
        tail = torch.tensor(list(ans), dtype=ids.dtype, device=ids.device)
        extra = {k: torch.full_like(tail, fill.get(k, 0)) for k in _PER_TOKEN_KEYS
                 if k in inputs}
        rows.append((ids[i][real], tail, {k: inputs[k][i][real] for k in extra}, extra))
    width = max(len(r[0]) + len(r[1]) for r in rows)
    new_ids = torch.full((len(rows), width), pad_id, dtype=ids.dtype, device=ids.device)
    new_mask = torch.zeros_like(new_ids, dtype=mask.dtype)
    per_token = {k: torch.zeros_like(new_ids, dtype=inputs[k].dtype) for k in rows[0][3]}
    for i, (real, tail, own, extra) in enumerate(rows):
        n = len(real) + len(tail)
        new_ids[i, width - n:] = torch.cat([real, tail])
        new_mask[i, width - n:] = 1
        for k in per_token:
            per_token[k][i, width - n:] = torch.cat([own[k], extra[k]])
    inputs["input_ids"], inputs["attention_mask"] = new_ids, new_mask
    inputs.update(per_token)
    return inputs
