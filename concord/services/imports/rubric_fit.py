"""Fitting imported ratings to rubrics: inferring one, and checking every row against one.

Inference (a new ratings-only study, or a study without a rubric, and no ``--rubric`` /
``--criteria``): a rubric *fits* when every criterion name in the file is one of its
criteria (key or alias) and every value is on that criterion's scale. Of the rubrics that
fit, the tightest wins (fewest scale levels over the criteria used: 1–5 data takes
``likert-5``, not ``likert-7``; 0/0.5/1 data ``imagenhub-released``, not the 0–2 rubrics),
and a rubric that is a ``variant_of`` another that fits as tightly gives way to it (the
task-specific ImagenHub rubrics to ``imagenhub-general``). Exactly one must remain.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from concord.errors import InputError, Problem, ProblemLog
from concord.importers.imagenhub_tsv import TASK_RUBRICS
from concord.rubrics import Criterion, Rubric
from concord.rubrics.inline import MAX_LEVELS, is_key
from concord.services.labelling import common
from concord.services.rubric_choice import Choice, StudyRubrics, score_rubrics
from concord.store.imports.staging import Group

Observed = Mapping[str, set[float]]  # criterion name in the file -> values seen


def observed(groups: Iterable[Group]) -> dict[str, set[float]]:
    """Criterion names and the values each has, over all dimensions."""
    out: dict[str, set[float]] = defaultdict(set)
    for g in groups:
        out[g.criterion].add(g.value)
    return dict(out)


def misfit(rubric: Rubric, seen: Observed) -> tuple[str, float | None, str] | None:
    """Why ``rubric`` does not fit the values seen: (criterion name, value or None, why);
    None when it fits."""
    for name, values in sorted(seen.items()):
        criterion = rubric.resolve(name)
        if criterion is None:
            return name, None, f"it has no criterion {name!r}"
        off = sorted(v for v in values if not criterion.accepts(v))
        if off:
            return name, off[0], (f"{off[0]:g} is not on its {criterion.key} scale "
                                  f"{_scale(criterion)}")
    return None


def _size(rubric: Rubric, seen: Observed) -> float:
    """How many values the criteria used can take (a continuous one: its grid points, or
    infinitely many): the tightest rubric fits the data best."""
    keys = {rubric.resolve(name).key for name in seen}  # type: ignore[union-attr]
    return sum(_values(rubric.criterion(k)) for k in keys)


def _values(criterion: Criterion) -> float:
    scale = criterion.continuous
    if scale is None:
        return len(criterion.values)
    return math.inf if scale.step is None else (scale.high - scale.low) / scale.step + 1


def _scale(criterion: Criterion) -> str:
    return criterion.scale_text() if criterion.continuous else _levels(criterion.values)


def infer(groups: Sequence[Group], files: Sequence[str]) -> Choice:
    """The one rubric that fits the rows best (module docstring), as a choice.

    Raises:
        InputError: none fits, or several fit equally well (one line naming them and how to
            choose with ``--rubric`` or declare with ``--criteria``).
    """
    seen = observed(groups)
    rubrics = score_rubrics()
    fits = [r for r in rubrics if misfit(r, seen) is None]
    if not fits:
        raise InputError([_none_fit(rubrics, seen, groups, files)])
    tight = min(_size(r, seen) for r in fits)
    best = [r for r in fits if _size(r, seen) == tight]
    ids = {r.id for r in best}
    best = [r for r in best if r.variant_of not in ids]
    if len(best) > 1:
        names = ", ".join(r.id for r in best)
        raise InputError([Problem(files[0], f"several rubrics fit every row equally well "
                                            f"({names}); choose one with --rubric ID, or "
                                            f"declare the scale with --criteria {_hint(seen)}",
                                  field="criterion")])
    chosen = best[0]
    also = _also(chosen, fits)
    note = (f"rubric {chosen.id} (inferred: it fits every row most tightly{also}; to use "
            "another, import with --rubric ID)")
    return Choice(StudyRubrics(chosen), chosen.id, {}, note)


def _also(chosen: Rubric, fits: Sequence[Rubric]) -> str:
    """The other rubrics that fit, with variants counted under their base."""
    others = [r for r in fits if r.id != chosen.id]
    bases = {r.id for r in others} | {chosen.id}
    variants = [r for r in others if r.variant_of in bases]
    named = [r.id for r in others if r not in variants]
    if variants:
        named.append(f"{len(variants)} task variant(s) of {variants[0].variant_of}")
    return f"; also fit: {', '.join(named)}" if named else ""


def _none_fit(rubrics: Sequence[Rubric], seen: Observed, groups: Sequence[Group],
              files: Sequence[str]) -> Problem:
    """One problem naming the closest rubrics, and the first row that none of them takes."""
    close = [r for r in rubrics if all(r.resolve(n) for n in seen)]
    ids = {r.id for r in close}
    named = [(r.id, misfit(r, seen)) for r in close if r.variant_of not in ids]
    if named:
        detail = "closest: " + "; ".join(f"{rid}: {why[2]}" for rid, why in named[:3] if why)
        name, value = named[0][1][:2]  # type: ignore[index]
    else:
        detail = f"no rubric has criteria named {sorted(seen)}"
        name, value = sorted(seen)[0], None
    first = min((g for g in groups if g.criterion == name and value in (None, g.value)),
                key=lambda g: (g.file, g.line))
    return Problem(files[first.file], f"no rubric fits every row ({detail}); choose one with "
                                      f"--rubric ID, or {_declare(seen)}", row=first.line,
                   field="criterion" if value is None else "value")


def _declare(seen: Observed) -> str:
    """How to declare the file's scale: ``--criteria``, or, for criterion names it cannot
    take (spaces, brackets), a rubric file that lists those names as aliases."""
    odd = sorted(n for n in seen if not is_key(n))
    if not odd:
        return f"declare the scale with --criteria {_hint(seen)}"
    return (f"write a rubric file whose criteria list {odd} as aliases (docs/rubrics.md) and "
            f"choose it with --rubric ID: --criteria keys hold only letters, digits, '_', "
            f"'.' and '-'")


def _hint(seen: Observed) -> str:
    """A ``--criteria`` definition of what the file holds (``likert=1..5``)."""
    parts = []
    for name, values in sorted(seen.items()):
        ordered = sorted(values)
        if len(ordered) > MAX_LEVELS:  # a slider, not levels
            parts.append(f"{name}={ordered[0]:g}..{ordered[-1]:g}:any")
            continue
        if len(ordered) < 2:
            parts.append(f"{name}=LOW..HIGH")
            continue
        levels = _levels(ordered)
        parts.append(f"{name}={levels.strip('[]').replace(', ', ',')}")
    return " ".join(parts)


def _levels(values: Sequence[float]) -> str:
    ints = all(float(v).is_integer() for v in values)
    if ints and len(values) > 2 and values[-1] - values[0] == len(values) - 1:
        return f"{values[0]:g}..{values[-1]:g}"
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def per_task(choice: Choice, dimensions: Iterable[str | None]) -> Choice:
    """ImagenHub: each task gets the rubric written for it, where that rubric is a variant
    of the chosen default (same criteria and scale)."""
    default = choice.rubrics.default
    if default is None:
        return choice
    per = {}
    for task in sorted({d for d in dimensions if d in TASK_RUBRICS}):
        rubric = common.rubric(TASK_RUBRICS[task])
        if rubric.variant_of == default.id:
            per[task] = rubric
    if not per:
        return choice
    tasks = ", ".join(f"{t}: {r.id}" for t, r in per.items())
    return Choice(StudyRubrics(default, per), choice.rubric_id,
                  {**choice.settings, "rubrics": {t: r.id for t, r in per.items()}},
                  f"{choice.note}; per task: {tasks}")


def check(rubrics: StudyRubrics, groups: Iterable[Group], files: Sequence[str],
          log: ProblemLog) -> dict[tuple[str | None, str], str]:
    """Check every (dimension, criterion, value) group against its rubric; log problems
    (counted per row); return the aliases to store under their key."""
    renames: dict[tuple[str | None, str], str] = {}
    for g in groups:
        rubric = rubrics.for_dimension(g.dimension)
        more = f" (and {g.rows - 1} more row(s) like it)" if g.rows > 1 else ""
        where = (files[g.file], g.line)
        if rubric is None:
            log.add(Problem(where[0], f"no rubric for dimension {g.dimension!r}: give a"
                                        f" default with --rubric ID{more}", row=g.line,
                            field="dimension"), times=g.rows)
            continue
        criterion = rubric.resolve(g.criterion)
        if criterion is None:
            names = [c.key for c in rubric.criteria] + [a for c in rubric.criteria
                                                         for a in c.aliases]
            log.add(Problem(where[0], f"criterion {g.criterion!r} is not in rubric {rubric.id}"
                                      f" ({sorted(names)}){more}", row=g.line,
                            field="criterion"), times=g.rows)
        elif not criterion.accepts(g.value):
            log.add(Problem(where[0], f"{g.value:g} is not on the {criterion.key} scale "
                                      f"{_scale(criterion)} of rubric {rubric.id}{more}",
                            row=g.line, field="value"), times=g.rows)
        elif criterion.key != g.criterion:
            renames[(g.dimension, g.criterion)] = criterion.key
    return renames
