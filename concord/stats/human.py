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


def column_codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """Integer codes of a column in sorted order (missing values last) and their count."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy().astype(np.int64)
        n = len(column.cat.categories)
        return np.where(codes < 0, n, codes), n + 1
    try:
        codes, uniques = pd.factorize(column, sort=True, use_na_sentinel=False)
    except TypeError:
        # Mixed types (ints and strings) do not sort; sort their text instead.
        codes, uniques = pd.factorize(column.astype(str), sort=True, use_na_sentinel=False)
    return codes.astype(np.int64), max(len(uniques), 1)


def group_codes(df: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """Dense integer code per row for the combination of ``keys``, in sorted key order.

    Column codes are combined in mixed radix and made dense with a presence table: no
    hashing of tuples, which keeps million-row frames fast.
    """
    combined = np.zeros(len(df), dtype=np.int64)
    size = 1
    for key in keys:
        codes, n = column_codes(df[key])
        if size * n >= 2**62:
            return df.groupby(list(keys), sort=True, observed=True, dropna=False).ngroup(
            ).to_numpy()
        combined = combined * n + codes
        size *= n
    if size <= 8 * len(df) + 1_000_000:
        present = np.zeros(size, dtype=bool)
        present[combined] = True
        return (np.cumsum(present) - 1)[combined]
    return np.unique(combined, return_inverse=True)[1].ravel()


def first_rows(codes: np.ndarray) -> np.ndarray:
    """Row position of the first occurrence of each code 0..max."""
    first = np.full(int(codes.max()) + 1 if len(codes) else 0, -1)
    first[codes[::-1]] = np.arange(len(codes))[::-1]
    return first


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
    wanted = ratings["criterion"].isin(criteria).to_numpy()
    sub = ratings if wanted.all() else ratings[wanted]
    keys = [*image_keys(sub), "rater"]
    gid = group_codes(sub, keys)
    n_groups = int(gid.max()) + 1 if len(gid) else 0
    values = numeric_values(sub, "value", where=where)
    parts = np.full((2, n_groups), np.nan)
    for k, name in enumerate(criteria):
        # Series comparison: on a categorical column it compares codes, not strings.
        mask = (sub["criterion"] == name).to_numpy()
        if mask.any() and np.bincount(gid[mask], minlength=n_groups).max() > 1:
            raise ValueError(f"{where}: a rater rated the same image twice on {name!r}")
        parts[k, gid[mask]] = values[mask]
    if weights is None:
        if np.nanmin(parts, initial=0.0) < 0:
            raise ValueError(f"{where}: negative value {np.nanmin(parts)} has no geometric mean")
        combined = np.sqrt(parts[0] * parts[1])
    else:
        combined = weights[0] * parts[0] + weights[1] * parts[1]
    keep = np.flatnonzero(~np.isnan(parts).any(axis=0))
    carry = keys + (["dimension"] if "dimension" in sub.columns else [])
    out = sub.iloc[first_rows(gid)[keep]][carry].reset_index(drop=True)
    out["criterion"] = output
    out["value"] = combined[keep]
    return out


class _Layout:
    """Integer layout of a ratings frame for one grouping: computed once, used twice."""

    def __init__(self, ratings: pd.DataFrame, by: list[str], where: str) -> None:
        values = numeric_values(ratings, "value", where=where)
        ok = ~np.isnan(values)
        if not ok.any():
            raise ValueError(f"{where}: no rating with a numeric value")
        self.df = ratings[ok] if not ok.all() else ratings
        self.values = values[ok]
        self.col = group_codes(self.df, [*by, "rater"])       # (group, rater) column
        pairs = self.df.iloc[first_rows(self.col)][by].reset_index(drop=True)
        self.col_group = group_codes(pairs, by)               # column -> group
        self.groups = pairs.iloc[first_rows(self.col_group)].reset_index(drop=True)
        self.group = self.col_group[self.col]                 # row -> group
        self.unit, _ = prompt_codes(self.df["prompt_id"])     # row -> prompt (sorted)


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
    lay = _Layout(ratings, by, where)
    point, samples = _bootstrap(lay, check_positive_int(n_boot, name="n_boot"), seed)
    return lay.groups, point, samples


def _bootstrap(lay: _Layout, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    n_units, n_cols = int(lay.unit.max()) + 1, int(lay.col.max()) + 1
    sums, counts = unit_sums(lay.unit, lay.col, lay.values, n_units, n_cols)
    n_groups = len(lay.groups)
    point = _group_nanmean(sums.sum(0) / counts.sum(0), lay.col_group, n_groups)
    weights = bootstrap_weights(n_units, n_boot, seed)
    samples = np.empty((n_boot, n_groups))
    balanced = _balanced(counts, lay.col_group, n_groups)
    if balanced.any():
        # All raters of a balanced group rated every prompt equally often, so the mean of
        # their resampled means is (W @ mean rater sum) / (W @ count): one column per group
        # instead of one per rater, i.e. a far smaller matrix product.
        indicator = np.zeros((n_cols, n_groups))
        indicator[np.arange(n_cols), lay.col_group] = 1.0
        mean_sums = (sums @ indicator) / indicator.sum(axis=0)
        first = first_rows(lay.col_group)
        samples[:, balanced] = resampled_means(weights, mean_sums[:, balanced],
                                               counts[:, first[balanced]])
    if not balanced.all():
        cols = np.flatnonzero(~balanced[lay.col_group])
        rater_means = resampled_means(weights, sums[:, cols], counts[:, cols])
        per_group = _group_nanmean(rater_means, lay.col_group[cols], n_groups)
        samples[:, ~balanced] = per_group[:, ~balanced]
    return point, samples


def _balanced(counts: np.ndarray, col_group: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group: do all its rater columns have the same count for every prompt?"""
    same = (counts == counts[:, first_rows(col_group)[col_group]]).all(axis=0)
    return np.bincount(col_group, weights=~same, minlength=n_groups) == 0


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
    width = int(key.max()) + 1
    seen = np.zeros(n_groups * width, dtype=bool)
    seen[group.astype(np.int64) * width + key] = True
    return seen.reshape(n_groups, width).sum(axis=1)


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
    lay = _Layout(ratings, by, where)
    point, samples = _bootstrap(lay, check_positive_int(n_boot, name="n_boot"), seed)
    n_groups = len(lay.groups)
    rater_mean = np.bincount(lay.col, weights=lay.values) / np.bincount(lay.col)
    spread = (rater_mean - point[lay.col_group]) ** 2
    out = lay.groups.copy()
    out["mean"] = point
    out["n_raters"] = np.bincount(lay.col_group, minlength=n_groups)
    out["std"] = np.sqrt(np.bincount(lay.col_group, weights=spread, minlength=n_groups)
                         / out["n_raters"].to_numpy())
    out["ci_low"], out["ci_high"] = percentile_interval(samples, ci)
    out["n_prompts"] = _distinct_per_group(lay.group, lay.unit, n_groups)
    image = group_codes(lay.df, image_keys(lay.df))
    out["n_images"] = _distinct_per_group(lay.group, image, n_groups)
    out["n_ratings"] = np.bincount(lay.group, minlength=n_groups)
    cols = [*by, "mean", "std", "ci_low", "ci_high", "n_raters", "n_prompts", "n_images",
            "n_ratings"]
    return out[cols]
