"""Rubrics as data: criteria, scales, level texts, keys and checklists (docs/rubrics.md).

The package's modules: :mod:`~concord.rubrics.model` (the loaded rubric and loading),
:mod:`~concord.rubrics.checks` (every problem of a rubric file, named by file and key),
:mod:`~concord.rubrics.checklist` (condition checklists and the rules that derive a
criterion's value from the ticks) and :mod:`~concord.rubrics.inline` (scales declared on
the command line). The public API is re-exported here.
"""

from concord.rubrics.checklist import Checklist, ChecklistError, Condition, Rule
from concord.rubrics.checks import (
    DEFAULT_KEY_ROWS,
    RESERVED_KEYS,
    RubricError,
    RubricProblem,
    RubricRootError,
    check,
    keys_of,
    parse,
)
from concord.rubrics.model import (
    DEFAULT_RUBRICS_DIR,
    Combine,
    Criterion,
    Level,
    Rubric,
    list_rubrics,
    load_rubric,
    load_rubric_by_id,
    validate_rubrics,
)

__all__ = [
    "DEFAULT_KEY_ROWS",
    "DEFAULT_RUBRICS_DIR",
    "RESERVED_KEYS",
    "Checklist",
    "ChecklistError",
    "Combine",
    "Condition",
    "Criterion",
    "Level",
    "Rubric",
    "RubricError",
    "RubricProblem",
    "RubricRootError",
    "Rule",
    "check",
    "keys_of",
    "list_rubrics",
    "load_rubric",
    "load_rubric_by_id",
    "parse",
    "validate_rubrics",
]
