"""Human scores per model: the ImagenHub overall score and the mean ± std across raters.

Input is the Ratings frame of ``docs/data-model.md``; the columns used are
``prompt_id, model, rater, criterion, value`` plus ``sample`` (0 when absent) and, when
present, ``study``, ``image_id`` and ``dimension`` (carried through).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from concord.stats._resample import (
    bootstrap_weights,
    percentile_interval,
    prompt_codes,
    resampled_means,
    unit_sums,
)
from concord.stats._validate import (
    check_fraction,
    check_positive_int,
    numeric_values,
    require_columns,
)

RATING_COLUMNS = ("prompt_id", "model", "rater", "criterion", "value")


def image_keys(df: pd.DataFrame) -> list[str]:
    """Columns that identify one image in ``df`` (study/sample/image_id only when present)."""
    optional = [c for c in ("study", "sample", "image_id") if c in df.columns]
    return ["prompt_id", "model", *optional]


def group_codes(df: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """Dense integer code per row for the combination of ``keys`` (sorted, NaN kept)."""
    return df.groupby(list(keys), sort=True, observed=True, dropna=False).ngroup().to_numpy()


def overall_scores(
    ratings: pd.DataFrame,
    *,
    criteria: tuple[str, str] = ("SC", "PR"),
    output: str = "O",
    weights: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """Combine two criteria of the same rater and image into one overall score.

    ImagenHub's overall score is the geometric mean ``O = sqrt(SC * PR)``, taken per rater
    and image BEFORE any averaging. ``weights=(0.7, 0.3)`` gives ImagenHub's unused linear
    alternative ``0.7 * SC + 0.3 * PR``.

    Args:
        ratings: Ratings frame (``prompt_id, model, rater, criterion, value``).
        criteria: The two criterion names to combine.
        output: Criterion name of the new rows.
        weights: ``None`` for the geometric mean, else linear weights of the two criteria.

    Returns:
        One row per (image, rater) that has both criteria: the image key columns,
        ``rater``, ``dimension`` if present, ``criterion`` (= ``output``) and ``value``.

    Raises:
        ValueError: Missing columns, a negative value (no geometric mean), or a rater who
            rated the same image and criterion twice.
    """
    where = "overall_scores"
    require_columns(ratings, RATING_COLUMNS, where=where)
    sub = ratings[ratings["criterion"].isin(criteria)]
    keys = [*image_keys(sub), "rater"]
    gid = group_codes(sub, keys)
    n_groups = int(gid.max()) + 1 if len(gid) else 0
    values = numeric_values(sub, "value", where=where)
    crit = sub["criterion"].to_numpy()
    parts = np.full((2, n_groups), np.nan)
    for k, name in enumerate(criteria):
        mask = crit == name
        if n_groups and np.bincount(gid[mask], minlength=n_groups).max() > 1:
            raise ValueError(f"{where}: a rater rated the same image twice on {name!r}")
        parts[k, gid[mask]] = values[mask]
    if weights is None:
        if np.nanmin(parts, initial=0.0) < 0:
            raise ValueError(f"{where}: negative value {np.nanmin(parts)} has no geometric mean")
        combined = np.sqrt(parts[0] * parts[1])
    else:
        combined = weights[0] * parts[0] + weights[1] * parts[1]
    keep = np.flatnonzero(~np.isnan(parts).any(axis=0))
    first = np.full(n_groups, -1)
    first[gid[::-1]] = np.arange(len(gid))[::-1]
    carry = keys + (["dimension"] if "dimension" in sub.columns else [])
    out = sub.iloc[first[keep]][carry].reset_index(drop=True)
    out["criterion"] = output
    out["value"] = combined[keep]
    return out


def _rater_columns(df: pd.DataFrame, by: list[str]) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Groups of ``by``, and per row the (group, rater) column code and its group code."""
    col = group_codes(df, [*by, "rater"])
    first = np.full(int(col.max()) + 1, -1)
    first[col[::-1]] = np.arange(len(col))[::-1]
    pairs = df.iloc[first][by].reset_index(drop=True)
    col_group = group_codes(pairs, by)
    groups = pairs.drop_duplicates().reset_index(drop=True)
    return groups, col, col_group


def _clean(ratings: pd.DataFrame, where: str) -> tuple[pd.DataFrame, np.ndarray]:
    values = numeric_values(ratings, "value", where=where)
    ok = ~np.isnan(values)
    if not ok.any():
        raise ValueError(f"{where}: no rating with a numeric value")
    return ratings[ok], values[ok]


def bootstrap_means(
    ratings: pd.DataFrame,
    *,
    by: Sequence[str] = ("model", "criterion"),
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Mean of per-rater means per group, on the data and on prompt resamples.

    Prompts (sorted by ``prompt_id``) are resampled with replacement as in
    :func:`concord.stats._resample.bootstrap_indices`; a rater's mean in a resample counts
    each of their ratings of a prompt as often as the prompt was drawn.

    Args:
        ratings: Ratings frame with ``prompt_id, rater, value`` and the ``by`` columns.
        by: Grouping columns.
        n_boot: Number of resamples.
        seed: Seed of ``numpy.random.default_rng``.

    Returns:
        ``(groups, point, samples)``: the group keys (sorted), the point estimate per group
        and a ``(n_boot, n_groups)`` array of resampled estimates (NaN where no rater of
        the group has a drawn prompt).
    """
    where = "bootstrap_means"
    by = list(by)
    require_columns(ratings, ["prompt_id", "rater", "value", *by], where=where)
    df, values = _clean(ratings, where)
    groups, col, col_group = _rater_columns(df, by)
    units, _ = prompt_codes(df["prompt_id"])
    n_units, n_cols = int(units.max()) + 1, int(col.max()) + 1
    sums, counts = unit_sums(units, col, values, n_units, n_cols)
    point = _group_nanmean(sums.sum(0) / counts.sum(0), col_group, len(groups))
    weights = bootstrap_weights(n_units, check_positive_int(n_boot, name="n_boot"), seed)
    rater_means = resampled_means(weights, sums, counts)
    samples = _group_nanmean(rater_means, col_group, len(groups))
    return groups, point, samples


def _group_nanmean(matrix: np.ndarray, col_group: np.ndarray, n_groups: int) -> np.ndarray:
    # Indicator product: averages the valid rater columns of each group for all rows at once.
    indicator = np.zeros((matrix.shape[-1], n_groups))
    indicator[np.arange(matrix.shape[-1]), col_group] = 1.0
    valid = ~np.isnan(matrix)
    total = np.where(valid, matrix, 0.0) @ indicator
    n = valid.astype(float) @ indicator
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.where(n > 0, n, 1), np.nan)


def _distinct_per_group(group: np.ndarray, key: np.ndarray, n_groups: int) -> np.ndarray:
    """Number of distinct ``key`` codes within each group code."""
    pairs = np.unique(group.astype(np.int64) * (int(key.max()) + 1) + key)
    return np.bincount(pairs // (int(key.max()) + 1), minlength=n_groups)


def model_scores(
    ratings: pd.DataFrame,
    *,
    by: Sequence[str] = ("model", "criterion"),
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Mean ± std across raters per model and criterion, with a bootstrap CI over prompts.

    The ImagenHub rule: each rater's mean over the images they rated, then the mean of those
    per-rater means and their POPULATION standard deviation (``ddof=0``). The interval is
    the percentile interval of the mean over ``n_boot`` prompt resamples.

    Args:
        ratings: Ratings frame (``prompt_id, model, rater, criterion, value``; NaN values
            are ignored). Add the ``O`` rows with :func:`overall_scores` first if wanted.
        by: Grouping columns.
        n_boot: Number of bootstrap resamples.
        ci: Confidence level of the interval.
        seed: Seed of ``numpy.random.default_rng``.

    Returns:
        One row per group: ``by`` columns, ``mean, std, ci_low, ci_high, n_raters,
        n_prompts, n_images, n_ratings``.

    Example:
        >>> df = pd.DataFrame({"prompt_id": ["p1", "p2", "p1", "p2"], "model": "m",
        ...     "rater": ["a", "a", "b", "b"], "criterion": "SC", "value": [1, 0.5, 0.5, 0.5]})
        >>> row = model_scores(df, n_boot=10).iloc[0]
        >>> float(row["mean"]), float(row["std"])
        (0.625, 0.125)
    """
    where = "model_scores"
    by = list(by)
    require_columns(ratings, [*RATING_COLUMNS, *by], where=where)
    check_fraction(ci, name="ci")
    groups, point, samples = bootstrap_means(ratings, by=by, n_boot=n_boot, seed=seed)
    df, values = _clean(ratings, where)
    _, col, col_group = _rater_columns(df, by)
    n_groups = len(groups)
    rater_mean = np.bincount(col, weights=values) / np.bincount(col)
    spread = (rater_mean - point[col_group]) ** 2
    group = col_group[col]
    out = groups.copy()
    out["mean"] = point
    out["n_raters"] = np.bincount(col_group, minlength=n_groups)
    out["std"] = np.sqrt(np.bincount(col_group, weights=spread, minlength=n_groups)
                         / out["n_raters"].to_numpy())
    out["ci_low"], out["ci_high"] = percentile_interval(samples, ci)
    out["n_prompts"] = _distinct_per_group(group, prompt_codes(df["prompt_id"])[0], n_groups)
    out["n_images"] = _distinct_per_group(group, group_codes(df, image_keys(df)), n_groups)
    out["n_ratings"] = np.bincount(group, minlength=n_groups)
    cols = [*by, "mean", "std", "ci_low", "ci_high", "n_raters", "n_prompts", "n_images",
            "n_ratings"]
    return out[cols]
