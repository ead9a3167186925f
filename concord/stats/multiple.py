"""p-values adjusted for the number of comparisons (Holm, Benjamini–Hochberg) and rank
intervals from bootstrap resamples.

A family is the set of tests one claim rests on, e.g. every pair of models of one
leaderboard (criterion × dimension). NaN p-values (an undefined test) are not counted in
the family and stay NaN.
"""

from __future__ import annotations

import itertools

import numpy as np

from concord.stats._validate import check_fraction


def _finite(p: object) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(p, dtype=float).ravel()
    bad = values[np.isfinite(values) & ((values < 0) | (values > 1))]
    if bad.size:
        raise ValueError(f"p-values must lie in [0, 1], got {bad[0]!r}")
    return values, np.flatnonzero(np.isfinite(values))


def holm(p: object) -> np.ndarray:
    """Holm's step-down adjusted p-values (controls the family-wise error rate).

    With the m finite p-values sorted ascending, ``p̃_(k) = max_{j ≤ k} min(1, (m − j + 1)
    p_(j))``. Equals ``statsmodels.stats.multitest.multipletests(p, method="holm")``.
    """
    values, at = _finite(p)
    out = np.full(values.shape, np.nan)
    if at.size:
        order = at[np.argsort(values[at], kind="stable")]
        m = order.size
        scaled = np.minimum(1.0, (m - np.arange(m)) * values[order])
        out[order] = np.maximum.accumulate(scaled)
    return out


def benjamini_hochberg(p: object) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (controls the false discovery rate).

    With the m finite p-values sorted ascending, ``p̃_(k) = min_{j ≥ k} min(1, m p_(j) / j)``.
    Equals ``multipletests(p, method="fdr_bh")``.
    """
    values, at = _finite(p)
    out = np.full(values.shape, np.nan)
    if at.size:
        order = at[np.argsort(values[at], kind="stable")]
        m = order.size
        scaled = np.minimum(1.0, m * values[order] / np.arange(1, m + 1))
        out[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return out


def adjust_by_family(family: np.ndarray, p: object) -> tuple[np.ndarray, np.ndarray]:
    """Holm and Benjamini–Hochberg adjustments of ``p`` within each ``family`` code."""
    values = np.asarray(p, dtype=float)
    out_holm, out_bh = np.full(values.shape, np.nan), np.full(values.shape, np.nan)
    order = np.argsort(family, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(family[order]) != 0, True])
    for start, stop in itertools.pairwise(bounds):
        rows = order[start:stop]
        out_holm[rows], out_bh[rows] = holm(values[rows]), benjamini_hochberg(values[rows])
    return out_holm, out_bh


def min_ranks(scores: np.ndarray) -> np.ndarray:
    """Rank of each column within each row, 1 = highest; equal scores share the best rank
    (competition ranking), so a tie never looks like a win. NaN scores get NaN and do not
    push other columns down.

    Args:
        scores: ``(rows, columns)`` array (e.g. resamples × models).
    """
    data = np.asarray(scores, dtype=float)
    ranks = np.empty(data.shape)
    # Bounded blocks of rows: the comparison cube is rows × columns × columns.
    step = max(1, 4_000_000 // max(1, data.shape[1] ** 2))
    for start in range(0, data.shape[0], step):
        block = data[start:start + step]
        above = (block[:, None, :] > block[:, :, None]).sum(axis=2)
        ranks[start:start + step] = np.where(np.isnan(block), np.nan, above + 1.0)
    return ranks


def rank_intervals(point: np.ndarray, samples: np.ndarray,
                   ci: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank of each model on the data and the percentile interval of its rank over the
    bootstrap resamples, in whole ranks: the lower end is ``numpy.nanquantile(…, α/2,
    method="lower")``, the upper end ``(…, 1 − α/2, method="higher")`` (the interval
    never cuts a rank in two, so it is at least as wide as the linear one).

    Args:
        point: Scores per model (higher = better).
        samples: ``(n_boot, n_models)`` resampled scores (NaN = undefined in a resample).
        ci: Confidence level.

    Returns:
        ``(rank, low, high)``: float arrays per model (NaN where undefined).
    """
    check_fraction(ci, name="ci")
    rank = min_ranks(np.asarray(point, dtype=float)[None, :])[0]
    ranks = min_ranks(samples)
    low, high = np.full(rank.shape, np.nan), np.full(rank.shape, np.nan)
    seen = np.isfinite(ranks).any(axis=0)
    if seen.any():
        tail = (1.0 - ci) / 2.0
        low[seen] = np.nanquantile(ranks[:, seen], tail, axis=0, method="lower")
        high[seen] = np.nanquantile(ranks[:, seen], 1.0 - tail, axis=0, method="higher")
    return rank, low, high
