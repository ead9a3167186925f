"""Human vs metric agreement at the model level and the item (image) level.

Items are images: the human score of an image is the mean over its raters (ratings) or
minus its mean rank (rankings, so that higher is better); the metric score is the mean of
the metric's rows for the image (image-level score, or accuracy over its questions).
Both sides are oriented so that higher is better before correlating.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from concord.stats._resample import (
    bootstrap_weights,
    percentile_interval,
    prompt_codes,
    ratio,
    resampled_sums,
    unit_sums,
)
from concord.stats._validate import (
    check_positive_int,
    filled_text,
    numeric_values,
    require_columns,
)
from concord.stats.correlation import ROWWISE, correlations, pairwise_accuracy
from concord.stats.human import first_rows, group_codes

STATS = ("spearman", "kendall_tau_b", "pearson")
SCORE_COLUMNS = ("prompt_id", "model", "metric", "value")


def _join_keys(left: pd.DataFrame, right: pd.DataFrame) -> list[str]:
    optional = [c for c in ("study", "sample") if c in left.columns and c in right.columns]
    return ["prompt_id", "model", *optional]


def item_means(frame: pd.DataFrame, keys: Sequence[str], *, where: str) -> pd.DataFrame:
    """Mean ``value`` per item ``keys`` (NaN values ignored), keeping ``dimension``.

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
    n = np.bincount(code)
    out["value"] = np.bincount(code, weights=values) / n
    out["n"] = n
    return out


def join_items(human: pd.DataFrame, metric: pd.DataFrame) -> pd.DataFrame:
    """Inner join of human and metric item means on the image keys both frames have.

    Returns:
        Columns ``prompt_id, model, [study, sample], dimension, human, metric``.
    """
    keys = _join_keys(human, metric)
    right = metric[[*keys, "value"]].rename(columns={"value": "metric"})
    if "dimension" not in human.columns and "dimension" in metric.columns:
        right = metric[[*keys, "dimension", "value"]].rename(columns={"value": "metric"})
    left = human.drop(columns=["n"], errors="ignore").rename(columns={"value": "human"})
    return left.merge(right, on=keys, how="inner", validate="one_to_one")


class _ModelSums:
    """Per-prompt sums of human, metric and item counts per model for one items frame."""

    def __init__(self, items: pd.DataFrame) -> None:
        require_columns(items, ["prompt_id", "model", "human", "metric"], where="model_level")
        units, _ = prompt_codes(items["prompt_id"])
        model, _ = pd.factorize(items["model"], sort=True)
        self.n_units, self.n_models = int(units.max()) + 1, int(model.max()) + 1
        shape = (units, model)
        self.human, self.counts = unit_sums(*shape, items["human"].to_numpy(float),
                                            self.n_units, self.n_models)
        self.metric, _ = unit_sums(*shape, items["metric"].to_numpy(float),
                                   self.n_units, self.n_models)
        self.n_items = len(items)


def model_level(
    items: pd.DataFrame, *, n_boot: int = 1000, n_perm: int = 1000, seed: int = 0,
    ci: float = 0.95,
) -> dict[str, float]:
    """Rank agreement of model means, with a prompt-bootstrap CI and a permutation p-value.

    Model scores are the means over each model's items of ``human`` and of ``metric``.
    The CI resamples prompts (sorted by id) with replacement, recomputes both model means
    and all correlations for every resample at once. The p-value permutes the metric's
    model means over models (``default_rng((seed, 1))``), two-sided:
    ``(1 + #{|r_perm| >= |r|}) / (1 + n_perm)``.

    Args:
        items: ``prompt_id, model, human, metric`` (one row per item; higher = better).
        n_boot: Bootstrap resamples.
        n_perm: Permutations.
        seed: Seed of the bootstrap (and, with 1, of the permutations).
        ci: Confidence level.

    Returns:
        ``<stat>, <stat>_ci_low, <stat>_ci_high, <stat>_p`` for Spearman, Kendall τ_b and
        Pearson, plus ``n`` (models), ``n_prompts`` and ``n_items``.
    """
    return model_level_many([items], n_boot=n_boot, n_perm=n_perm, seed=seed, ci=ci)[0]


def model_level_many(
    frames: Sequence[pd.DataFrame], *, n_boot: int = 1000, n_perm: int = 1000,
    seed: int = 0, ci: float = 0.95,
) -> list[dict[str, float]]:
    """:func:`model_level` of several items frames, each exactly as if alone.

    Frames with the same number of prompts share the resampling matrix, so their
    bootstraps run as ONE matrix product (reading that matrix is the dominant cost).
    """
    n_boot = check_positive_int(n_boot, name="n_boot")
    n_perm = check_positive_int(n_perm, name="n_perm")
    sums = [_ModelSums(f) for f in frames]
    by_size: dict[int, list[int]] = {}
    for k, s in enumerate(sums):
        by_size.setdefault(s.n_units, []).append(k)
    boots: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for n_units, ks in by_size.items():
        stacked = np.hstack([m for k in ks
                             for m in (sums[k].human, sums[k].metric, sums[k].counts)])
        product = resampled_sums(bootstrap_weights(n_units, n_boot, seed), stacked)
        start = 0
        for k in ks:
            width = sums[k].n_models
            h, m, c = (product[:, start + j * width:start + (j + 1) * width] for j in range(3))
            boots[k] = (ratio(h, c), ratio(m, c))
            start += 3 * width
    return [_model_stats(s, *boots[k], n_perm=n_perm, seed=seed, ci=ci)
            for k, s in enumerate(sums)]


def _model_stats(s: _ModelSums, hb: np.ndarray, mb: np.ndarray, *, n_perm: int, seed: int,
                 ci: float) -> dict[str, float]:
    h, m = s.human.sum(0) / s.counts.sum(0), s.metric.sum(0) / s.counts.sum(0)
    rng = np.random.default_rng((seed, 1))
    perm = rng.permuted(np.tile(np.arange(s.n_models), (n_perm, 1)), axis=1)
    out: dict[str, float] = {"n": s.n_models, "n_prompts": s.n_units, "n_items": s.n_items}
    defined = s.n_models >= 3
    for name in STATS:
        fn = ROWWISE[name]
        r = float(fn(h[None, :], m[None, :])[0]) if defined else float("nan")
        low, high = percentile_interval(fn(hb, mb)[:, None], ci)
        null = fn(np.broadcast_to(h, perm.shape), m[perm])
        p = (1 + np.sum(np.abs(null) >= abs(r) - 1e-12)) / (1 + n_perm)
        out.update({name: r, f"{name}_ci_low": float(low[0]) if defined else np.nan,
                    f"{name}_ci_high": float(high[0]) if defined else np.nan,
                    f"{name}_p": float(p) if np.isfinite(r) else np.nan})
    return out


def item_level(items: pd.DataFrame, *, ci: float = 0.95) -> dict[str, float]:
    """Item-level correlations (Fisher-z CIs, scipy p-values) and pairwise accuracy.

    The pairwise accuracy (``acc_23`` with tie calibration) compares items of the same
    prompt only, averaged over prompts.

    Returns:
        :func:`concord.stats.correlation.correlations` keys (``n`` = items), plus
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
    """Item-level human scores per source: ``ratings:<criterion>`` and ``rankings:<criterion>``.

    Ranking items get ``value = −mean rank`` so that higher is better.
    """
    sources: dict[str, pd.DataFrame] = {}
    if ratings is not None:
        require_columns(ratings, ["prompt_id", "model", "criterion", "value"],
                        where="human_sources")
        keys = _join_keys(ratings, ratings)
        for crit, part in ratings.groupby("criterion", sort=True):
            sources[f"ratings:{crit}"] = item_means(part, keys, where="human_sources")
    if rankings is not None:
        require_columns(rankings, ["prompt_id", "model", "criterion", "rank"],
                        where="human_sources")
        keys = _join_keys(rankings, rankings)
        flipped = rankings.assign(value=-numeric_values(rankings, "rank", where="human_sources"))
        for crit, part in flipped.groupby("criterion", sort=True):
            sources[f"rankings:{crit}"] = item_means(part, keys, where="human_sources")
    return sources


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

    Returns:
        One row per combination: ``metric, judge, human, dimension, level`` (``"model"``
        or ``"item"``), the statistics of :func:`model_level` / :func:`item_level`.
        ``dimension = "all"`` pools every prompt.
    """
    require_columns(scores, SCORE_COLUMNS, where="human_metric_table")
    directions = dict(higher_is_better or {})
    judged = scores.assign(judge=filled_text(scores["judge"], "") if "judge" in scores else "")
    sources = human_sources(ratings, rankings)
    heads: list[dict] = []
    subsets: list[pd.DataFrame] = []
    for (metric, judge), part in judged.groupby(["metric", "judge"], sort=True):
        keys = _join_keys(part, part)
        metric_items = item_means(part, keys, where="human_metric_table")
        if not directions.get(str(metric), True):
            metric_items["value"] = -metric_items["value"]
        for source, human in sources.items():
            for dim, sub in _subsets(join_items(human, metric_items)):
                heads.append({"metric": metric, "judge": judge, "human": source,
                              "dimension": dim})
                subsets.append(sub)
    # All model-level bootstraps at once: subsets with equal prompt counts share one product.
    model_rows = model_level_many(subsets, n_boot=n_boot, n_perm=n_perm, seed=seed, ci=ci)
    rows = []
    for head, sub, model_row in zip(heads, subsets, model_rows, strict=True):
        rows.append({**head, "level": "model", **model_row})
        rows.append({**head, "level": "item", **item_level(sub, ci=ci)})
    return pd.DataFrame(rows)


def _subsets(items: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """``("all", items)`` and one subset per dimension, skipping empty ones."""
    subsets = [("all", items)]
    if "dimension" in items.columns:
        dims = items["dimension"].dropna()
        subsets += [(str(d), items[items["dimension"] == d]) for d in sorted(dims.unique())]
    return [(dim, sub) for dim, sub in subsets if not sub.empty]
