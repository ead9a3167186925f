"""Planning from a pilot study: the variance components of its ratings (and, for two of
its metrics, their correlations with the human image scores), then the plan table of
:mod:`concord.stats.power`. The CLI's ``plan`` and the dashboard's Plan panel call this."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlite_utils import Database

from concord.errors import NotFoundError
from concord.services.report import frames as study_frames
from concord.services.report import request as report_request
from concord.services.report.settings import DERIVED_NAME, derived_criteria
from concord.stats.benchmarks.stored import image_scores
from concord.stats.derived import with_derived
from concord.stats.human_vs_metric.table import item_means, join_items, join_keys
from concord.stats.power import Components, components_from_pilot

# Bounds on a plan (a hostile or mistyped grid must not run for hours or exhaust memory).
MAX_PROMPTS, MAX_RATERS, MAX_SIMS, MAX_GRID = 100_000, 100, 100_000, 50


def pilot_components(db: Database, study_name: str, *, criterion: str | None = None,
                     metrics: Sequence[str] = (), difference: float | None = None
                     ) -> tuple[Components, str]:
    """The components of one criterion of a study (derived ``O`` first by default).

    Returns:
        ``(components, criterion)``.

    Raises:
        NotFoundError: No such study, criterion or metric.
        ValueError: Too little data (see :func:`components_from_pilot`).
    """
    request = report_request.resolve(db, study_name)  # the study's one lookup
    data = study_frames.load_frames(db, request.study)
    rated = data.ratings
    if not rated.empty:
        rated = with_derived(rated, derived_criteria(request.study, list(request.dimensions)))
    found = sorted({str(c) for c in rated["criterion"].unique()}) if not rated.empty else []
    if not found:
        raise NotFoundError(f"study {study_name!r} has no ratings to plan from")
    criterion = criterion or (DERIVED_NAME if DERIVED_NAME in found else found[0])
    if criterion not in found:
        raise NotFoundError(f"study {study_name!r} has no criterion {criterion!r} "
                            f"(criteria: {', '.join(found)})")
    rows = rated[(rated["criterion"].astype(str) == criterion).to_numpy()]
    rows = rows.assign(prompt_id=rows["prompt_id"].astype(str), model=rows["model"].astype(str))
    items = _metric_items(data.scores, rows, list(metrics), study_name)
    return components_from_pilot(rows, difference=difference, metrics=items), criterion


def _metric_items(scores: pd.DataFrame, rows: pd.DataFrame, metrics: list[str],
                  study_name: str) -> pd.DataFrame | None:
    """``human, x, y`` per image both metrics scored (None without two metrics)."""
    if not metrics:
        return None
    if len(metrics) != 2 or metrics[0] == metrics[1]:
        raise ValueError(f"give two different metrics, got {metrics}")
    images = image_scores(scores)
    judge = images["judge"].fillna("").astype(str) if not images.empty else pd.Series()
    labels = (images["metric"].astype(str).where(judge == "", images["metric"].astype(str)
                                                  + "@" + judge) if not images.empty
              else pd.Series(dtype=str))
    have = sorted(labels.unique())
    for m in metrics:
        if m not in have:
            raise NotFoundError(f"study {study_name!r} has no scores of metric {m!r} "
                                f"(metrics: {', '.join(have) or 'none'}; a metric run with a "
                                "judge is named metric@judge)")
    human = item_means(rows, join_keys(rows, rows), where="plan")
    joined = []
    for name, m in zip(("x", "y"), metrics, strict=True):
        part = images[(labels == m).to_numpy()]
        part = part.assign(prompt_id=part["prompt_id"].astype(str),
                           model=part["model"].astype(str))
        metric = item_means(part, join_keys(part, part), where="plan")
        joined.append(join_items(human, metric).rename(columns={"metric": name}))
    keys = [k for k in join_keys(joined[0], joined[1]) if k in joined[1].columns]
    both = joined[0].merge(joined[1][[*keys, "y"]], on=keys)
    return both[["human", "x", "y"]]


def pilot_plan(db: Database, study_name: str, *, criterion: str | None,
               difference: float | None, prompts: Sequence[int], raters: Sequence[int],
               n_sims: int) -> dict:
    """The study as a pilot: its variance components and the simulated plan table
    (``concord.stats.power.plan_table``) over ``prompts`` × ``raters``, as records."""
    from concord.stats.power import plan_table
    from concord.stats.report.records import records

    components, used = pilot_components(db, study_name, criterion=criterion,
                                        difference=difference)
    table = plan_table(components, prompts=prompts, raters=raters, n_sims=n_sims)
    return {"components": dict(vars(components)), "criterion": used,
            "table": records(table)}
