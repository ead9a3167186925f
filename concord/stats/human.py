"""Human scores per model: the ImagenHub overall score and the mean ± std across raters.

Input is the Ratings frame of ``docs/data-model.md``; the columns used are
``prompt_id, model, rater, criterion, value`` plus ``sample`` (0 when absent) and, when
present, ``study``, ``image_id`` and ``dimension`` (carried through).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from concord.stats._codes import RATING_COLUMNS, first_rows, group_codes, image_keys
from concord.stats._exact import group_means
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
from concord.stats.multiple import rank_intervals
from concord.stats.rater_means import rater_mean_bootstrap


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
    return rater_mean_bootstrap(lay.unit, lay.col, lay.values, lay.col_group,
                                len(lay.groups), n_boot, seed)


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
    """Both model scores per model and criterion, each with a bootstrap CI over prompts.

    * ``mean_rater_means`` (the ImagenHub rule): each rater's mean over the images they
      rated, then the mean of those per-rater means; ``std_rater_means`` is their
      POPULATION standard deviation (``ddof=0``), ImagenHub's "±".
    * ``mean_image_means``: each image's mean over its raters (order-independent sum,
      :mod:`concord.stats._exact`), then the mean over the group's images.

    With every rater rating every image the two are equal; with missing ratings they
    differ. Each ``*_ci_boot_low/high`` is the percentile interval of that mean over
    ``n_boot`` prompt resamples (the same resamples for both).

    Args:
        ratings: Ratings frame (``prompt_id, model, rater, criterion, value``; NaN values
            are ignored). Add derived criteria with :func:`concord.stats.with_derived`.
        by: Grouping columns.
        n_boot: Number of bootstrap resamples.
        ci: Confidence level of the interval.
        seed: Seed of ``numpy.random.default_rng``.

    Returns:
        One row per group: ``by`` columns, ``mean_rater_means, std_rater_means,
        mean_rater_means_ci_boot_low, mean_rater_means_ci_boot_high, mean_image_means,
        mean_image_means_ci_boot_low, mean_image_means_ci_boot_high, n_raters, n_prompts,
        n_images, n_ratings``, and (when ``by`` has ``model``) the model's rank among
        the models of its other ``by`` keys by mean of rater means
        (``rank_mean_rater_means``, 1 = highest, ties share the best rank) with its
        prompt-bootstrap interval (``_ci_boot_low/high``, whole ranks: see
        :func:`concord.stats.multiple.rank_intervals`). Two models whose rank intervals
        overlap are not shown apart by the data.

    Example:
        >>> df = pd.DataFrame({"prompt_id": ["p1", "p2", "p1"], "model": "m",
        ...     "rater": ["a", "a", "b"], "criterion": "SC", "value": [1, 0.5, 0.5]})
        >>> row = model_scores(df, n_boot=10).iloc[0]
        >>> float(row["mean_rater_means"]), float(row["mean_image_means"])
        (0.625, 0.625)
    """
    where = "model_scores"
    by = list(by)
    require_columns(ratings, [*RATING_COLUMNS, *by], where=where)
    check_fraction(ci, name="ci")
    n_boot = check_positive_int(n_boot, name="n_boot")
    lay = _Layout(ratings, by, where)
    point, samples = _bootstrap(lay, n_boot, seed)
    n_groups = len(lay.groups)
    rater_mean = np.bincount(lay.col, weights=lay.values) / np.bincount(lay.col)
    spread = (rater_mean - point[lay.col_group]) ** 2
    out = lay.groups.copy()
    out["mean_rater_means"] = point
    out["n_raters"] = np.bincount(lay.col_group, minlength=n_groups)
    out["std_rater_means"] = np.sqrt(np.bincount(lay.col_group, weights=spread,
                                                 minlength=n_groups)
                                     / out["n_raters"].to_numpy())
    low, high = percentile_interval(samples, ci)
    out["mean_rater_means_ci_boot_low"], out["mean_rater_means_ci_boot_high"] = low, high
    image_point, image_samples, image = _image_means(lay, n_boot, seed)
    out["mean_image_means"] = image_point
    low, high = percentile_interval(image_samples, ci)
    out["mean_image_means_ci_boot_low"], out["mean_image_means_ci_boot_high"] = low, high
    out["n_prompts"] = _distinct_per_group(lay.group, lay.unit, n_groups)
    out["n_images"] = _distinct_per_group(lay.group, image, n_groups)
    out["n_ratings"] = np.bincount(lay.group, minlength=n_groups)
    rank = _ranks(lay.groups, by, point, samples, ci)
    for k, name in enumerate(RANK_FIELDS):
        out[name] = rank[k]
    return out[[*by, *SCORE_FIELDS, *RANK_FIELDS]]


SCORE_FIELDS = ("mean_rater_means", "std_rater_means", "mean_rater_means_ci_boot_low",
                "mean_rater_means_ci_boot_high", "mean_image_means",
                "mean_image_means_ci_boot_low", "mean_image_means_ci_boot_high", "n_raters",
                "n_prompts", "n_images", "n_ratings")
RANK_FIELDS = ("rank_mean_rater_means", "rank_mean_rater_means_ci_boot_low",
               "rank_mean_rater_means_ci_boot_high")


def _ranks(groups: pd.DataFrame, by: list[str], point: np.ndarray, samples: np.ndarray,
           ci: float) -> np.ndarray:
    """Rank (1 = highest mean of rater means) of each model among the models of its
    leaderboard (the other ``by`` columns) and its bootstrap rank interval; NaN without a
    ``model`` column."""
    out = np.full((3, len(groups)), np.nan)
    if "model" not in by:
        return out
    rest = [c for c in by if c != "model"]
    family = group_codes(groups, rest) if rest else np.zeros(len(groups), dtype=np.int64)
    for f in np.unique(family):
        cols = np.flatnonzero(family == f)
        out[:, cols] = rank_intervals(point[cols], samples[:, cols], ci)
    return out


def _image_means(lay: _Layout, n_boot: int,
                 seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean of image means per group, its prompt-bootstrap samples, image code per row."""
    image = group_codes(lay.df, image_keys(lay.df))
    cell = group_codes(pd.DataFrame({"g": lay.group, "i": image}), ["g", "i"])
    n_cells = int(cell.max()) + 1
    means, _ = group_means(cell, lay.values, n_cells)
    first = first_rows(cell)
    cell_group, cell_unit = lay.group[first], lay.unit[first]
    n_groups, n_units = len(lay.groups), int(lay.unit.max()) + 1
    sums, counts = unit_sums(cell_unit, cell_group, means, n_units, n_groups)
    point = sums.sum(axis=0) / counts.sum(axis=0)
    samples = resampled_means(bootstrap_weights(n_units, n_boot, seed), sums, counts)
    return point, samples, image
