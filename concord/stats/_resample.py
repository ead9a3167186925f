"""Vectorised bootstrap over prompts.

A resample is a vector of prompt multiplicities, so statistics that are ratios of sums
(means, means of means) become matrix products: ``weights @ sums / weights @ counts``
evaluates every resample at once instead of looping over them in Python.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from concord.stats._validate import check_fraction, check_positive_int

# Dense (units × columns) blocks above this many cells are processed in column chunks so
# a study with many groups does not allocate gigabytes at once.
_MAX_BLOCK = 20_000_000


def bootstrap_indices(n_units: int, n_boot: int, seed: int) -> np.ndarray:
    """Draw ``n_boot`` resamples of ``n_units`` units with replacement.

    Resample ``b`` is row ``b`` of ``np.random.default_rng(seed).integers(0, n_units,
    size=(n_boot, n_units))``; tests rebuild resampled frames from these indices.

    Args:
        n_units: Number of resampling units (prompts), at least 1.
        n_boot: Number of resamples, at least 1.
        seed: Seed of ``numpy.random.default_rng``.

    Returns:
        Integer array of shape ``(n_boot, n_units)``.
    """
    n_units = check_positive_int(n_units, name="n_units")
    n_boot = check_positive_int(n_boot, name="n_boot")
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_units, size=(n_boot, n_units))


def bootstrap_weights(n_units: int, n_boot: int, seed: int) -> np.ndarray:
    """Multiplicity of each unit in each resample of :func:`bootstrap_indices`.

    Returns:
        Read-only float array ``(n_boot, n_units)`` whose rows sum to ``n_units``.
    """
    return _weights(check_positive_int(n_units, name="n_units"),
                    check_positive_int(n_boot, name="n_boot"), seed)


@functools.lru_cache(maxsize=4)
def _weights(n_units: int, n_boot: int, seed: int) -> np.ndarray:
    # Cached: a report resamples the same prompt set for many metrics and criteria.
    idx = bootstrap_indices(n_units, n_boot, seed)
    flat = idx + (np.arange(n_boot) * n_units)[:, None]
    counts = np.bincount(flat.ravel(), minlength=n_boot * n_units)
    weights = counts.reshape(n_boot, n_units).astype(float)
    weights.flags.writeable = False
    return weights


def unit_sums(
    unit: np.ndarray, column: np.ndarray, values: np.ndarray, n_units: int, n_columns: int
) -> tuple[np.ndarray, np.ndarray]:
    """Sum and count of ``values`` per (unit, column) cell as two dense matrices."""
    flat = unit.astype(np.int64) * n_columns + column
    size = n_units * n_columns
    sums = np.bincount(flat, weights=values, minlength=size).reshape(n_units, n_columns)
    counts = np.bincount(flat, minlength=size).reshape(n_units, n_columns).astype(float)
    return sums, counts


def resampled_sums(weights: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``weights @ matrix`` in column blocks (bounded memory), i.e. every resample's sums."""
    step = max(1, _MAX_BLOCK // max(weights.shape[0], matrix.shape[0]))
    parts = [weights @ matrix[:, k:k + step] for k in range(0, matrix.shape[1], step)]
    return np.hstack(parts) if len(parts) > 1 else parts[0]


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` with NaN where ``den`` is 0 (a resample without the group's prompts)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def resampled_means(
    weights: np.ndarray, sums: np.ndarray, counts: np.ndarray, *more: np.ndarray
) -> np.ndarray | tuple[np.ndarray, ...]:
    """Per-resample means ``(weights @ sums) / (weights @ counts)``; NaN where a count is 0.

    Extra ``more`` sum matrices share ``counts``; all go through ONE matrix product,
    because reading the (resamples × units) weights dominates the cost.

    Returns:
        One ``(n_boot, n_columns)`` array, or a tuple of them when ``more`` is given.
    """
    blocks = [sums, *more]
    n_cols = sums.shape[1]
    product = resampled_sums(weights, np.hstack([*blocks, counts]))
    den = product[:, -n_cols:]
    means = [ratio(product[:, k * n_cols:(k + 1) * n_cols], den) for k in range(len(blocks))]
    return means[0] if not more else tuple(means)


def percentile_interval(samples: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of bootstrap ``samples`` (resamples along axis 0), NaN-aware."""
    check_fraction(ci, name="ci")
    tail = (1.0 - ci) / 2.0
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(samples).any(axis=0)
        low = np.full(samples.shape[1:], np.nan)
        high = np.full(samples.shape[1:], np.nan)
        if finite.any():
            q = np.nanquantile(samples[:, finite], [tail, 1.0 - tail], axis=0)
            low[finite], high[finite] = q[0], q[1]
    return low, high


def prompt_codes(prompt_ids: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer code of each row's prompt, with prompts sorted by id (the resampling units)."""
    try:
        codes, uniques = pd.factorize(prompt_ids, sort=True)
    except TypeError:
        # Mixed id types (e.g. ints and strings) do not sort; sort their text instead.
        codes, uniques = pd.factorize(prompt_ids.astype(str), sort=True)
    return codes, np.asarray(uniques)
