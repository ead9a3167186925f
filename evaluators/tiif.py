"""TIIF-Bench yes/no questions answered deterministically from next-token probabilities.

Every question of the prompt (all dimensions, the style question included) is asked on
its own: the question, stripped, plus `` Answer with yes or no.`` unless it already asks
for "yes or no" (TIIF's real_world questions do). Per question
``P(yes) / (P(yes) + P(no))`` over the first tokens of {yes, Yes, YES} and {no, No, NO}
from the raw logits; the prediction is "yes" when that is ≥ 0.5, and it is correct when it
equals the expected answer (case-insensitive, stripped), as TIIF's summary compares them.

The paper's judge differs: GPT-4o (or Qwen2.5-VL-72B) gets all questions of an image in
one request, with one of three instruction templates picked at random, temperature 1, and
its free-text lines are parsed for a leading yes/no (retried until the count matches).
Concord's reading is deterministic and never fails to parse, and it yields a graded
probability per question; accuracies are comparable, not identical.

Image value: the fraction of questions answered correctly (TIIF's accuracy for that image);
the stats module pools questions per dimension and length (micro average).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from evaluators.base import ScoreRequest, ScoreResult
from evaluators.vlm_metric import Query, Read, VLMMetric

if TYPE_CHECKING:
    import torch

    from evaluators.token_probs import Processing

SUFFIX = " Answer with yes or no."
YES_WORDS = ("yes", "Yes", "YES")
NO_WORDS = ("no", "No", "NO")


def question_prompt(question: str) -> str:
    """The text asked for one TIIF question."""
    text = question.strip()
    return text if "yes or no" in text.lower() else text + SUFFIX


class TIIF(VLMMetric):
    """TIIF-Bench per-question P(yes) and correctness, per-image accuracy."""

    name: ClassVar[str] = "tiif"
    has_questions: ClassVar[bool] = True
    # The open judge of TIIF's released results (the paper's main judge is GPT-4o).
    default_model: ClassVar[str | None] = "Qwen/Qwen2.5-VL-72B-Instruct"

    def processing(self) -> Processing:
        """Raw next-token logits: no reference reads this way, so nothing to mimic."""
        from evaluators.token_probs import Processing

        return Processing()

    def queries(self, request: ScoreRequest) -> list[Query]:
        """One query per question."""
        if not request.questions:
            raise ValueError("prompt has no questions; tiif needs TIIF yes/no questions")
        return [Query(q.id, question_prompt(q.text)) for q in request.questions]

    def read(self, logprobs: torch.Tensor, context: str, query: Query,
             request: ScoreRequest) -> Read:
        """P(yes)/(P(yes)+P(no)), the prediction and whether it matches the answer."""
        from evaluators.token_probs import unique, yes_ratio

        backend = self.backend
        yes = unique([backend.first_token_id(context, backend.spaced(context, w))
                      for w in YES_WORDS])
        no = unique([backend.first_token_id(context, backend.spaced(context, w))
                     for w in NO_WORDS])
        p = yes_ratio(logprobs, yes, no)
        if p != p:  # cannot happen on raw logits, kept for safety
            return Read(None, {"error": "P(yes) + P(no) is 0"})
        question = next(q for q in request.questions if q.id == query.key)
        pred = "yes" if p >= 0.5 else "no"
        gt = question.answer.strip().lower() if question.answer else None
        details: dict[str, Any] = {"pred": pred, "answer": gt,
                                   "correct": None if gt is None else pred == gt}
        return Read(p, details)

    def combine(self, request: ScoreRequest, reads: dict[str, Read]) -> ScoreResult:
        """Per-question P(yes) rows; the image value is the share answered correctly."""
        values = {k: r.value for k, r in reads.items()}
        judged = [r.details["correct"] for r in reads.values()
                  if r.details.get("correct") is not None]
        details = {"n_questions": len(values), "n_judged": len(judged),
                   "n_correct": sum(judged)}
        value = sum(judged) / len(judged) if judged else None
        error = None if judged else "no question with an expected yes/no answer"
        return ScoreResult(request.item_id, value, values,
                           {k: r.details for k, r in reads.items()}, details, error)
