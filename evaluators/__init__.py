"""Automatic T2I metrics (VLM yes/no probabilities, TIFA, OCR) behind one small contract.

Importing this package, :mod:`evaluators.base` or :mod:`evaluators.registry` loads neither
torch nor transformers: the Streamlit app lists metrics (and their directions, judges and
questions) from the registry's data. Models load only when an
evaluator's ``load()`` or ``score()`` runs, in the batch job (``python -m concord score``).
"""

from __future__ import annotations

from evaluators.base import (
    Evaluator,
    EvaluatorError,
    ModelLoadError,
    Question,
    ScoreRequest,
    ScoreResult,
)
from evaluators.registry import (
    EVALUATORS,
    MetricInfo,
    UnknownEvaluatorError,
    create_evaluator,
    evaluator_class,
    list_evaluators,
    metric_info,
)

__all__ = [
    "EVALUATORS",
    "Evaluator",
    "EvaluatorError",
    "MetricInfo",
    "ModelLoadError",
    "Question",
    "ScoreRequest",
    "ScoreResult",
    "UnknownEvaluatorError",
    "create_evaluator",
    "evaluator_class",
    "list_evaluators",
    "metric_info",
]
