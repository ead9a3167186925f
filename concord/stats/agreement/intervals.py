"""Prompt-bootstrap intervals of Krippendorff's α (each level) and Fleiss' κ.

Items (images) are nested in prompts, so the resampling unit is the prompt, as for every
other interval of the report: a resample draws the group's prompts with replacement and
each drawn prompt brings all its items (an item drawn twice counts twice). For α, every
resample's coincidence sums are ``W @ (per-prompt sums)`` (one matrix product, as in
:mod:`concord.stats._resample`); with ``n_c`` the resampled value totals and
``n = Σ n_c``,

``α = 1 − (n − 1) Σ_{c≠k} o_ck δ²_ck / Σ_{c,k} n_c n_k δ²_ck``,

where ``o_ck = Σ_items n_ic (n_ik − [c = k]) / (n_i − 1)`` over items rated at least
twice. Nominal, interval and ratio δ² do not depend on the data, so each item adds one
number; ordinal δ²_ck = (M_k − M_c)² with the mid-ranks ``M_c = Σ_{g<c} n_g + n_c / 2``
of the resample, so each pair of values is a column (at most :data:`ORDINAL_MAX_VALUES`
values; above that the ordinal interval is NaN). Fleiss' κ keeps the items rated by the
modal number of raters R of each resample (as on the data): ``P̄`` (mean agreement per
item) and ``p_c = Σ n_ic / (items · R)`` come from resampled per-prompt sums kept per
number of raters, ``κ = (P̄ − Σ p_c²) / (1 − Σ p_c²)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from concord.stats._resample import bootstrap_weights, percentile_interval, resampled_sums
from concord.stats.agreement.entries import Entries, value_counts

ORDINAL_MAX_VALUES = 64


class AgreementBlock:
    """Per-prompt sums of one group from which α and κ are rebuilt for any resample."""

    def __init__(self, entries: Entries, unit: np.ndarray, levels: Sequence[str]) -> None:
        counts, self.domain = value_counts(entries)
        self.levels = [lv for lv in levels if lv != "ordinal" or
                       len(self.domain) <= ORDINAL_MAX_VALUES]
        self.wanted = list(levels)
        self.defined = entries.n_raters >= 2 and len(self.domain) >= 2
        used, dense = np.unique(unit, return_inverse=True)
        self.n_units = len(used)
        n_i = counts.sum(axis=1).astype(float)
        pair = n_i >= 2
        inv = np.where(pair, 1.0 / np.where(pair, n_i - 1, 1.0), 0.0)
        v = self.domain
        cols = {"n_c": counts * pair[:, None]}
        cols["nominal"] = ((n_i**2 - (counts**2).sum(axis=1)) * inv)[:, None]
        cols["interval"] = ((2 * n_i * (counts @ v**2) - 2 * (counts @ v) ** 2) * inv)[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio_d = np.nan_to_num(((v[:, None] - v[None, :]) / (v[:, None] + v[None, :])) ** 2)
        cols["ratio"] = (((counts @ ratio_d) * counts).sum(axis=1) * inv)[:, None]
        self.upper = np.triu_indices(len(v), 1)
        if "ordinal" in self.levels:
            c, k = self.upper
            cols["ordinal"] = 2 * counts[:, c] * counts[:, k] * inv[:, None]
        # Fleiss: one block per number of raters an item has, so that each resample
        # keeps the items of ITS modal number, as the statistic does on data.
        self.sizes = np.unique(n_i[pair]).astype(int)
        for r in self.sizes:
            mine = n_i == r
            agree = ((counts**2).sum(axis=1) - r) / (r * (r - 1))
            cols[f"fleiss{r}"] = np.column_stack([agree * mine, mine.astype(float),
                                                  counts * mine[:, None]])
        self.names = list(cols)
        self.widths = [cols[k].shape[1] for k in self.names]
        stacked = np.hstack([cols[k] for k in self.names])
        self.sums = np.zeros((self.n_units, stacked.shape[1]))
        np.add.at(self.sums, dense, stacked)

    def statistics(self, product: np.ndarray) -> dict[str, np.ndarray]:
        """α per level and κ for every resample, from ``W @ self.sums``."""
        parts, start = {}, 0
        for name, width in zip(self.names, self.widths, strict=True):
            parts[name] = product[:, start:start + width]
            start += width
        n_c = parts["n_c"]
        n = n_c.sum(axis=1)
        v = self.domain
        expected = {"nominal": n**2 - (n_c**2).sum(axis=1),
                    "interval": 2 * n * (n_c @ v**2) - 2 * (n_c @ v) ** 2}
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio_d = np.nan_to_num(((v[:, None] - v[None, :]) / (v[:, None] + v[None, :])) ** 2)
            expected["ratio"] = ((n_c @ ratio_d) * n_c).sum(axis=1)
            observed = {k: parts[k][:, 0] for k in ("nominal", "interval", "ratio")}
            if "ordinal" in self.levels:
                c, k = self.upper
                mid = np.cumsum(n_c, axis=1) - n_c / 2
                delta = (mid[:, k] - mid[:, c]) ** 2
                observed["ordinal"] = (parts["ordinal"] * delta).sum(axis=1)
                expected["ordinal"] = 2 * (n_c[:, c] * n_c[:, k] * delta).sum(axis=1)
            out = {}
            for level in self.wanted:
                alpha = np.full(len(n), np.nan)
                if self.defined and level in observed:
                    den = expected[level]
                    alpha = np.where(den > 0, 1 - (n - 1) * observed[level] / den, np.nan)
                out[f"alpha_{level}"] = alpha
            out["fleiss_kappa"] = self._kappa(parts, len(n))
        return out

    def _kappa(self, parts: dict[str, np.ndarray], n_boot: int) -> np.ndarray:
        if not self.sizes.size:
            return np.full(n_boot, np.nan)
        blocks = np.stack([parts[f"fleiss{r}"] for r in self.sizes])   # sizes × boot × cols
        # The modal number of raters of each resample; ties go to the larger number.
        last = len(self.sizes) - 1 - np.argmax(blocks[::-1, :, 1], axis=0)
        part = blocks[last, np.arange(n_boot)]
        raters = self.sizes[last].astype(float)
        items = part[:, 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            p_bar = part[:, 0] / items
            p_c = part[:, 2:] / (items * raters)[:, None]
        chance = (p_c**2).sum(axis=1)
        used = (part[:, 2:] > 0).sum(axis=1)
        ok = (items > 0) & (chance < 1) & (used >= 2)
        return np.where(ok, (p_bar - chance) / np.where(ok, 1 - chance, 1), np.nan)


def agreement_intervals(blocks: list[AgreementBlock], *, n_boot: int, seed: int,
                        ci: float) -> list[dict[str, float]]:
    """``<stat>_ci_boot_low/high`` per block; blocks with equal prompt counts share one
    product of the resampling matrix."""
    out: list[dict[str, float]] = [{} for _ in blocks]
    by_size: dict[int, list[int]] = {}
    for k, block in enumerate(blocks):
        by_size.setdefault(block.n_units, []).append(k)
    for n_units, ks in by_size.items():
        product = resampled_sums(bootstrap_weights(n_units, n_boot, seed),
                                 np.hstack([blocks[k].sums for k in ks]))
        start = 0
        for k in ks:
            width = blocks[k].sums.shape[1]
            samples = blocks[k].statistics(product[:, start:start + width])
            start += width
            for name, values in samples.items():
                low, high = percentile_interval(values[:, None], ci)
                out[k][f"{name}_ci_boot_low"] = float(low[0])
                out[k][f"{name}_ci_boot_high"] = float(high[0])
    return out
