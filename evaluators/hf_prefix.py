"""The shared-image-prefix path: prefill system + image once per image into a KV cache,
then run that image's question suffixes as one right-padded batch on the expanded cache.

The prefix is everything the chat template renders before the question text (system turn,
including a template's default one, the user turn's start and the image), so it ends right
after the image. Tokenising the prefix alone must give the first tokens of the whole prompt
(otherwise the pair goes through the unshared path); the suffix ids are the rest of the
whole prompt's ids. Prefixes are left-padded (images of different sizes or tile counts give
different prefix lengths), suffixes right-padded, and each row is read at its own last real
token: its last hidden state is gathered before the LM head, so the head computes one row
of logits per read, never a row per (suffix, distinct length). M-RoPE models
(Qwen2/2.5/3-VL) get explicit 3-D positions: the prefill's from ``get_rope_index`` and the
suffix's ``arange(P_i, P_i + S) + rope_deltas_i``; the model-wide ``rope_deltas`` is cleared
after every batch so it never leaks into the next.

Models that cannot share are refused up front (:func:`unsupported_reason`): prefix-LM
attention (PaliGemma: the question attends bidirectionally to itself and the image),
sliding-window or hybrid caches, templates without an image token, models without a
separate LM head (or whose logits are rescaled after it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from evaluators import hf_flat
from evaluators.token_probs import Processing, process_logits, seen_tokens

# A question text no template rewrites, to find where the question starts.
SENTINEL = "\u2063concord-question\u2063"
_PREFIX_LM_PROCESSORS = ("PaliGemmaProcessor",)
_PREFIX_LM_TYPES = ("paligemma", "gemma3")


class SharingUnsupported(RuntimeError):
    """The loaded model turned out not to support a shared prefix (e.g. its cache type)."""


def unsupported_reason(model: Any, processor: Any) -> str | None:
    """Why this model cannot share an image prefix between questions (None: it can)."""
    config = model.config
    if type(processor).__name__ in _PREFIX_LM_PROCESSORS or \
            getattr(config, "model_type", "") in _PREFIX_LM_TYPES:
        return "prefix-LM attention (the prompt attends to itself bidirectionally)"
    if not getattr(processor, "chat_template", None):
        return "no chat template"
    if not getattr(processor, "image_token", None):
        return "the processor names no image token"
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if getattr(model, "model", None) is None or model.get_output_embeddings() is None:
        return "no separate language-model head to gather the last hidden states for"
    if getattr(text, "final_logit_softcapping", None) or getattr(text, "logit_scale", None):
        return "logits rescaled after the head (soft-capping or a logit scale)"
    layer_types = set(getattr(text, "layer_types", None) or ())
    if layer_types - {"full_attention"}:
        return f"sliding-window or hybrid attention layers ({', '.join(sorted(layer_types))})"
    if getattr(text, "use_sliding_window", False) and getattr(text, "sliding_window", None):
        return "sliding-window attention"
    return None


def prefix_of(rendered_with_sentinel: str, image_token: str) -> str | None:
    """The text before the question, if it contains the image (else None)."""
    at = rendered_with_sentinel.find(SENTINEL)
    prefix = rendered_with_sentinel[:at] if at > 0 else ""
    return prefix if image_token in prefix else None


def suffix_ids(tokenizer: Any, prefix: str, text: str) -> list[int] | None:
    """The ids of ``text`` after ``prefix``, if tokenising the prefix alone gives the
    first ids of the whole (no merge across the boundary, no special token at the end)."""
    if not text.startswith(prefix) or len(text) == len(prefix):
        return None
    head = tokenizer(prefix).input_ids
    whole = tokenizer(text).input_ids
    if len(whole) <= len(head) or whole[: len(head)] != head:
        return None
    return list(whole[len(head):])


@dataclass(slots=True)
class Prepared:
    """CPU inputs of one shared batch: the images' prefixes and the suffix rows."""

    prefix: Any                      # processor output, one left-padded row per image
    rows: list[int]                  # image row of each suffix row
    ids: torch.Tensor                # [R, S] suffix (+ answer) ids, right-padded
    mask: torch.Tensor               # [R, S]
    lengths: list[int]               # suffix length of each row without its answer
    answers: list[tuple[int, ...]] | None


def prepare(backend: Any, images: Sequence[Any], prefixes: Sequence[str],
            rows: Sequence[tuple[int, Sequence[int], Sequence[int] | None]]) -> Prepared:
    """Process the prefixes and pad the suffixes; ``rows`` = (image row, suffix, answer)."""
    prefix = hf_flat.process(backend, images, prefixes)
    full = [list(s) + list(a or ()) for _, s, a in rows]
    width = max(len(f) for f in full)
    ids = torch.full((len(rows), width), backend.tokenizer.pad_token_id or 0, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, f in enumerate(full):
        ids[i, : len(f)] = torch.tensor(f, dtype=torch.long)
        mask[i, : len(f)] = 1
    answers = None if rows[0][2] is None else [tuple(a or ()) for _, _, a in rows]
    return Prepared(prefix, [r for r, _, _ in rows], ids, mask, [len(s) for _, s, _ in rows],
                    answers)


@torch.inference_mode()
def run(backend: Any, prep: Prepared, processing: Processing) -> list[Any]:
    """Prefill the prefixes once, then the suffix rows in chunks of ``backend.batch_size``.

    Returns per row: a [V] log-prob tensor (next token) or the answer tokens' log-probs.
    """
    model = backend.model
    prefix = hf_flat.to_device(backend, prep.prefix)
    inner = getattr(model, "model", None)
    positions, deltas = _rope_index(inner, prefix)
    kwargs = dict(prefix)
    if positions is not None:
        kwargs["position_ids"] = positions
    try:
        cache = model(**kwargs, use_cache=True, logits_to_keep=1).past_key_values
        _check_cache(cache)
        out: list[Any] = []
        for start in range(0, len(prep.rows), backend.batch_size):
            chunk = range(start, min(start + backend.batch_size, len(prep.rows)))
            out += _suffix_chunk(backend, cache, prefix, prep, list(chunk), deltas, processing)
        return out
    finally:
        if inner is not None and hasattr(inner, "rope_deltas"):
            inner.rope_deltas = None  # model-wide state: never carry it to the next batch


def _rope_index(inner: Any, prefix: Any) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """3-D prefill positions and per-row deltas for M-RoPE models; (None, None) otherwise."""
    fn = getattr(inner, "get_rope_index", None)
    if fn is None or "image_grid_thw" not in prefix:
        return None, None
    keys = ("input_ids", "mm_token_type_ids", "image_grid_thw", "attention_mask")
    return fn(**{k: prefix[k] for k in keys if k in prefix})


def _check_cache(cache: Any) -> None:
    layers = getattr(cache, "layers", None)
    if not layers or any(type(layer).__name__ != "DynamicLayer" for layer in layers):
        kinds = sorted({type(layer).__name__ for layer in layers or ()})
        raise SharingUnsupported(f"cache layers {kinds or type(cache).__name__} cannot be "
                                 "expanded over questions")


def _select(cache: Any, index: torch.Tensor) -> Any:
    """A new cache holding rows ``index`` of ``cache`` (the prefix copied per question)."""
    from transformers import DynamicCache

    new = DynamicCache()
    for i, layer in enumerate(cache.layers):
        rows = index.to(layer.keys.device)  # layers may sit on several GPUs (device_map)
        new.update(layer.keys.index_select(0, rows), layer.values.index_select(0, rows), i)
    return new


def _suffix_chunk(backend: Any, cache: Any, prefix: Any, prep: Prepared, chunk: list[int],
                  deltas: torch.Tensor | None, processing: Processing) -> list[Any]:
    """One forward of suffix rows ``chunk``; each row's last hidden state(s) gathered
    before the LM head, so the head runs once per read (not per row × distinct length)."""
    device = prefix["input_ids"].device
    image_rows = torch.tensor([prep.rows[i] for i in chunk], device=device)
    ids, mask = prep.ids[chunk].to(device), prep.mask[chunk].to(device)
    width = ids.shape[1]
    hidden = backend.model.model(
        input_ids=ids, attention_mask=torch.cat([prefix["attention_mask"][image_rows], mask], 1),
        position_ids=_positions(prefix, image_rows, width, deltas),
        past_key_values=_select(cache, image_rows))[0]
    reads = [(n, prep.lengths[i] - 1 + j) for n, i in enumerate(chunk)
             for j in range(_n_reads(prep, i))]
    at = hidden.device  # the last layer's (device_map may spread layers over GPUs)
    picked = hidden[torch.tensor([n for n, _ in reads], device=at),
                    torch.tensor([p for _, p in reads], device=at)]
    logits = backend.model.get_output_embeddings()(picked).float()  # [reads, V]
    vocab = logits.shape[-1]
    seen = None
    if processing.repetition_penalty != 1.0 or prep.answers is not None:
        lengths = torch.tensor([prep.lengths[i] for i in chunk], device=device)
        prompt = mask * (torch.arange(width, device=device)[None, :] < lengths[:, None])
        seen = seen_tokens(prefix["input_ids"][image_rows],
                           prefix["attention_mask"][image_rows], vocab)
        seen = (seen | seen_tokens(ids, prompt, vocab)).to(logits.device)
    if prep.answers is None:  # one read per row, in row order
        lp = torch.log_softmax(process_logits(logits, seen, processing), dim=-1).cpu()
        return list(lp)
    assert seen is not None  # computed above whenever there are answers
    return _answer_reads(logits, seen, [prep.answers[i] for i in chunk], processing)


def _n_reads(prep: Prepared, row: int) -> int:
    return 1 if prep.answers is None else len(prep.answers[row])


def _positions(prefix: Any, image_rows: torch.Tensor, width: int,
               deltas: torch.Tensor | None) -> torch.Tensor:
    """Positions of the suffix tokens, continuing each row's prefix."""
    device = image_rows.device
    steps = torch.arange(width, device=device)[None, :]
    if deltas is None:  # 1-D RoPE: the prefill used arange(P) over the padded prefix
        start = prefix["input_ids"].shape[1]
        return (start + steps).expand(len(image_rows), -1)
    real = prefix["attention_mask"].sum(1)[image_rows]
    text = real[:, None] + steps + deltas.to(device)[image_rows]
    return text.unsqueeze(0).expand(3, -1, -1)


def _answer_reads(logits: torch.Tensor, seen: torch.Tensor, answers: list[tuple[int, ...]],
                  processing: Processing) -> list[list[float]]:
    """Teacher-forced log-probs: step j of each row, its earlier answer tokens seen.

    ``logits`` holds each row's reads one after the other (row i: ``len(answers[i])``)."""
    starts = [0]
    for a in answers:
        starts.append(starts[-1] + len(a))
    out: list[list[float]] = [[] for _ in answers]
    for j in range(max(len(a) for a in answers)):
        rows = [i for i, a in enumerate(answers) if j < len(a)]
        picked = logits[[starts[i] + j for i in rows]]
        lp = torch.log_softmax(process_logits(picked, seen[rows], processing), dim=-1)
        for n, i in enumerate(rows):
            out[i].append(float(lp[n, answers[i][j]]))
            seen[i, answers[i][j]] = True
    return out
