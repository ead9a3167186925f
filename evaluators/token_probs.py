"""Pure maths on next-token logits: generate-style processing and answer-set probabilities.

The references read probabilities from ``generate(..., output_scores=True).scores``, which
are *processed* logits: the repetition penalty (Qwen2/2.5-VL ship 1.05) and, when sampling,
the top-k warper (PairComp: top-k 50). A bare forward pass gives raw logits. We run one
forward pass and apply the same processing here, so each metric can read its probabilities
where its reference does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True, slots=True)
class Processing:
    """How raw next-token logits are turned into the scores a reference reads.

    Attributes:
        repetition_penalty: generate's CTRL-style penalty for every token id already in the
            input (positive logits divided by it, negative ones multiplied); 1.0 = off.
        top_k: keep the k highest logits (ties at the k-th value kept), the rest → -inf;
            None = off.
    """

    repetition_penalty: float = 1.0
    top_k: int | None = None

    def __post_init__(self) -> None:
        if not self.repetition_penalty > 0:
            raise ValueError(f"repetition_penalty must be > 0, got {self.repetition_penalty}")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"top_k must be >= 1 or None, got {self.top_k}")


def seen_tokens(input_ids: torch.Tensor, attention_mask: torch.Tensor,
                vocab_size: int) -> torch.Tensor:
    """[B, V] bool: which ids occur in each row's real (non-padding) tokens.

    Padding is left out so that a batched row is penalised exactly like the same prompt
    alone (the references score one prompt per call, so they never see padding).
    """
    # Padding and masked positions write into an extra column that is dropped: scattering
    # the mask itself would let a masked copy of an id overwrite a real one (the order of
    # duplicate writes is undefined).
    seen = torch.zeros(input_ids.shape[0], vocab_size + 1, dtype=torch.bool,
                       device=input_ids.device)
    ids = torch.where(attention_mask.bool(), input_ids.clamp(0, vocab_size - 1), vocab_size)
    seen.scatter_(1, ids, True)
    return seen[:, :vocab_size]


def process_logits(logits: torch.Tensor, seen: torch.Tensor | None,
                   processing: Processing) -> torch.Tensor:
    """Apply repetition penalty, then top-k, to fp32 logits [B, V] (a new tensor)."""
    out = logits.float().clone()
    if processing.repetition_penalty != 1.0 and seen is not None:
        penalised = torch.where(out < 0, out * processing.repetition_penalty,
                                out / processing.repetition_penalty)
        out = torch.where(seen, penalised, out)
    if processing.top_k is not None and processing.top_k < out.shape[-1]:
        kth = torch.topk(out, processing.top_k, dim=-1).values[..., -1:]
        out = out.masked_fill(out < kth, float("-inf"))
    return out


def prob_sum(logprobs: torch.Tensor, ids: Sequence[int]) -> float:
    """Σ P(id) over ``ids`` *with multiplicity* (GenEval 2 sums its answer list that way)."""
    if not ids:
        return 0.0
    picked = logprobs[torch.tensor(list(ids), dtype=torch.long, device=logprobs.device)]
    return float(picked.double().exp().sum())


def yes_ratio(logprobs: torch.Tensor, yes_ids: Sequence[int], no_ids: Sequence[int]) -> float:
    """P(yes-set) / (P(yes-set) + P(no-set)); NaN when both sets have probability 0.

    Computed as sigmoid(logsumexp(yes) - logsumexp(no)) in float64, which is exact for the
    ratio (the softmax normaliser cancels) and stable when both probabilities are tiny.
    """
    lp = logprobs.double()
    ly = torch.logsumexp(lp[list(yes_ids)], 0).item()
    ln = torch.logsumexp(lp[list(no_ids)], 0).item()
    if math.isinf(ly) and math.isinf(ln):
        return math.nan
    return 1.0 / (1.0 + math.exp(ln - ly)) if ln - ly < 700 else 0.0


def unique(ids: Sequence[int]) -> list[int]:
    """``ids`` without repeats, first occurrence order (for set-valued answer tokens)."""
    return list(dict.fromkeys(ids))
