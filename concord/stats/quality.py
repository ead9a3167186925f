"""Rater quality: gold (attention-check) items kept apart, per-rater signals and flags.

Gold items measure raters; they are not data. :func:`split_gold` takes the ratings of
gold images and the rankings of gold prompts out of the frames every other statistic
uses. Per rater, :func:`rater_signals` gives time, straight-lining and gold accuracy,
:func:`too_fast_items` lists the items done faster than a per-study threshold, and
:func:`quality_flags` turns the signals into flags with the thresholds of
:class:`QualityThresholds` (study setting ``quality``; defaults in ``docs/stats.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from concord.stats._validate import numeric_values, require_columns

GOLD_COLUMNS = ("image_id", "criterion", "expected", "tolerance")


@dataclass(frozen=True, slots=True)
class GoldSplit:
    """Frames without gold items, and the gold ratings/rankings kept for rater quality."""

    ratings: pd.DataFrame
    rankings: pd.DataFrame | None
    gold_ratings: pd.DataFrame
    gold_rankings: pd.DataFrame | None


def _unit(gold: pd.DataFrame, unit: str) -> pd.DataFrame:
    if "unit" not in gold.columns:
        return gold if unit == "image" else gold.iloc[:0]
    return gold[gold["unit"].astype(str) == unit]


def split_gold(ratings: pd.DataFrame, rankings: pd.DataFrame | None,
               gold: pd.DataFrame | None) -> GoldSplit:
    """Separate gold items from the data.

    Ratings of an image that has any ``unit == "image"`` gold row are gold ratings.
    Rankings of a prompt whose ranking set holds a ``unit == "prompt"`` gold image are
    gold rankings (the whole ranking: a known best image changes every rank in it).
    Frames without an ``image_id`` column cannot be matched and are returned whole.
    """
    if gold is None or gold.empty:
        return GoldSplit(ratings, rankings, ratings.iloc[:0], None)
    require_columns(gold, GOLD_COLUMNS, where="split_gold")
    images = set(_unit(gold, "image")["image_id"].astype(int))
    is_gold = (ratings["image_id"].isin(images).to_numpy() if "image_id" in ratings
               else np.zeros(len(ratings), dtype=bool))
    out_rankings, gold_rankings = rankings, None
    ranked_gold = set(_unit(gold, "prompt")["image_id"].astype(int))
    if rankings is not None and ranked_gold and "image_id" in rankings:
        prompts = rankings.loc[rankings["image_id"].isin(ranked_gold), "prompt_id"].unique()
        in_gold = rankings["prompt_id"].isin(prompts).to_numpy()
        out_rankings, gold_rankings = rankings[~in_gold], rankings[in_gold]
    return GoldSplit(ratings[~is_gold], out_rankings, ratings[is_gold], gold_rankings)


def _scored(merged: pd.DataFrame, value: str, keys: list[str], unit: str) -> pd.DataFrame:
    diff = numeric_values(merged, value, where="gold") - merged["expected"].to_numpy(float)
    # A small slack so that 0.1 + 0.2 style float noise does not fail an exact match.
    merged = merged.assign(correct=np.abs(diff) <= merged["tolerance"].to_numpy(float) + 1e-9)
    out = merged.groupby(keys, sort=True, observed=True).agg(
        n_gold=("correct", "size"), n_correct=("correct", "sum")).reset_index()
    out["accuracy"] = out["n_correct"] / out["n_gold"]
    return out.assign(unit=unit)[["rater", "unit", "criterion", "n_gold", "n_correct",
                                  "accuracy"]]


def gold_results(gold_ratings: pd.DataFrame, gold_rankings: pd.DataFrame | None,
                 gold: pd.DataFrame | None) -> pd.DataFrame:
    """Gold accuracy per rater × unit × criterion.

    ``image`` gold: a rating is correct when ``|value − expected| ≤ tolerance``.
    ``prompt`` gold (rankings): correct when the gold image's rank in the rater's ranking
    of that prompt is within ``tolerance`` of ``expected`` (1 = the known best image).

    Returns:
        ``rater, unit, criterion, n_gold, n_correct, accuracy``.
    """
    cols = ["rater", "unit", "criterion", "n_gold", "n_correct", "accuracy"]
    if gold is None or gold.empty:
        return pd.DataFrame(columns=cols)
    parts = []
    expect = gold[[*GOLD_COLUMNS, *(["unit"] if "unit" in gold else [])]]
    exp_image = _unit(expect, "image").drop(columns="unit", errors="ignore")
    if not gold_ratings.empty:
        merged = gold_ratings.astype({"criterion": str, "rater": str})[
            ["image_id", "criterion", "rater", "value"]].merge(
            exp_image.astype({"criterion": str}), on=["image_id", "criterion"])
        parts.append(_scored(merged, "value", ["rater", "criterion"], "image"))
    exp_prompt = _unit(expect, "prompt").drop(columns="unit", errors="ignore")
    if gold_rankings is not None and not gold_rankings.empty and not exp_prompt.empty:
        merged = gold_rankings.astype({"criterion": str, "rater": str})[
            ["image_id", "criterion", "rater", "rank"]].merge(
            exp_prompt.astype({"criterion": str}), on=["image_id", "criterion"])
        parts.append(_scored(merged, "rank", ["rater", "criterion"], "prompt"))
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)
