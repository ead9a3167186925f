"""GenEval 2's three VQA methods: its own VQAScore, binary TIFA and Soft-TIFA.

``geneval2-tifa`` is GenEval 2's *binary* TIFA: a yes/no (or counting) question answered with
the judge's first token. It is not the TIFA benchmark's protocol (Hu et al. 2023), where a
VQA model answers each *multiple-choice* question free-form and the answer is mapped to the
closest choice; that protocol is not implemented (the name ``tifa`` is reserved for it), and
a question whose expected answer is neither yes/no nor a count is refused, never scored as
yes/no.

All three read ``softmax(generate(do_sample=False).scores[0])`` of the judge (Qwen3-VL-8B in
the reference): the checkpoint's greedy scores, i.e. raw logits unless its
generation_config has a repetition penalty. An answer string's probability is that of its
*first token*; a list of answer strings is summed *with multiplicity* and never normalised
by the "no" side. First tokens are taken as the strings continue the rendered prompt, which
on Qwen's ChatML template equals the reference's ``encode(a)[0]``.

* ``geneval2-vqascore``: ``Does this image show "{prompt}"? Answer the question with Yes or
  No.``, answers ``['Yes', 'yes', ' yes', ' Yes']``.
* per question: ``{question} Answer in one word.``; answers ``['Yes', 'yes', ' yes', ' Yes']``
  (the expected answer is ignored, it is always "Yes" in the data), or for a "How many"
  question with expected answer ``a``: ``[a, a.capitalize(), ' '+a, ' '+a.capitalize(),
  digit(a), ' '+digit(a)]``. With Qwen's tokenizer ``' 4'`` starts with the bare space
  token, so P(' ') is part of the count score, once, as in the reference.
* ``soft-tifa`` per question = that sum; ``geneval2-tifa`` = 1 if the decoded argmax token,
  lower-cased, is one of the answer strings, else 0.

Image value: the mean over the prompt's questions (Soft-TIFA AM); ``details['gm']`` holds
the geometric mean. Per-question rows carry the values so the stats module computes AM/GM,
per-skill (pooled atoms) and per-atomicity figures.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from evaluators.base import ScoreRequest, ScoreResult
from evaluators.vlm_metric import Query, Read, VLMMetric

if TYPE_CHECKING:
    import torch

VQA_QUESTION = 'Does this image show "{}"? Answer the question with Yes or No.'
QUESTION_SUFFIX = " Answer in one word."
YES_ANSWERS = ("Yes", "yes", " yes", " Yes")
NUMBERS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
           "seven": "7", "eight": "8", "nine": "9", "ten": "10"}


def answer_strings(question: str, answer: str | None) -> list[str]:
    """GenEval 2's accepted answer strings for one question.

    Raises:
        ValueError: a "How many" question without an expected answer.
    """
    if not question.startswith("How many"):
        return list(YES_ANSWERS)
    if not answer:
        raise ValueError(f"counting question without an expected answer: {question!r}")
    digit = NUMBERS.get(answer, "other")
    return [answer, answer.capitalize(), " " + answer, " " + answer.capitalize(), digit,
            " " + digit]


def multiple_choice_problem(question: str, answer: str | None) -> str | None:
    """Why a question is not a GenEval 2 question (None when it is one): an expected
    answer that is neither yes/no nor a count is a multiple-choice (TIFA) question."""
    if question.startswith("How many") or answer is None:
        return None
    if answer.strip().lower() in ("yes", "no"):
        return None
    return (f"expected answer {answer!r} is not yes/no: a multiple-choice question "
            "(TIFA protocol) cannot be scored as a GenEval 2 yes/no question")


def geometric_mean(values: list[float]) -> float:
    """exp(mean(log v)); 0 when any value is 0 (as scipy's gmean returns)."""
    if any(v <= 0 for v in values):
        return 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


class GenEval2VQAScore(VLMMetric):
    """GenEval 2's VQAScore: Σ P(first token of Yes/yes/' yes'/' Yes') per image."""

    name: ClassVar[str] = "geneval2-vqascore"
    default_model: ClassVar[str | None] = "Qwen/Qwen3-VL-8B-Instruct"

    def queries(self, request: ScoreRequest) -> list[Query]:
        """One query per image."""
        return [Query("", VQA_QUESTION.format(request.prompt))]

    def read(self, logprobs: torch.Tensor, context: str, query: Query,
             request: ScoreRequest) -> Read:
        """The unnormalised sum over the Yes variants."""
        return answer_read(self.backend, logprobs, context, list(YES_ANSWERS), None)


class SoftTIFA(VLMMetric):
    """Soft-TIFA: per question the summed probability of its accepted answer strings."""

    name: ClassVar[str] = "soft-tifa"
    has_questions: ClassVar[bool] = True
    default_model: ClassVar[str | None] = "Qwen/Qwen3-VL-8B-Instruct"
    binary: ClassVar[bool] = False

    def queries(self, request: ScoreRequest) -> list[Query]:
        """One query per question of the prompt."""
        if not request.questions:
            raise ValueError(f"prompt has no questions; {self.name} needs GenEval 2/TIFA "
                             "questions")
        return [Query(q.id, q.text + QUESTION_SUFFIX) for q in request.questions]

    def read(self, logprobs: torch.Tensor, context: str, query: Query,
             request: ScoreRequest) -> Read:
        """Soft (or binary) score of one question."""
        question = next(q for q in request.questions if q.id == query.key)
        problem = multiple_choice_problem(question.text, question.answer)
        if problem is not None:
            return Read(None, {"error": problem})
        try:
            answers = answer_strings(question.text, question.answer)
        except ValueError as exc:
            return Read(None, {"error": str(exc)})
        read = answer_read(self.backend, logprobs, context, answers, question.skill)
        if self.binary:
            read.value = float(read.details["pred"].lower() in answers)
        return read

    def combine(self, request: ScoreRequest, reads: dict[str, Read]) -> ScoreResult:
        """Question values plus their mean (AM) and geometric mean (GM)."""
        values = {k: r.value for k, r in reads.items()}
        ok = [v for v in values.values() if v is not None]
        details: dict[str, Any] = {"n_questions": len(values), "n_failed": len(values) - len(ok)}
        if not ok:
            return ScoreResult(request.item_id, None, values,
                               {k: r.details for k, r in reads.items()}, details,
                               error="no question could be scored")
        details["gm"] = geometric_mean(ok)
        return ScoreResult(request.item_id, sum(ok) / len(ok), values,
                           {k: r.details for k, r in reads.items()}, details)


class GenEval2TIFA(SoftTIFA):
    """GenEval 2's binary TIFA: 1 if the argmax token is an accepted answer, else 0 (not
    the TIFA benchmark's multiple-choice protocol)."""

    name: ClassVar[str] = "geneval2-tifa"
    binary: ClassVar[bool] = True


def answer_read(backend: Any, logprobs: torch.Tensor, context: str, answers: list[str],
                skill: str | None) -> Read:
    """Σ P(first token of each answer string) plus the decoded argmax prediction."""
    from evaluators.token_probs import prob_sum

    ids = [backend.first_token_id(context, a) for a in answers]
    value = prob_sum(logprobs, ids)
    pred = backend.decode(int(logprobs.argmax()))
    details = {"answers": answers, "token_ids": ids, "pred": pred, "soft": value}
    if skill is not None:
        details["skill"] = skill
    return Read(value, details)
