"""Group sums and means that do not depend on the order of the rows.

A running sum in row order rounds differently for different orders, so two images with
the same ratings could get means that differ in the last bit, and a rank correlation
would then break a tie that is not there. Every per-image mean in ``concord.stats``
goes through this module, which sums a group's values in an order fixed by the values
themselves:

1. *dyadic values* (every value a multiple of 2**-20 and every partial sum below
   2**53 of those units, e.g. rubric levels 0/0.5/1/2, Likert integers, average ranks):
   every partial sum is exact, so ``np.bincount`` in any order gives the exact sum;
2. *few distinct values* (at most ``_FEW`` of them, e.g. the geometric-mean O levels):
   a group's sum is ``Σ_v count_v · v`` over the distinct values in ascending order;
3. otherwise the group's values are sorted before they are added.

The mean of the OTHER raters (``rest_means``) uses the same tiers on the multiset of
the others' values (tier 3 with ``math.fsum``), not ``total − own`` (which rounds twice).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

_SHIFT = 2.0**20
_LIMIT = 2.0**53
_FEW = 64


def _dyadic(values: np.ndarray) -> bool:
    scaled = values * _SHIFT
    return bool(np.all(scaled == np.round(scaled))
                and float(np.abs(scaled).sum()) < _LIMIT)


def _domain(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(sorted distinct values, code per value)`` when there are few, else None."""
    codes, domain = pd.factorize(values, sort=True)  # hashing: no sort of every value
    return (np.asarray(domain), codes.astype(np.int64)) if len(domain) <= _FEW else None


def _count_sums(counts: np.ndarray, domain: np.ndarray) -> np.ndarray:
    # One column at a time, in ascending value order: the same counts give the same bits.
    total = np.zeros(counts.shape[0])
    for d, value in enumerate(domain):
        total = total + counts[:, d] * value
    return total


def group_sums(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Sum of ``values`` per ``group`` code (0..n_groups-1), independent of row order.

    Args:
        group: Integer group code per row.
        values: Finite float value per row.
        n_groups: Number of groups (groups without rows sum to 0).

    Returns:
        Float array of length ``n_groups``.
    """
    group = np.asarray(group, dtype=np.int64)
    values = np.asarray(values, dtype=float)
    if values.size == 0 or _dyadic(values):
        return np.bincount(group, weights=values, minlength=n_groups).astype(float)
    few = _domain(values)
    if few is not None:
        domain, codes = few
        counts = np.bincount(group * len(domain) + codes, minlength=n_groups * len(domain))
        return _count_sums(counts.reshape(n_groups, len(domain)), domain)
    order = np.lexsort((values, group))
    sorted_groups = group[order]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    out = np.zeros(n_groups)
    out[sorted_groups[starts]] = np.add.reduceat(values[order], starts)
    return out


def group_means(group: np.ndarray, values: np.ndarray,
                n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Order-independent mean and count per group (NaN mean for an empty group)."""
    counts = np.bincount(np.asarray(group, dtype=np.int64), minlength=n_groups)
    sums = group_sums(group, values, n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return means, counts


def rest_means(group: np.ndarray, values: np.ndarray,
               n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the mean of the OTHER rows of its group, and how many there are.

    Returns:
        ``(rest_mean, rest_count)`` per row; the mean is NaN where the row is alone.
    """
    group = np.asarray(group, dtype=np.int64)
    values = np.asarray(values, dtype=float)
    counts = np.bincount(group, minlength=n_groups)
    rest_count = counts[group] - 1
    if values.size == 0 or _dyadic(values):
        # Exact sums: total − own is the exact sum of the others.
        rest_sum = group_sums(group, values, n_groups)[group] - values
    elif (few := _domain(values)) is not None:
        domain, codes = few
        table = np.bincount(group * len(domain) + codes, minlength=n_groups * len(domain))
        table = table.reshape(n_groups, len(domain))
        rest_sum = np.zeros(values.size)
        for d, value in enumerate(domain):
            rest_sum = rest_sum + (table[group, d] - (codes == d)) * value
    else:
        rest_sum = _fsum_rest(group, values)
    with np.errstate(invalid="ignore", divide="ignore"):
        rest = np.where(rest_count > 0, rest_sum / np.maximum(rest_count, 1), np.nan)
    return rest, rest_count


def _fsum_rest(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    # Many distinct non-dyadic values (rare for human ratings): correctly rounded sums.
    out = np.zeros(values.size)
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(group[order]) != 0, True])
    for start, stop in itertools.pairwise(bounds):
        rows = order[start:stop]
        vals = values[rows].tolist()
        for k, row in enumerate(rows):
            out[row] = math.fsum(vals[:k] + vals[k + 1:])
    return out
