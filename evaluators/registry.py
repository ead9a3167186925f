"""The metrics: each name with where its class lives and what a caller must know before
loading it (direction, judge, questions, default judge), as plain data.

The app, the statistics and the ``score`` request read these entries without importing any
metric class (and so without torch). Each entry repeats its class's attributes;
``tests/evaluators/test_registry.py`` checks that the two agree.

Adding an evaluator = one module, one entry in :data:`EVALUATORS`, one test file
``tests/evaluators/test_<name>.py`` (hyphens become underscores).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from evaluators.base import Evaluator


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """One registered metric.

    Attributes:
        name: the registry name, also the stored ``metric``.
        target: ``"module:Class"`` of its evaluator (imported only by :meth:`load_class`).
        about: one line for menus and ``python -m concord metrics``.
        higher_is_better: direction of its values.
        needs_judge: a VLM checkpoint does the scoring (``--model``, placement options).
        has_questions: it scores each of the prompt's questions.
        default_model: the judge used when none is given (None: one must be given).
    """

    name: str
    target: str
    about: str
    higher_is_better: bool = True
    needs_judge: bool = True
    has_questions: bool = False
    default_model: str | None = None

    def load_class(self) -> type[Evaluator]:
        """The evaluator class (imports its module)."""
        module, _, attr = self.target.partition(":")
        return getattr(import_module(module), attr)


_QWEN3_8B = "Qwen/Qwen3-VL-8B-Instruct"
_ENTRIES = (
    MetricInfo("vqascore", "evaluators.vqascore:VQAScore",
               't2v_metrics VQAScore: P("Yes" | image, question) per image.',
               default_model=_QWEN3_8B),
    # The reference judge, OpenGVLab/InternVL2_5-26B, is a remote-code checkpoint: no default.
    MetricInfo("paircomp", "evaluators.paircomp:PairComp",
               "PairComp per-image score S in [0, 1], rounded to 4 decimals."),
    MetricInfo("geneval2-vqascore", "evaluators.geneval2:GenEval2VQAScore",
               "GenEval 2's VQAScore: Σ P(first token of Yes/yes/' yes'/' Yes') per image.",
               default_model=_QWEN3_8B),
    MetricInfo("geneval2-tifa", "evaluators.geneval2:GenEval2TIFA",
               "GenEval 2's binary TIFA: 1 if the argmax token is an accepted answer, else 0.",
               has_questions=True, default_model=_QWEN3_8B),
    MetricInfo("soft-tifa", "evaluators.geneval2:SoftTIFA",
               "Soft-TIFA: per question the summed probability of its accepted answer strings.",
               has_questions=True, default_model=_QWEN3_8B),
    MetricInfo("tiif", "evaluators.tiif:TIIF",
               "TIIF-Bench per-question P(yes) and correctness, per-image accuracy.",
               has_questions=True, default_model="Qwen/Qwen2.5-VL-72B-Instruct"),
    MetricInfo("gned", "evaluators.gned:GNED",
               "OCR the image and compare it with the prompt's expected words (lower is "
               "better).", higher_is_better=False, needs_judge=False),
    MetricInfo("consistency", "evaluators.consistency:Consistency",
               "Base-metric value per image, grouped by paraphrase group in the details."),
)
EVALUATORS: dict[str, MetricInfo] = {m.name: m for m in _ENTRIES}


# Names that are not (or no longer) metrics, with what to use instead.
RESERVED: dict[str, str] = {
    "tifa": "metric 'tifa' is reserved for the TIFA benchmark's protocol (free-form VQA "
            "answers mapped to multiple-choice options), which Concord does not implement; "
            "GenEval 2's binary yes/no TIFA is 'geneval2-tifa' (see docs/evaluators.md)",
}


class UnknownEvaluatorError(KeyError):
    """A metric name that is not in the registry; the message suggests close names."""

    def __init__(self, name: str) -> None:
        self.name = name
        close = difflib.get_close_matches(name, list(EVALUATORS), n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        self.message = RESERVED.get(name) or (
            f"unknown metric {name!r}; {hint}valid metrics: {', '.join(list_evaluators())}"
        )
        super().__init__(self.message)

    def __str__(self) -> str:
        # KeyError's own __str__ would show the message in quotes
        return self.message


def list_evaluators() -> list[str]:
    """Every registered metric name, sorted."""
    return sorted(EVALUATORS)


def metric_info(name: str) -> MetricInfo:
    """The entry registered as ``name`` (imports nothing).

    Raises:
        UnknownEvaluatorError: ``name`` is not registered ("did you mean" in the message).
    """
    info = EVALUATORS.get(name)
    if info is None:
        raise UnknownEvaluatorError(name)
    return info


def evaluator_class(name: str) -> type[Evaluator]:
    """The class registered as ``name`` (imports its module).

    Raises:
        UnknownEvaluatorError: ``name`` is not registered.
    """
    return metric_info(name).load_class()


def higher_is_better(name: str) -> bool:
    """The direction of metric ``name``; True for a metric not registered here (scores
    imported under a name of their own)."""
    info = EVALUATORS.get(name)
    return info is None or info.higher_is_better


def create_evaluator(name: str, **options: Any) -> Evaluator:
    """Instantiate metric ``name`` with ``options`` (no model is loaded yet).

    Raises:
        UnknownEvaluatorError: ``name`` is not registered.
        TypeError: an option the evaluator does not take.
    """
    return evaluator_class(name)(**options)
