"""Rankings of models per prompt (the TIIF user-study protocol) and display-position bias.

Input is the Rankings frame of ``docs/data-model.md``: ``prompt_id, rater, criterion,
model, rank`` (1 = best, ties share a number), plus ``position`` (0-based display slot)
for the bias test and ``dimension`` (optional) for per-dimension tables.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from concord.stats._validate import (
    filled_text,
    numeric_values,
    require_columns,
    require_nonempty,
)

RANKING_COLUMNS = ("prompt_id", "rater", "criterion", "model", "rank")
ALL = "all"


def _clean(rankings: pd.DataFrame, where: str, extra: Sequence[str] = ()) -> pd.DataFrame:
    require_columns(rankings, [*RANKING_COLUMNS, *extra], where=where)
    require_nonempty(rankings, where=where)
    ranks = numeric_values(rankings, "rank", where=where)
    if np.isnan(ranks).any() or (ranks < 1).any():
        raise ValueError(f"{where}: ranks must be numbers >= 1 (1 = best), got "
                         f"{sorted(set(rankings['rank'].tolist()))[:10]}")
    if rankings.duplicated(["prompt_id", "rater", "criterion", "model"]).any():
        raise ValueError(f"{where}: a rater ranked the same model twice for one prompt")
    return rankings.assign(rank=ranks)


def prompt_mean_ranks(rankings: pd.DataFrame) -> pd.DataFrame:
    """Per prompt and criterion, each model's mean rank over the raters.

    Returns:
        Columns ``prompt_id, criterion, model, mean_rank, n_raters`` (+ ``dimension``).
    """
    df = _clean(rankings, "prompt_mean_ranks")
    keys = ["prompt_id", "criterion", "model"]
    if "dimension" in df.columns:
        df = df.assign(dimension=filled_text(df["dimension"], ALL))
        keys.append("dimension")
    out = df.groupby(keys, sort=True, observed=True)["rank"].agg(["mean", "size"])
    return out.rename(columns={"mean": "mean_rank", "size": "n_raters"}).reset_index()


def model_ranking(rankings: pd.DataFrame) -> pd.DataFrame:
    """Model ranking per criterion and dimension from per-prompt mean ranks.

    A model's score is the mean over prompts of its per-prompt mean rank (each prompt
    weighs the same however many raters it had); ``dimension = "all"`` pools all prompts.
    ``position`` 1 is the best model (lowest mean rank); ties share the lowest position.

    Returns:
        Columns ``criterion, dimension, model, mean_rank, std_rank, n_prompts, position``.
    """
    per_prompt = prompt_mean_ranks(rankings)
    if "dimension" not in per_prompt.columns:
        per_prompt["dimension"] = ALL
    parts = [per_prompt]
    if (per_prompt["dimension"] != ALL).any():
        parts.append(per_prompt.assign(dimension=ALL))
    pooled = pd.concat(parts, ignore_index=True)
    keys = ["criterion", "dimension"]
    out = pooled.groupby([*keys, "model"], sort=True)["mean_rank"].agg(
        mean_rank="mean", std_rank="std", n_prompts="size").reset_index()
    out["position"] = out.groupby(keys)["mean_rank"].rank(method="min").astype(int)
    return out.sort_values([*keys, "position", "model"], ignore_index=True)


def kendalls_w_by_prompt(rankings: pd.DataFrame) -> pd.DataFrame:
    """Kendall's W (tie-corrected) of the raters of each prompt and criterion, vectorised.

    A prompt's W uses the raters who ranked all ``n`` models ranked for that prompt;
    raters with partial rankings are left out of that prompt.

    Its χ² test of "no concordance": ``χ² = m (n − 1) W`` with ``n − 1`` degrees of
    freedom (with this tie-corrected W it is Friedman's tie-corrected statistic,
    ``scipy.stats.friedmanchisquare``), ``chi2_p_analytic = chi2.sf(χ², n − 1)``.

    Returns:
        Columns ``prompt_id, criterion, w, n_raters, n_models, chi2, dof,
        chi2_p_analytic``; W (and its test) is NaN when fewer than two raters or models
        remain, or every rater tied every model.
    """
    df = _clean(rankings, "kendalls_w_by_prompt")
    unit = ["prompt_id", "criterion"]
    per_rater = df.groupby([*unit, "rater"], sort=False)["model"].transform("size").to_numpy()
    distinct = df.groupby(unit, sort=False)["model"].transform("nunique").to_numpy()
    df = df[per_rater == distinct]
    # Average ranks within each rater's list make the rank sums comparable under ties.
    r = df.groupby([*unit, "rater"], sort=False)["rank"].rank(method="average")
    df = df.assign(r=r)
    ties = df.groupby([*unit, "rater", "rank"], sort=False).size()
    t = (ties.astype(float) ** 3 - ties).groupby(level=[0, 1]).sum()
    sums = df.groupby([*unit, "model"], sort=False)["r"].sum()
    shape = df.groupby(unit, sort=True).agg(m=("rater", "nunique"), n=("model", "nunique"))
    m = shape["m"].reindex(sums.index.droplevel(2)).to_numpy(dtype=float)
    n = shape["n"].reindex(sums.index.droplevel(2)).to_numpy(dtype=float)
    dev = pd.Series((sums.to_numpy() - m * (n + 1) / 2) ** 2, index=sums.index)
    s = dev.groupby(level=[0, 1]).sum().reindex(shape.index)
    m, n = shape["m"].to_numpy(dtype=float), shape["n"].to_numpy(dtype=float)
    denom = m**2 * (n**3 - n) - m * t.reindex(shape.index).to_numpy()
    ok = (m >= 2) & (n >= 2) & (denom > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(ok, 12 * s.to_numpy() / np.where(ok, denom, 1), np.nan)
    out = shape.reset_index().rename(columns={"m": "n_raters", "n": "n_models"})
    out.insert(2, "w", w)
    out["chi2"] = m * (n - 1) * w
    out["dof"] = (n - 1).astype(int)
    out["chi2_p_analytic"] = stats.chi2.sf(out["chi2"].to_numpy(), n - 1)
    return out


def rank_by_position(rankings: pd.DataFrame) -> pd.DataFrame:
    """Mean rank of the image shown in each display slot, per criterion.

    Returns:
        Columns ``criterion, position, mean_rank, n``. Without position bias every slot's
        mean rank is close to the overall mean rank.
    """
    df = _clean(rankings, "rank_by_position", extra=["position"])
    out = df.groupby(["criterion", "position"], sort=True)["rank"].agg(["mean", "size"])
    return out.rename(columns={"mean": "mean_rank", "size": "n"}).reset_index()


def position_bias(rankings: pd.DataFrame) -> pd.DataFrame:
    """Tests whether the display slot predicts the rank, per criterion.

    Two tests over all ranked images: Spearman ρ between slot and rank (a monotone trend,
    e.g. the first slot winning) and Pearson's χ² test of independence on the
    slot × rank contingency table (any dependence).

    Returns:
        Columns ``criterion, spearman, spearman_p_analytic, chi2, chi2_p_analytic, dof,
        n`` (p-values: scipy's, two-sided); NaN where a test is undefined (a single slot
        or rank value).
    """
    df = _clean(rankings, "position_bias", extra=["position"])
    rows = []
    for criterion, part in df.groupby("criterion", sort=True):
        pos = numeric_values(part, "position", where="position_bias")
        rank = part["rank"].to_numpy(dtype=float)
        row = {"criterion": criterion, "spearman": np.nan, "spearman_p_analytic": np.nan,
               "chi2": np.nan, "chi2_p_analytic": np.nan, "dof": 0, "n": len(part)}
        if np.ptp(pos) > 0 and np.ptp(rank) > 0:
            res = stats.spearmanr(pos, rank)
            row.update(spearman=float(res.statistic), spearman_p_analytic=float(res.pvalue))
            table = pd.crosstab(pos, rank).to_numpy()
            chi = stats.chi2_contingency(table, correction=False)
            row.update(chi2=float(chi.statistic), chi2_p_analytic=float(chi.pvalue),
                       dof=int(chi.dof))
        rows.append(row)
    return pd.DataFrame(rows)
