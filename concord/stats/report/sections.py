"""The sections of :func:`concord.stats.full_report` for one study, as DataFrames.

Each builder takes the study's frames after gold items were split off (see
:func:`concord.stats.quality.split_gold`) and returns ``{section key: frame}``; the
report tags them with the study and turns them into records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from concord.stats._resample import (
    bootstrap_weights,
    percentile_interval,
    ratio,
    resampled_sums,
)
from concord.stats.agreement.frames import agreement_table
from concord.stats.differences import model_differences
from concord.stats.flags import (
    item_times,
    quality_flags,
    rater_signals,
    time_summary,
    too_fast_items,
)
from concord.stats.human import model_scores
from concord.stats.human_vs_metric.drilldown import disagreements
from concord.stats.human_vs_metric.metric_compare import metric_comparisons
from concord.stats.human_vs_metric.per_model import metric_rows, per_model_table, rater_vs_rest
from concord.stats.human_vs_metric.table import Joined, correlation_table
from concord.stats.rankings import (
    kendalls_w_by_prompt,
    model_ranking,
    position_bias,
    rank_by_position,
)
from concord.stats.thresholds import QualityThresholds


def human_sections(rated: pd.DataFrame, *, n_boot: int, n_perm: int, ci: float, seed: int,
                   levels: Sequence[str], by_dimension: bool) -> dict[str, pd.DataFrame]:
    """Leaderboard (both model scores, rank intervals), agreement per study and per model
    (with bootstrap intervals), and the paired differences of every two models."""
    boot = {"n_boot": n_boot, "seed": seed, "ci": ci}
    out = {"human": model_scores(rated, n_boot=n_boot, ci=ci, seed=seed),
           "agreement_study": agreement_table(rated, by=("criterion",), levels=levels, **boot),
           "agreement_model": agreement_table(rated, by=("model", "criterion"),
                                              levels=levels, **boot),
           "model_differences": model_differences(rated, n_perm=n_perm, **boot)}
    if by_dimension and "dimension" in rated.columns:
        # One subset at a time, not one groupby over all: each dimension's CI then
        # resamples only its own prompts, so these rows equal a report filtered to it.
        human, agree = [], []
        dims = rated["dimension"]
        for dim in sorted(dims.dropna().unique().tolist(), key=str):
            sub = rated[(dims == dim).to_numpy()]
            human.append(model_scores(sub, n_boot=n_boot, ci=ci, seed=seed)
                         .assign(dimension=dim))
            agree.append(agreement_table(sub, by=("model", "criterion"), levels=levels,
                                         **boot).assign(dimension=dim))
        if human:
            out["dimension_human"] = pd.concat(human, ignore_index=True)
            out["dimension_agreement"] = pd.concat(agree, ignore_index=True)
    return out


def ranking_sections(rankings: pd.DataFrame, *, n_boot: int, seed: int,
                     ci: float) -> dict[str, pd.DataFrame]:
    """Model ranking, Kendall's W per prompt (with its χ² test) and summarised (with a
    prompt-bootstrap interval of the mean), and display-position bias."""
    w = kendalls_w_by_prompt(rankings)
    summary = w.groupby("criterion", sort=True).agg(
        mean_w=("w", "mean"), median_w=("w", "median"), n_prompts=("w", "count"),
        mean_raters=("n_raters", "mean")).reset_index()
    bounds = [_mean_interval(part["w"].to_numpy(float), n_boot, seed, ci)
              for _, part in w.groupby("criterion", sort=True)]
    summary["mean_w_ci_boot_low"] = [b[0] for b in bounds]
    summary["mean_w_ci_boot_high"] = [b[1] for b in bounds]
    out = {"rankings_models": model_ranking(rankings), "rankings_kendalls_w": summary,
           "rankings_kendalls_w_prompts": w}
    if "position" in rankings.columns:
        out["rankings_position_bias"] = position_bias(rankings)
        out["rankings_rank_by_position"] = rank_by_position(rankings)
    return out


def _mean_interval(values: np.ndarray, n_boot: int, seed: int,
                   ci: float) -> tuple[float, float]:
    """Prompt-bootstrap interval of the mean of per-prompt values (NaN ones left out);
    prompts in the order given (sorted by id)."""
    ok = np.isfinite(values)
    if not ok.any():
        return float("nan"), float("nan")
    weights = bootstrap_weights(len(values), n_boot, seed)
    both = resampled_sums(weights, np.column_stack([np.where(ok, values, 0.0), ok]))
    low, high = percentile_interval(ratio(both[:, :1], both[:, 1:]), ci)
    return float(low[0]), float(high[0])


def metric_sections(joined: Joined, *, n_boot: int, n_perm: int, seed: int, ci: float,
                    model_score: str, n_disagreements: int,
                    higher_is_better: Mapping[str, bool] | None) -> dict[str, pd.DataFrame]:
    """Human vs metric (model and item level), per-model item level, disagreements, and
    every two metrics compared."""
    if not joined.subsets:
        return {}
    models, combined = per_model_table(joined)
    return {"human_vs_metric": correlation_table(joined, n_boot=n_boot, n_perm=n_perm,
                                                 seed=seed, ci=ci, model_score=model_score),
            "metric_comparisons": metric_comparisons(joined, n_boot=n_boot, n_perm=n_perm,
                                                     seed=seed, ci=ci),
            "per_model_models": models, "per_model_combined": combined,
            "disagreements": disagreements(joined, n=n_disagreements,
                                           higher_is_better=higher_is_better)}


def rater_sections(all_ratings: pd.DataFrame, all_rankings: pd.DataFrame | None,
                   joined: Joined, gold_table: pd.DataFrame, thresholds: QualityThresholds,
                   metric: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Rater versus the rest, per-rater quality signals, flags and too-fast items.

    ``all_ratings``/``all_rankings`` include gold items (behaviour is measured on all of
    a rater's work); ``joined`` holds the sources without gold; ``metric`` the metric
    sections, whose per-model and item rows are the metric rows of rater versus the rest.
    """
    metrics = None
    if "per_model_models" in metric:
        metrics = metric_rows(metric["per_model_models"], metric["human_vs_metric"])
    rest = rater_vs_rest(joined.sources, joined, metrics=metrics)
    out = {f"rest_{k}": v for k, v in rest.items()}
    signals = rater_signals(all_ratings, all_rankings)
    items = item_times(all_ratings, all_rankings, thresholds)
    times = time_summary(items)
    out["raters_quality"] = _quality_table(signals, rest["pooled"], gold_table)
    out["raters_flags"] = quality_flags(signals, times, gold_table, thresholds)
    out["raters_too_fast"] = too_fast_items(items)
    out["raters_times"] = times
    out["raters_gold"] = gold_table
    return out


def gold_only_sections(gold_table: pd.DataFrame,
                       thresholds: QualityThresholds) -> dict[str, pd.DataFrame]:
    """Rater quality of a study with gold answers but no ratings or rankings (a pairwise
    study): gold accuracy, its flags, and the quality table of gold columns."""
    none = pd.DataFrame(columns=["rater", "unit", "criterion", "n", "modal_share",
                                 "display_order_share", "modal_value"])
    times = pd.DataFrame(columns=["rater", "unit", "n_items", "n_timed", "n_too_fast",
                                  "too_fast_share"])
    return {"raters_gold": gold_table,
            "raters_flags": quality_flags(none, times, gold_table, thresholds),
            "raters_quality": _quality_table(none[["rater", "unit", "criterion"]],
                                             pd.DataFrame(), gold_table)}


def _quality_table(signals: pd.DataFrame, pooled: pd.DataFrame,
                   gold: pd.DataFrame) -> pd.DataFrame:
    """Signals + pooled rater-vs-rest correlations + gold accuracy per rater × criterion."""
    keys = ["rater", "unit", "criterion"]
    table = signals
    if not pooled.empty:
        rest = pooled[pooled["who"] == "rater"]
        unit = rest["human"].str.split(":", n=1)
        rest = pd.DataFrame({
            "rater": rest["name"].astype(str),
            "unit": unit.str[0].map({"ratings": "image", "rankings": "prompt"}),
            "criterion": unit.str[1], "rest_spearman": rest["spearman"],
            "rest_kendall_tau_b": rest["kendall_tau_b"], "rest_pearson": rest["pearson"],
            "rest_n_images": rest["n_images"]})
        table = table.merge(rest, on=keys, how="outer")
    if not gold.empty:
        table = table.merge(gold.rename(columns={"n_gold": "gold_n", "n_correct": "gold_correct",
                                                 "accuracy": "gold_accuracy"}),
                            on=keys, how="outer")
    return table.sort_values(keys, kind="stable", ignore_index=True)
