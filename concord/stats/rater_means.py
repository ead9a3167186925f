"""The prompt bootstrap of the mean of rater means, without a prompts × raters matrix.

A group's score is the mean over its raters of each rater's mean (ImagenHub's rule); a
resample draws prompts with replacement, so each rater's mean counts every rating of a
prompt as often as the prompt was drawn. Done as dense prompts × (group, rater) matrices,
a crowd study of 3,000 raters and 1,500 prompts needed 5 GB. Here the ratings are summed
per (prompt, column) cell only where a rater rated, and the resampled rater means are
built a block of columns at a time and folded into per-group totals.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import sparse

from concord.stats._codes import column_codes
from concord.stats._resample import bootstrap_weights, ratio, resampled_means

# Cells of the dense prompts × columns (and resamples × columns) block built at once.
BLOCK_CELLS = 4_000_000
# Below this share of filled (prompt, column) cells, resampled sums use a sparse product:
# its cost follows the ratings, a dense product's every cell.
SPARSE_SHARE = 0.2


def rater_mean_bootstrap(unit: np.ndarray, col: np.ndarray, values: np.ndarray,
                         col_group: np.ndarray, n_groups: int, n_boot: int,
                         seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean of rater means per group, on the data and on every prompt resample.

    Args:
        unit: Prompt code per rating (0..U-1, prompts sorted by id).
        col: Column code per rating: one column per (group, rater).
        values: The ratings (no NaN).
        col_group: Group code of each column.
        n_groups: Number of groups.
        n_boot, seed: Resamples of :func:`concord.stats._resample.bootstrap_weights`.

    Returns:
        ``(point, samples)``: per group, and ``(n_boot, n_groups)`` (NaN where no rater of
        the group has a drawn prompt).
    """
    n_units, n_cols = int(unit.max()) + 1, len(col_group)
    cells = _cells(unit, col, values, n_cols)
    col_sum = np.bincount(cells.col, weights=cells.sum, minlength=n_cols)
    col_n = np.bincount(cells.col, weights=cells.n, minlength=n_cols)
    point = _nanmean_by(col_sum / col_n, col_group, n_groups)
    weights = bootstrap_weights(n_units, n_boot, seed)
    samples = np.empty((n_boot, n_groups))
    balanced = _balanced(cells, col_group, n_groups)
    width = np.bincount(col_group, minlength=n_groups).astype(float)
    if balanced.any():
        # All raters of a balanced group rated every prompt equally often, so the mean of
        # their resampled means is (W @ mean rater sum) / (W @ count): one column per group
        # instead of one per rater.
        flat = cells.unit * n_groups + col_group[cells.col]
        sums, counts = (np.bincount(flat, weights=w, minlength=n_units * n_groups)
                        .reshape(n_units, n_groups) for w in (cells.sum, cells.n))
        samples[:, balanced] = resampled_means(weights, sums[:, balanced] / width[balanced],
                                               counts[:, balanced] / width[balanced])
    if not balanced.all():
        samples[:, ~balanced] = _unbalanced(cells, col_group, ~balanced, weights,
                                            n_units)[:, ~balanced]
    return point, samples


class _Cells:
    """Sum and count of the ratings per (prompt, column) cell that has any, by column."""

    def __init__(self, unit: np.ndarray, col: np.ndarray, sums: np.ndarray,
                 n: np.ndarray) -> None:
        self.unit, self.col, self.sum, self.n = unit, col, sums, n


def _cells(unit: np.ndarray, col: np.ndarray, values: np.ndarray, n_cols: int) -> _Cells:
    n_units = int(unit.max()) + 1
    key = col.astype(np.int64) * n_units + unit
    # Codes in key order: each column's cells in prompt order, so per-column totals add
    # the prompts in the order a dense prompts × columns matrix summed them.
    codes, _ = column_codes(pd.Series(key))
    uniques = np.empty(int(codes.max()) + 1, dtype=np.int64)
    uniques[codes] = key
    sums = np.bincount(codes, weights=values, minlength=len(uniques))
    n = np.bincount(codes, minlength=len(uniques)).astype(float)
    return _Cells(uniques % n_units, uniques // n_units, sums, n)


def _balanced(cells: _Cells, col_group: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group: do all its rater columns have the same count for every prompt?

    True when every (prompt, count) that occurs in the group occurs in all its columns:
    a column with another count, or none, at that prompt makes that (prompt, count) short.
    """
    group = col_group[cells.col]
    n_units, top = int(cells.unit.max()) + 1, int(cells.n.max()) + 1
    key, _ = column_codes(pd.Series((group * n_units + cells.unit) * top
                                    + cells.n.astype(np.int64)))
    short = np.bincount(key)[key] != np.bincount(col_group, minlength=n_groups)[group]
    return np.bincount(group, weights=short, minlength=n_groups) == 0


def _unbalanced(cells: _Cells, col_group: np.ndarray, wanted: np.ndarray,
                weights: np.ndarray, n_units: int) -> np.ndarray:
    """Per resample, the mean over each wanted group's raters of their resampled means
    (raters without a drawn prompt left out), a block of columns at a time."""
    n_boot, n_groups = weights.shape[0], len(wanted)
    total, count = np.zeros((n_boot, n_groups)), np.zeros((n_boot, n_groups))
    cols = np.flatnonzero(wanted[col_group])
    step = max(1, BLOCK_CELLS // max(n_units, n_boot))
    for start in range(0, len(cols), step):
        block = cols[start:start + step]
        at = np.full(len(col_group), -1)
        at[block] = np.arange(len(block))
        mine = at[cells.col] >= 0
        means = _resampled_rater_means(weights, cells.unit[mine], at[cells.col[mine]],
                                       cells.sum[mine], cells.n[mine], len(block))
        valid = ~np.isnan(means)
        indicator = np.zeros((len(block), n_groups))
        indicator[np.arange(len(block)), col_group[block]] = 1.0
        total += np.where(valid, means, 0.0) @ indicator
        count += valid.astype(float) @ indicator
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.where(count > 0, count, 1), np.nan)


def _resampled_rater_means(weights: np.ndarray, unit: np.ndarray, col: np.ndarray,
                           sums: np.ndarray, n: np.ndarray, n_cols: int) -> np.ndarray:
    """``resampled_means`` of the cells' prompts × columns sums and counts: a sparse
    product when few cells are filled (a crowd rater rates a few prompts), else dense."""
    n_units = weights.shape[1]
    if len(unit) < SPARSE_SHARE * n_units * n_cols:
        both = sparse.csc_matrix((np.r_[sums, n], (np.r_[unit, unit], np.r_[col, col + n_cols])),
                                 shape=(n_units, 2 * n_cols))
        product = np.asarray(weights @ both)
        return ratio(product[:, :n_cols], product[:, n_cols:])
    dense_sums, dense_n = (np.zeros((n_units, n_cols)) for _ in range(2))
    dense_sums[unit, col], dense_n[unit, col] = sums, n
    return resampled_means(weights, dense_sums, dense_n)


def _nanmean_by(values: np.ndarray, col_group: np.ndarray, n_groups: int) -> np.ndarray:
    """Mean of the non-NaN ``values`` of each group's columns (NaN for none)."""
    valid = ~np.isnan(values)
    total = np.bincount(col_group[valid], weights=values[valid], minlength=n_groups)
    n = np.bincount(col_group[valid], minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.where(n > 0, n, 1), np.nan)
