"""VQAScore as t2v_metrics computes it with a decoder (chat) VLM.

Question ``Does this figure show "{prompt}"? Please answer Yes or No.``, answer ``Yes``;
score = P(Yes) over the full vocabulary at the first answer position, *not* normalised by
P(No). The answer token is the one that follows the rendered prompt ("Yes" after a newline,
" Yes" after ``ASSISTANT:``). Probabilities are read from the processed scores t2v_metrics
reads (greedy ``generate`` → the checkpoint's repetition penalty). When the answer is
several tokens, each is teacher-forced and the score is their geometric mean (t2v_metrics
reads the later steps at the model's own greedy tokens instead).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from evaluators.base import PairError, ScoreRequest
from evaluators.vlm_metric import Query, Read, VLMMetric, finite, unprocessable

if TYPE_CHECKING:
    import torch

    from evaluators.token_probs import Processing

QUESTION = 'Does this figure show "{}"? Please answer Yes or No.'
ANSWER = "Yes"


class VQAScore(VLMMetric):
    """t2v_metrics VQAScore: P("Yes" | image, question) per image.

    Args:
        repetition_penalty: override the checkpoint's generation_config value (None: use it,
            as t2v_metrics' generate() does).
        question: question template with one ``{}`` for the prompt.
        answer: the answer whose probability is the score.
        **kwargs: backend options of :class:`VLMMetric`.
    """

    name: ClassVar[str] = "vqascore"
    default_model: ClassVar[str | None] = "Qwen/Qwen3-VL-8B-Instruct"

    def __init__(self, model: str | None = None, *, repetition_penalty: float | None = None,
                 question: str = QUESTION, answer: str = ANSWER, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        if question.count("{}") != 1:
            raise ValueError(f"question template needs exactly one '{{}}', got {question!r}")
        self.question, self.answer = question, answer
        self._penalty = repetition_penalty

    def processing(self) -> Processing:
        """The checkpoint's greedy generate() scores (or the given repetition penalty)."""
        from evaluators.token_probs import Processing

        if self._penalty is None:
            return super().processing()
        return Processing(repetition_penalty=self._penalty)

    def queries(self, request: ScoreRequest) -> list[Query]:
        """One query per image."""
        return [Query("", self.question.format(request.prompt))]

    def read(self, logprobs: torch.Tensor, context: str, query: Query,
             request: ScoreRequest) -> Read:
        """P(answer) for a one-token answer (multi-token answers go through read_all)."""
        ids = self.backend.answer_token_ids(context, self.backend.spaced(context, self.answer))
        value = math.exp(float(logprobs[ids[0]]))
        return Read(finite(value), {"answer_tokens": ids, "p_answer": value})

    def read_all(self, images: list[Any], plan: list[tuple[int, Query, str, str]],
                 requests: Sequence[ScoreRequest]) -> list[Read]:
        """One forward per pair; teacher forcing only where the answer is several tokens."""
        answer_ids = [self.backend.answer_token_ids(ctx, self.backend.spaced(ctx, self.answer))
                      for *_, ctx in plan]
        multi = [n for n, ids in enumerate(answer_ids) if len(ids) > 1]
        reads = super().read_all(images, plan, requests) if len(multi) < len(plan) else []
        if not multi:
            return reads
        reads = reads or [Read(None, {}) for _ in plan]
        steps = self.backend.answer_logprobs([images[n] for n in multi],
                                             [plan[n][2] for n in multi],
                                             [answer_ids[n] for n in multi], self.processing())
        for n, lps in zip(multi, steps, strict=True):
            if isinstance(lps, PairError):
                reads[n] = unprocessable(lps)
                continue
            value = math.exp(sum(lps) / len(lps))  # geometric mean of the token probabilities
            reads[n] = Read(finite(value), {"answer_tokens": answer_ids[n], "p_answer": value,
                                            "token_logprobs": lps})
        return reads
