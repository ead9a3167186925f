"""One group's ratings as (rater, item, value) triples, and the agreement statistics that
need no raters × items matrix.

A crowd study has many raters who each rate a few items: 1,000 raters and 4,000 images
rated three times each make a 4-million-cell matrix that is 99.75 % empty, and the mean
pairwise Spearman over it compared all 500,000 rater pairs on every item (13 s; hours at
5,000 raters). Here only the pairs of raters who rated the same item are formed, in
blocks of bounded size, and their correlations come from
:func:`concord.stats.grouped.grouped_correlations` (tested against scipy).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from concord.stats.grouped import grouped_correlations

# Rater-pair rows (one per pair of raters and item both rated) formed at once.
PAIR_BLOCK = 1_000_000


@dataclass(frozen=True, slots=True)
class Entries:
    """The ratings of one group: rater codes ``0..n_raters-1``, item codes
    ``0..n_items-1`` and values, one per rater and item, none missing; ``unit``, when
    known, is the prompt code of each item (prompts in sorted order; the bootstrap's
    resampling units)."""

    rater: np.ndarray
    item: np.ndarray
    value: np.ndarray
    n_raters: int
    n_items: int
    unit: np.ndarray | None = None

    @classmethod
    def from_matrix(cls, data: np.ndarray) -> Entries:
        """The non-NaN cells of a raters × items matrix (row-major order)."""
        present = ~np.isnan(data)
        rater, item = np.nonzero(present)
        return cls(rater, item, data[present], data.shape[0], data.shape[1])

    def matrix(self) -> np.ndarray:
        """The raters × items matrix, NaN where not rated."""
        data = np.full((self.n_raters, self.n_items), np.nan)
        data[self.rater, self.item] = self.value
        return data

    @property
    def complete(self) -> bool:
        """Every rater rated every item."""
        return len(self.value) == self.n_raters * self.n_items


def value_counts(entries: Entries) -> tuple[np.ndarray, np.ndarray]:
    """Per item, how many raters gave each distinct value.

    Returns:
        ``(counts, domain)``: an items × values count matrix and the sorted distinct values.
    """
    # Hash-based factorize: few distinct values, so this beats sorting every rating.
    codes, domain = pd.factorize(entries.value, sort=True)
    flat = entries.item * len(domain) + codes
    counts = np.bincount(flat, minlength=entries.n_items * len(domain))
    return counts.reshape(entries.n_items, len(domain)), np.asarray(domain, dtype=float)


def mean_pairwise_spearman(entries: Entries) -> float:
    """Mean Spearman ρ over the pairs of raters, each on the items both rated (at least 3,
    neither side constant; other pairs are skipped).

    Returns:
        The mean, or NaN with fewer than two raters or no defined pair.
    """
    if entries.n_raters < 2:
        return float("nan")
    if entries.complete:
        # Every pair shares every item: one correlation matrix of the rows' ranks.
        with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            rho = np.atleast_2d(np.corrcoef(stats.rankdata(entries.matrix(), axis=1)))
        rho = rho[np.triu_indices(entries.n_raters, 1)]
        return float(np.nanmean(rho)) if np.isfinite(rho).any() else float("nan")
    total, count = 0.0, 0
    for x, y, pair in _shared_items(entries):
        rho = grouped_correlations(x, y, pair)["spearman"].to_numpy()
        rho = rho[np.isfinite(rho)]
        total, count = total + float(rho.sum()), count + rho.size
    return total / count if count else float("nan")


def _shared_items(entries: Entries) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(x, y, pair)`` per block: the two values of every rater pair (a < b) on every item
    both rated, and a code of the pair (a pair's rows all fall in one block)."""
    order = np.lexsort((entries.rater, entries.item))  # by item, then rater
    item, rater, value = entries.item[order], entries.rater[order], entries.value[order]
    n = len(item)
    new_item = np.r_[True, item[1:] != item[:-1]] if n else np.ones(0, bool)
    starts = np.flatnonzero(new_item)
    sizes = np.diff(np.r_[starts, n])
    # Raters later in the same item: the partners of this entry as the pair's first rater.
    later = np.repeat(starts + sizes, sizes) - np.arange(n) - 1
    rows_of_rater = np.bincount(rater, weights=later, minlength=entries.n_raters)
    # Consecutive raters whose pairs fit in one block (a rater with more is a block alone).
    block_of = ((np.cumsum(rows_of_rater) - rows_of_rater) // PAIR_BLOCK).astype(np.int64)
    for block in np.unique(block_of[rater[later > 0]]):
        first = np.flatnonzero((block_of[rater] == block) & (later > 0))
        counts = later[first]
        first = np.repeat(first, counts)
        second = first + np.arange(len(first)) - np.repeat(np.cumsum(counts) - counts,
                                                            counts) + 1
        pair, _ = pd.factorize(rater[first] * entries.n_raters + rater[second])
        yield value[first], value[second], pair
