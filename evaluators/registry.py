"""Names of the metrics and where their classes live, imported only when asked for.

Adding an evaluator = one module, one line in :data:`EVALUATORS`, one test file
``tests/evaluators/test_<name>.py`` (hyphens become underscores).
"""

from __future__ import annotations

import difflib
from importlib import import_module
from typing import Any

from evaluators.base import Evaluator

# name -> "module:attribute"; strings, so listing metrics imports nothing heavy
EVALUATORS: dict[str, str] = {
    "vqascore": "evaluators.vqascore:VQAScore",
    "paircomp": "evaluators.paircomp:PairComp",
    "geneval2-vqascore": "evaluators.geneval2:GenEval2VQAScore",
    "geneval2-tifa": "evaluators.geneval2:GenEval2TIFA",
    "soft-tifa": "evaluators.geneval2:SoftTIFA",
    "tiif": "evaluators.tiif:TIIF",
    "gned": "evaluators.gned:GNED",
    "consistency": "evaluators.consistency:Consistency",
}


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


def evaluator_class(name: str) -> type[Evaluator]:
    """The class registered as ``name`` (imports its module).

    Raises:
        UnknownEvaluatorError: ``name`` is not registered.
    """
    target = EVALUATORS.get(name)
    if target is None:
        raise UnknownEvaluatorError(name)
    module, _, attr = target.partition(":")
    return getattr(import_module(module), attr)


def higher_is_better(name: str) -> bool:
    """The direction of metric ``name`` from its class; True for a metric not registered
    here (scores imported under a name of their own)."""
    return name not in EVALUATORS or evaluator_class(name).higher_is_better


def create_evaluator(name: str, **options: Any) -> Evaluator:
    """Instantiate metric ``name`` with ``options`` (no model is loaded yet).

    Raises:
        UnknownEvaluatorError: ``name`` is not registered.
        TypeError: an option the evaluator does not take.
    """
    return evaluator_class(name)(**options)
