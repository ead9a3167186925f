"""Krippendorff's α at the interval level in O(ratings), for continuous scales.

A slider (a criterion with a continuous scale, docs/rubrics.md) gives thousands of
distinct values; the value-count tables of :mod:`concord.stats.agreement.matrices` and
:mod:`concord.stats.agreement.intervals` grow with items × values and values², so above
:data:`MAX_CATEGORIES` distinct values a group is treated as continuous: α at the interval
level only (nominal, ordinal and ratio α, Fleiss' κ and weighted κ are categorical), from
per-item sums. With δ²(c, k) = (c − k)², for an item of m_i pairable values x:

    Σ_{ordered pairs j≠l} (x_j − x_l)² = 2 m_i Σx² − 2 (Σx)²,

so ``D_o·n = Σ_i (2 m_i S2_i − 2 S1_i²) / (m_i − 1)`` and ``D_e·n(n−1) = 2 n S2 − 2 S1²``
over the pairable values (items rated at least twice), and
``α = 1 − (n − 1) D_o·n / (D_e·n(n−1))``: Krippendorff's α, the same as the
``krippendorff`` package's interval level (tested). Values are centred on their mean first
(α does not change under a shift), which keeps the sums of squares exact enough.
"""

from __future__ import annotations

import numpy as np

from concord.stats.agreement.entries import Entries

MAX_CATEGORIES = 1_000


def is_continuous(entries: Entries) -> bool:
    """Whether the group has more distinct values than a scale of levels (a slider)."""
    return np.unique(entries.value).size > MAX_CATEGORIES


def _item_sums(entries: Entries) -> np.ndarray:
    """Per item: pairable count m, Σx and Σx² of the centred values (m < 2: zeros), and
    the item's observed-disagreement term."""
    x = entries.value - entries.value.mean()
    m = np.bincount(entries.item, minlength=entries.n_items).astype(float)
    s1 = np.bincount(entries.item, weights=x, minlength=entries.n_items)
    s2 = np.bincount(entries.item, weights=x * x, minlength=entries.n_items)
    pair = m >= 2
    observed = np.where(pair, (2 * m * s2 - 2 * s1**2) / np.where(pair, m - 1, 1.0), 0.0)
    return np.column_stack([m * pair, s1 * pair, s2 * pair, observed])


def _alpha(sums: np.ndarray) -> np.ndarray:
    """α from (n, S1, S2, observed) rows (one per resample); NaN where undefined."""
    n, s1, s2, observed = sums.T
    expected = 2 * n * s2 - 2 * s1**2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected > 1e-12 * np.maximum(n * np.abs(s2), 1e-300),
                        1 - (n - 1) * observed / expected, np.nan)


def interval_alpha(entries: Entries) -> float:
    """Krippendorff's α (interval) of the group; NaN with fewer than two raters, no item
    rated twice or no variation."""
    if entries.n_raters < 2 or len(entries.value) < 2:
        return float("nan")
    return float(_alpha(_item_sums(entries).sum(axis=0, keepdims=True))[0])


class IntervalBlock:
    """Per-prompt sums of a continuous group (the interface of
    :class:`concord.stats.agreement.intervals.AgreementBlock`): only the interval α varies."""

    def __init__(self, entries: Entries, unit: np.ndarray, levels: list[str] | tuple) -> None:
        self.wanted = list(levels)
        self.defined = entries.n_raters >= 2
        per_item = _item_sums(entries)
        used, dense = np.unique(unit, return_inverse=True)  # the prompt of each item
        self.n_units = len(used)
        self.sums = np.zeros((self.n_units, 4))
        np.add.at(self.sums, dense, per_item)

    def statistics(self, product: np.ndarray) -> dict[str, np.ndarray]:
        """α (interval; the other levels and κ NaN) for every resample of ``W @ sums``."""
        nan = np.full(len(product), np.nan)
        out = {f"alpha_{lv}": (_alpha(product) if lv == "interval" and self.defined else nan)
               for lv in self.wanted}
        out["fleiss_kappa"] = nan
        return out
