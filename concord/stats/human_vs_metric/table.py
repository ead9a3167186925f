"""Human vs metric agreement at the model level and the item (image) level.

Items are images: the human score of an image is the mean over its raters (ratings) or
minus its mean rank (rankings, so that higher is better); the metric score is the mean of
the metric's rows for the image (image-level score, or accuracy over its questions).
Both sides are oriented so that higher is better before correlating. Image means are
order-independent sums (:mod:`concord.stats._exact`), so equal ratings give equal means
and rank correlations see them as ties.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from concord.stats._codes import first_rows, group_codes
from concord.stats._exact import group_means
from concord.stats._validate import (
    check_choice,
    filled_text,
    numeric_values,
    require_columns,
)
from concord.stats.human import bootstrap_means
from concord.stats.human_vs_metric.correlation import correlations, pairwise_accuracy
from concord.stats.human_vs_metric.model_level import (
    MODEL_SCORES,
    HumanModelScores,
    model_level_many,
)

STATS = ("spearman", "kendall_tau_b", "pearson")
SCORE_COLUMNS = ("prompt_id", "model", "metric", "value")


def join_keys(left: pd.DataFrame, right: pd.DataFrame) -> list[str]:
    """Image keys both frames have: ``prompt_id, model`` (+ ``study``, ``sample``)."""
    optional = [c for c in ("study", "sample") if c in left.columns and c in right.columns]
    return ["prompt_id", "model", *optional]


def item_means(frame: pd.DataFrame, keys: Sequence[str], *, where: str) -> pd.DataFrame:
    """Mean ``value`` per item ``keys`` (NaN values ignored), keeping ``dimension``.

    The sum is independent of row order (:func:`concord.stats._exact.group_means`).

    Returns:
        The ``keys`` columns, ``dimension`` (when present), ``value`` and ``n`` (rows).
    """
    values = numeric_values(frame, "value", where=where)
    ok = ~np.isnan(values)
    df, values = frame[ok], values[ok]
    code = group_codes(df, keys)
    first = first_rows(code)
    carry = [*keys, "dimension"] if "dimension" in df.columns else list(keys)
    out = df.iloc[first][carry].reset_index(drop=True)
    means, n = group_means(code, values, len(first))
    out["value"] = means
    out["n"] = n
    return out


def join_items(human: pd.DataFrame, metric: pd.DataFrame) -> pd.DataFrame:
    """Inner join of human and metric item means on the image keys both frames have.

    Returns:
        Columns ``prompt_id, model, [study, sample], dimension, human, metric`` and
        ``n_raters`` (the human item's number of values) when the human frame has ``n``.
    """
    keys = join_keys(human, metric)
    right = metric[[*keys, "value"]].rename(columns={"value": "metric"})
    if "dimension" not in human.columns and "dimension" in metric.columns:
        right = metric[[*keys, "dimension", "value"]].rename(columns={"value": "metric"})
    left = human.rename(columns={"value": "human", "n": "n_raters"})
    return left.merge(right, on=keys, how="inner", validate="one_to_one")


def item_level(items: pd.DataFrame, *, ci: float = 0.95) -> dict[str, float]:
    """Item-level correlations (Fisher-z CIs, scipy p-values) and pairwise accuracy.

    The pairwise accuracy (``acc_23`` with tie calibration) compares items of the same
    prompt only, averaged over prompts.

    Returns:
        :func:`concord.stats.human_vs_metric.correlation.correlations` keys (``n`` = items), plus
        ``pairwise_acc``, ``pairwise_acc_eps``, ``n_items`` and ``n_prompts``.
    """
    require_columns(items, ["prompt_id", "human", "metric"], where="item_level")
    out = correlations(items["human"], items["metric"], ci=ci)
    # Integer prompt codes: np.unique on an object column of ids would dominate the time.
    prompts, _ = pd.factorize(items["prompt_id"])
    acc, eps = pairwise_accuracy(items["human"], items["metric"], groups=prompts)
    out.update(pairwise_acc=acc, pairwise_acc_eps=eps, n_items=out["n"],
               n_prompts=int(items["prompt_id"].nunique()))
    return out


def human_sources(
    ratings: pd.DataFrame | None, rankings: pd.DataFrame | None
) -> dict[str, pd.DataFrame]:
    """Rater-level human values per source: ``ratings:<criterion>``, ``rankings:<criterion>``.

    Ranking rows get ``value = −rank`` so that higher is better.

    Returns:
        Per source, the rows of that criterion with the image keys, ``rater``, ``value``
        and ``dimension`` (when present).
    """
    sources: dict[str, pd.DataFrame] = {}
    if ratings is not None:
        require_columns(ratings, ["prompt_id", "model", "rater", "criterion", "value"],
                        where="human_sources")
        for crit, part in ratings.groupby("criterion", sort=True, observed=True):
            sources[f"ratings:{crit}"] = part
    if rankings is not None:
        require_columns(rankings, ["prompt_id", "model", "rater", "criterion", "rank"],
                        where="human_sources")
        flipped = rankings.assign(value=-numeric_values(rankings, "rank", where="human_sources"))
        for crit, part in flipped.groupby("criterion", sort=True, observed=True):
            sources[f"rankings:{crit}"] = part
    return sources


@dataclass
class Joined:
    """Human and metric items joined per metric × judge × human source × dimension.

    ``heads[k]`` (``metric, judge, human, dimension``) describes ``subsets[k]``
    (``prompt_id, model, …, human, metric``); ``sources`` holds the rater-level rows.
    """

    heads: list[dict] = field(default_factory=list)
    subsets: list[pd.DataFrame] = field(default_factory=list)
    sources: dict[str, pd.DataFrame] = field(default_factory=dict)


def join_sources(scores: pd.DataFrame | None, *, ratings: pd.DataFrame | None = None,
                 rankings: pd.DataFrame | None = None,
                 higher_is_better: Mapping[str, bool] | None = None,
                 sources: dict[str, pd.DataFrame] | None = None) -> Joined:
    """Every (metric, judge) × human source × dimension subset of joined items.

    Metrics mapped to False in ``higher_is_better`` are negated first. ``dimension =
    "all"`` pools every prompt; each dimension of the joined items has its own subset.
    ``sources`` (from :func:`human_sources`) replaces ``ratings``/``rankings``; without
    ``scores`` the result holds only the sources.
    """
    out = Joined(sources=sources if sources is not None else human_sources(ratings, rankings))
    if scores is None or scores.empty:
        return out
    require_columns(scores, SCORE_COLUMNS, where="human_metric_table")
    directions = dict(higher_is_better or {})
    judged = scores.assign(judge=filled_text(scores["judge"], "") if "judge" in scores else "")
    human_items = {source: item_means(rows, join_keys(rows, rows), where="human_sources")
                   for source, rows in out.sources.items()}
    for (metric, judge), part in judged.groupby(["metric", "judge"], sort=True):
        metric_items = item_means(part, join_keys(part, part), where="human_metric_table")
        if not directions.get(str(metric), True):
            metric_items["value"] = -metric_items["value"]
        for source, human in human_items.items():
            for dim, sub in _subsets(join_items(human, metric_items)):
                out.heads.append({"metric": metric, "judge": judge, "human": source,
                                  "dimension": dim})
                out.subsets.append(sub)
    return out


def _rater_means(joined: Joined, k: int, n_boot: int, seed: int) -> HumanModelScores:
    """Mean of rater means per model over subset k's images, with its resamples."""
    items, rows = joined.subsets[k], joined.sources[joined.heads[k]["human"]]
    keys = join_keys(rows, items)
    wanted = items[keys].drop_duplicates()
    picked = rows.merge(wanted.astype({c: rows[c].dtype for c in keys}), on=keys)
    groups, point, samples = bootstrap_means(picked, by=("model",), n_boot=n_boot, seed=seed)
    return HumanModelScores(list(groups["model"]), point, samples)


def correlation_table(joined: Joined, *, n_boot: int = 1000, n_perm: int = 1000,
                      seed: int = 0, ci: float = 0.95,
                      model_score: str = "mean_image_means") -> pd.DataFrame:
    """The ``model`` and ``item`` rows of :func:`human_metric_table` for joined subsets."""
    check_choice(model_score, MODEL_SCORES, name="model_score")
    human = None
    if model_score == "mean_rater_means":
        human = [_rater_means(joined, k, n_boot, seed) for k in range(len(joined.subsets))]
    # All model-level bootstraps at once: subsets with equal prompt counts share one product.
    model_rows = model_level_many(joined.subsets, n_boot=n_boot, n_perm=n_perm, seed=seed,
                                  ci=ci, human=human)
    rows = []
    for head, sub, model_row in zip(joined.heads, joined.subsets, model_rows, strict=True):
        rows.append({**head, "level": "model", "human_model_score": model_score, **model_row})
        rows.append({**head, "level": "item", "human_model_score": None,
                     **item_level(sub, ci=ci)})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


TABLE_COLUMNS = ["metric", "judge", "human", "dimension", "level", "human_model_score",
                 *(f"{s}{suffix}" for s in STATS
                   for suffix in ("", "_ci_boot_low", "_ci_boot_high", "_p_perm",
                                  "_ci_fisher_low", "_ci_fisher_high", "_p_analytic")),
                 "n", "n_prompts", "n_items", "pairwise_acc", "pairwise_acc_eps"]


def human_metric_table(
    scores: pd.DataFrame,
    *,
    ratings: pd.DataFrame | None = None,
    rankings: pd.DataFrame | None = None,
    higher_is_better: Mapping[str, bool] | None = None,
    n_boot: int = 1000,
    n_perm: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    model_score: str = "mean_image_means",
) -> pd.DataFrame:
    """Human vs metric per metric × judge × human source × dimension × level.

    Args:
        scores: Metric scores frame (``prompt_id, model, metric, value`` and optionally
            ``judge, sample, dimension``).
        ratings: Ratings frame (one human source per criterion).
        rankings: Rankings frame (one human source per criterion, rank 1 = best).
        higher_is_better: Per metric name; metrics mapped to False are negated first.
        n_boot: Bootstrap resamples for the model-level CI.
        n_perm: Permutations for the model-level p-value.
        seed: Seed for both.
        ci: Confidence level.
        model_score: The human model score of the ``model`` level: ``mean_image_means``
            or ``mean_rater_means`` (see :func:`concord.stats.model_scores`).

    Returns:
        One row per combination (columns :data:`TABLE_COLUMNS`): ``metric, judge, human,
        dimension, level`` (``"model"`` or ``"item"``); ``model`` rows fill the
        ``*_ci_boot_*``/``*_p_perm`` columns (:func:`model_level`), ``item`` rows the
        ``*_ci_fisher_*``/``*_p_analytic`` and pairwise columns (:func:`item_level`).
    """
    joined = join_sources(scores, ratings=ratings, rankings=rankings,
                          higher_is_better=higher_is_better)
    return correlation_table(joined, n_boot=n_boot, n_perm=n_perm, seed=seed, ci=ci,
                             model_score=model_score)


def _subsets(items: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """``("all", items)`` and one subset per dimension, skipping empty ones."""
    subsets = [("all", items)]
    if "dimension" in items.columns:
        dims = items["dimension"].dropna()
        subsets += [(str(d), items[items["dimension"] == d]) for d in sorted(dims.unique())]
    return [(dim, sub) for dim, sub in subsets if not sub.empty]
