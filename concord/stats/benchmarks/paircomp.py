"""PairComp (FocusDiff) summary: arithmetic and geometric means per category.

Input columns: ``model, pair, caption (0/1), sample (0/1), category, value`` — one row per
image, four images per pair (2 captions × 2 samples), ``value`` = P(yes)/(P(yes)+P(no)).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._validate import numeric_values, require_columns, require_nonempty

# Category of a pair = first key found in the lower-cased category string (as the reference).
CATEGORIES = {"overall": "Overall appearance", "color": "Color", "counting": "Counting",
              "position": "Position", "style": "Style & Tone", "text": "Text"}
AVERAGE = "Average"
COLUMNS = ("model", "pair", "caption", "sample", "category", "value")


def category_label(category: str) -> str:
    """Map a PairComp category string to its summary label by substring match.

    Raises:
        ValueError: No key or more than one key matches.
    """
    low = str(category).lower()
    hits = [label for key, label in CATEGORIES.items() if key in low]
    if len(hits) != 1:
        raise ValueError(f"paircomp: category {category!r} matches {len(hits)} of the keys "
                         f"{list(CATEGORIES)}; expected exactly one")
    return hits[0]


def _pair_scores(df: pd.DataFrame, decimals: int | None) -> pd.DataFrame:
    where = "paircomp_scores"
    values = numeric_values(df, "value", where=where)
    if np.isnan(values).any() or (values < 0).any() or (values > 1).any():
        raise ValueError(f"{where}: values must be probabilities in [0, 1], got "
                         f"{values[np.isnan(values) | (values < 0) | (values > 1)][:5].tolist()}")
    if decimals is not None:
        # The reference stores round(score, 4) per image and aggregates the rounded values.
        values = np.array([round(float(v), decimals) for v in values])
    df = df.assign(value=values).sort_values(["model", "pair", "caption", "sample"])
    counts = df.groupby(["model", "pair"], sort=False).size()
    bad = counts[counts != 4]
    if not bad.empty:
        model, pair = bad.index[0]
        raise ValueError(f"{where}: each pair needs 4 images (2 captions × 2 samples); "
                         f"{len(bad)} pair(s) differ, e.g. model {model!r} pair {pair} "
                         f"has {int(bad.iloc[0])}")
    if df.duplicated(["model", "pair", "caption", "sample"]).any():
        raise ValueError(f"{where}: duplicate (model, pair, caption, sample) rows")
    grid = df["value"].to_numpy().reshape(-1, 4)
    first = df.iloc[::4]
    return pd.DataFrame({
        "model": first["model"].to_numpy(), "pair": first["pair"].to_numpy(),
        "category": [category_label(c) for c in first["category"]],
        "arithmetic": grid.mean(axis=1),
        # Product then 1/4 power, in caption/sample order, as the reference does.
        "geometric": np.prod(grid, axis=1) ** (1.0 / 4),
    })


def paircomp_scores(scores: pd.DataFrame, *, decimals: int | None = 4) -> pd.DataFrame:
    """PairComp s_a and s_g per category and their unweighted Average.

    Per pair: ``s_a`` = mean of the four image scores, ``s_g`` = their 4th root of the
    product; per category: the mean over its pairs; ``Average`` = unweighted mean of the
    category means. Scores are rounded to ``decimals`` per image first (``None`` keeps
    them). Works on subsets: absent categories are omitted and the Average is over the
    categories present (``n_categories`` says how many; the leaderboard needs 6).

    Args:
        scores: Per-image frame with ``model, pair, caption, sample, category, value``.
        decimals: Per-image rounding before aggregation (the reference stores 4 dp).

    Returns:
        Columns ``model, category, arithmetic, geometric, n_pairs, n_categories`` with the
        categories in reference order and ``Average`` last, per model.
    """
    require_columns(scores, COLUMNS, where="paircomp_scores")
    require_nonempty(scores, where="paircomp_scores")
    pairs = _pair_scores(scores, decimals)
    per_cat = pairs.groupby(["model", "category"], sort=False).agg(
        arithmetic=("arithmetic", "mean"), geometric=("geometric", "mean"),
        n_pairs=("pair", "size")).reset_index()
    order = {label: k for k, label in enumerate(CATEGORIES.values())}
    avg = per_cat.groupby("model", sort=True).agg(
        arithmetic=("arithmetic", "mean"), geometric=("geometric", "mean"),
        n_pairs=("n_pairs", "sum"), n_categories=("category", "size")).reset_index()
    avg["category"] = AVERAGE
    per_cat["n_categories"] = 1
    out = pd.concat([per_cat, avg], ignore_index=True)
    out["_order"] = out["category"].map(order).fillna(len(order))
    out = out.sort_values(["model", "_order"], ignore_index=True).drop(columns="_order")
    return out[["model", "category", "arithmetic", "geometric", "n_pairs", "n_categories"]]
