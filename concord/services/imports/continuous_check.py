"""Imported ratings of continuous criteria (a slider: any value from min to max, on a step
grid or not), checked by range in SQL over the stage rather than value by value: such a
criterion may have millions of distinct values, more than the (criterion, value) groups the
rubric check takes (:data:`concord.services.imports.ratings.MAX_GROUPS`)."""

from __future__ import annotations

from collections.abc import Iterator

from concord.errors import Problem, ProblemLog
from concord.rubrics import Criterion
from concord.rubrics.model import Continuous
from concord.services.rubric_choice import StudyRubrics
from concord.store.imports.staging import Stage

SHOWN = 50


def names(rubrics: StudyRubrics) -> list[str]:
    """Every name (key or alias) of a continuous criterion of the study's rubrics."""
    return sorted({n for _, c, _ in _continuous(rubrics) for n in (c.key, *c.aliases)})


def _continuous(rubrics: StudyRubrics) -> Iterator[tuple[tuple[tuple[str, ...], bool],
                                                        Criterion, Continuous]]:
    """((dimensions, inside), criterion, scale) of each continuous criterion: a dimension's
    own rubric covers its rows (inside), the default covers the rest."""
    parts = [((tuple(rubrics.by_dimension), False), rubrics.default),
             *((((d,), True), r) for d, r in rubrics.by_dimension.items())]
    for where, rubric in parts:
        for criterion in () if rubric is None else rubric.criteria:
            if criterion.continuous is not None:
                yield where, criterion, criterion.continuous


def check(stage: Stage, rubrics: StudyRubrics, study_id: int | None, files: list[str],
          log: ProblemLog) -> None:
    """Log every row off its continuous scale (file, row, field ``value``), then store the
    rows named by an alias under the criterion's key."""
    for where, criterion, scale in _continuous(rubrics):
        found = stage.off_scale((criterion.key, *criterion.aliases),
                                (scale.low, scale.high, scale.step), where, study_id, SHOWN)
        for file, line, _, value in found.rows:
            log.add(Problem(files[file], f"{value:g} is not on the continuous {criterion.key}"
                                         f" scale {scale.text()}", row=line, field="value"))
        log.count += found.total - len(found.rows)
    if log:
        return
    for where, criterion, _ in _continuous(rubrics):
        for alias in criterion.aliases:
            stage.rename_in(alias, criterion.key, where, study_id)
