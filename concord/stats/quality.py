"""Rater quality: gold (attention-check) items kept apart, per-rater signals and flags.

Gold items measure raters; they are not data. :func:`split_gold` takes the ratings of
gold images and the rankings of gold prompts out of the frames every other statistic
uses. Per rater, :func:`rater_signals` gives time, straight-lining and gold accuracy,
:func:`too_fast_items` lists the items done faster than a per-study threshold, and
:func:`quality_flags` turns the signals into flags with the thresholds of
:class:`QualityThresholds` (study setting ``quality``; defaults in ``docs/stats.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from concord.stats._validate import numeric_values, require_columns

GOLD_COLUMNS = ("image_id", "criterion", "expected", "tolerance")


@dataclass(frozen=True, slots=True)
class QualityThresholds:
    """When a rater's behaviour becomes a flag (per study: settings ``quality``).

    Attributes:
        min_seconds_rating: A rated image done in fewer seconds is "too fast".
        min_seconds_ranking: A ranking done in fewer seconds is "too fast".
        max_fast_share: Flag ``too_fast`` when a larger share of a rater's items is.
        max_modal_share: Flag ``straight_lining`` when at least this share of a rater's
            ratings of one criterion share one value (or of their rankings follow the
            display order).
        min_gold_accuracy: Flag ``gold_failures`` below this gold accuracy.
        min_items: Time and straight-lining flags need at least this many items.
    """

    min_seconds_rating: float = 2.0
    min_seconds_ranking: float = 5.0
    max_fast_share: float = 0.25
    max_modal_share: float = 0.9
    min_gold_accuracy: float = 0.75
    min_items: int = 10

    @classmethod
    def from_settings(cls, settings: Mapping[str, object] | None) -> QualityThresholds:
        """Defaults overridden by a study's ``quality`` settings.

        Raises:
            ValueError: An unknown key, or a value of the wrong type or range (named).
        """
        settings = dict(settings or {})
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(settings) - set(known))
        if unknown:
            raise ValueError(f"quality settings: unknown key(s) {unknown} "
                             f"(known: {sorted(known)})")
        for key, value in settings.items():
            _check(key, value)
        return cls(**settings)

    def as_dict(self) -> dict[str, float]:
        """The thresholds as a plain dict (for ``meta``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _check(key: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
        raise ValueError(f"quality settings: {key} must be a number, got {value!r}")
    if key == "min_items" and (not float(value).is_integer() or value < 1):
        raise ValueError(f"quality settings: min_items must be a whole number >= 1, "
                         f"got {value!r}")
    if key.startswith(("max_", "min_gold")) and not 0 <= value <= 1:
        raise ValueError(f"quality settings: {key} must be a share in [0, 1], got {value!r}")
    if key.startswith("min_seconds") and value < 0:
        raise ValueError(f"quality settings: {key} must be >= 0, got {value!r}")


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
