"""Two metrics against the same human scores, on the images both scored: every statistic
of both metrics on the data, on prompt resamples and under item swaps.

The statistics of one subset (a set of prompts) are functions of per-prompt sums (one
row per prompt; :data:`LAYOUT`), so a prompt resample is ``W @ sums`` and a swap only
changes the sums of the swapped items. Levels and statistics:

* ``model``: Pearson, Spearman, Kendall τ_b of the model means (human image scores,
  metric values; M ≥ 3 models, as ``model_level``);
* ``item``: Pearson over all images (pooled), and within prompts (images of one prompt
  against each other, :mod:`concord.stats.human_vs_metric.metric_swap`): the mean over
  prompts of τ_b and of ρ, and the pair accuracy (hits over decisive pairs, pooled).

Each metric is standardised (z-scores over the images both scored) before anything: no
statistic changes, and a swap then exchanges values on one scale.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from concord.stats._resample import prompt_codes
from concord.stats.human_vs_metric.correlation import ROWWISE
from concord.stats.human_vs_metric.metric_swap import (
    TABLE_MAX_ITEMS,
    PatternTable,
    decisive_pairs,
    swapped_within,
    within_stats,
)

STATISTICS = {"model": ("pearson", "spearman", "kendall_tau_b"),
              "item": ("pearson", "spearman_within_prompt", "kendall_tau_b_within_prompt",
                       "pair_accuracy_within_prompt")}
# Per-prompt columns after the 4·M model columns (h, x, y sums and counts per model).
PEARSON = ("n", "h", "x", "y", "hh", "xx", "yy", "hx", "hy", "xy")
WITHIN = ("tau_x", "tau_x_n", "tau_y", "tau_y_n", "rho_x", "rho_x_n", "rho_y", "rho_y_n",
          "hits_x", "hits_y", "decisive")


def _z(v: np.ndarray) -> np.ndarray:
    sd = v.std()
    return (v - v.mean()) / sd if sd > 0 else v - v.mean()


class PairData:
    """The images of one human source both metrics scored, laid out by prompt."""

    def __init__(self, items: pd.DataFrame) -> None:
        unit, ids = prompt_codes(items["prompt_id"])
        order = np.argsort(unit, kind="stable")
        self.unit = unit[order]
        self.model, self.models = pd.factorize(items["model"].to_numpy()[order], sort=True)
        self.h = items["human"].to_numpy(float)[order]
        self.x = _z(items["metric_x"].to_numpy(float)[order])
        self.y = _z(items["metric_y"].to_numpy(float)[order])
        self.n_units, self.n_models = len(ids), len(self.models)
        start = np.searchsorted(self.unit, np.arange(self.n_units))
        self.slot = np.arange(len(self.unit)) - start[self.unit]
        self.k = np.bincount(self.unit, minlength=self.n_units)
        dims = (items["dimension"].astype(object).to_numpy()[order]
                if "dimension" in items.columns else None)
        self.subsets = [("all", np.ones(self.n_units, dtype=bool))]
        if dims is not None:
            first = dims[start]
            for d in sorted({v for v in first if v is not None and v == v}, key=str):
                self.subsets.append((str(d), first == d))
        self.groups = {int(k): np.flatnonzero(self.k == k) for k in np.unique(self.k)}
        self.sums = self._sums()

    def grid(self, values: np.ndarray, prompts: np.ndarray, k: int) -> np.ndarray:
        """``values`` of the given prompts (all with k images) as a (prompts, k) array."""
        at = np.zeros((self.n_units, k), dtype=np.int64)
        rows = np.isin(self.unit, prompts)
        at[self.unit[rows], self.slot[rows]] = np.flatnonzero(rows)
        return values[at[prompts]]

    def _sums(self) -> np.ndarray:
        m, u = self.n_models, self.unit
        cols = np.zeros((self.n_units, 4 * m + len(PEARSON) + len(WITHIN)))
        for k, v in enumerate((self.h, self.x, self.y, np.ones_like(self.h))):
            np.add.at(cols, (u, k * m + self.model), v)
        h, x, y = self.h, self.x, self.y
        for k, v in enumerate((np.ones_like(h), h, x, y, h * h, x * x, y * y, h * x, h * y,
                               x * y)):
            cols[:, 4 * m + k] = np.bincount(u, weights=v, minlength=self.n_units)
        for k, prompts in self.groups.items():
            hh = self.grid(h, prompts, k)
            sx, sy = within_stats(hh, self.grid(x, prompts, k)), within_stats(
                hh, self.grid(y, prompts, k))
            cols[prompts, self.within_at(0):] = within_columns(sx, sy, decisive_pairs(hh))
        return cols

    def within_at(self, k: int) -> int:
        return 4 * self.n_models + len(PEARSON) + k


def within_columns(sx: dict, sy: dict, decisive: np.ndarray | None,
                   stack: bool = True) -> np.ndarray | list[np.ndarray]:
    """The :data:`WITHIN` columns from the within stats of x and y (any leading shape),
    stacked on a last axis or as a list."""
    parts = []
    for name in ("kendall_tau_b", "spearman"):
        for s in (sx, sy):
            ok = np.isfinite(s[name])
            parts += [np.where(ok, s[name], 0.0), ok.astype(float)]
    parts += [sx["hits"], sy["hits"]]
    if decisive is not None:                 # the same under every swap: once, not per draw
        parts.append(np.broadcast_to(decisive, sx["hits"].shape))
    return np.stack(parts, axis=-1) if stack else parts


def statistics(data: PairData, sums: np.ndarray) -> dict[tuple[str, str], tuple]:
    """Per (level, statistic): the values of x and of y for every row of ``sums``."""
    m = data.n_models
    count = sums[:, 3 * m:4 * m]
    with np.errstate(invalid="ignore", divide="ignore"):
        hm, xm, ym = (sums[:, k * m:(k + 1) * m] / count for k in range(3))
        out = {}
        for name in STATISTICS["model"]:
            values = [ROWWISE[name](hm, v) if m >= 3 else np.full(len(sums), np.nan)
                      for v in (xm, ym)]
            out[("model", name)] = tuple(values)
        p = dict(zip(PEARSON, sums[:, 4 * m:4 * m + len(PEARSON)].T, strict=True))
        var_h = p["n"] * p["hh"] - p["h"] ** 2
        out[("item", "pearson")] = tuple(
            np.clip((p["n"] * p["h" + v] - p["h"] * p[v])
                    / np.sqrt(var_h * (p["n"] * p[v + v] - p[v] ** 2)), -1, 1)
            for v in ("x", "y"))
        w = dict(zip(WITHIN, sums[:, data.within_at(0):].T, strict=True))
        out[("item", "kendall_tau_b_within_prompt")] = (w["tau_x"] / w["tau_x_n"],
                                                        w["tau_y"] / w["tau_y_n"])
        out[("item", "spearman_within_prompt")] = (w["rho_x"] / w["rho_x_n"],
                                                   w["rho_y"] / w["rho_y_n"])
        out[("item", "pair_accuracy_within_prompt")] = (w["hits_x"] / w["decisive"],
                                                        w["hits_y"] / w["decisive"])
    return out


class _Group:
    """The prompts with K images each, their images ordered by (subset, model) so that a
    swap's changes of the model and pooled-Pearson sums are dot products of contiguous
    slices (every prompt is in ``all`` and in at most one dimension's subset)."""

    def __init__(self, data: PairData, k: int, prompts: np.ndarray,
                 subset_of: np.ndarray) -> None:
        rows = np.flatnonzero(np.isin(data.unit, prompts))
        rows = rows[np.lexsort((data.model[rows], subset_of[data.unit[rows]]))]
        self.k, self.prompts, self.rows = k, prompts, rows
        self.local = np.searchsorted(prompts, data.unit[rows])
        self.slot = data.slot[rows]
        dx = data.y[rows] - data.x[rows]
        self.weights = np.column_stack([dx, data.y[rows] ** 2 - data.x[rows] ** 2,
                                        data.h[rows] * dx]).astype(np.float32)
        self.dx = dx.astype(np.float32)
        key = subset_of[data.unit[rows]] * data.n_models + data.model[rows]
        edges = np.flatnonzero(np.r_[True, key[1:] != key[:-1], True])
        self.blocks = [(int(key[a]) // data.n_models, int(key[a]) % data.n_models, a, b)
                       for a, b in itertools.pairwise(edges)]
        self.table = None
        # Whether τ and ρ are defined under every swap (no table NaN): then their counts
        # need no per-draw work.
        self.finite = False
        if 2 <= k <= TABLE_MAX_ITEMS:
            self.table = PatternTable(*(data.grid(v, prompts, k) for v in (data.h, data.x,
                                                                           data.y)))
            self.finite = all(np.isfinite(self.table.table[s]).all()
                              for s in ("kendall_tau_b", "spearman"))
        self.decisive = decisive_pairs(data.grid(data.h, prompts, k)) if k >= 2 else None


class SwapDraws:
    """Blocks of swap draws (every image's two metric values exchanged with probability
    ½). Per block: the :data:`WITHIN` columns summed over each subset's prompts
    ``(R, subsets, WITHIN)`` and the changes of x' 's model sums and pooled Σx, Σx², Σhx
    per subset ``(R, subsets, M + 3)`` (y' changes by the opposite)."""

    def __init__(self, data: PairData, subsets: list[np.ndarray],
                 rng: np.random.Generator) -> None:
        self.data, self.rng = data, rng
        self.member = np.stack(subsets, axis=1).astype(float)        # prompts × subsets
        subset_of = np.zeros(data.n_units, dtype=np.int64)           # 0: in "all" only
        for s, mask in enumerate(subsets[1:], start=1):
            subset_of[mask] = s
        self.groups = [_Group(data, k, prompts, subset_of)
                       for k, prompts in data.groups.items()]

    def block(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        d = self.data
        within = np.zeros((n, self.member.shape[1], len(WITHIN)))
        delta = np.zeros((n, self.member.shape[1], d.n_models + 3))
        for g in self.groups:
            bits, sx, sy = self._draw(g, n)                         # images × R
            for s, m, a, b in g.blocks:
                change = g.dx[a:b] @ bits[a:b]
                pooled = (g.weights[a:b].T @ bits[a:b]).T
                for target in {0, s}:                                # "all" and its subset
                    delta[:, target, m] += change
                    delta[:, target, d.n_models:] += pooled
            if sx is None:
                continue
            member = self.member[g.prompts].T                        # subsets × prompts
            counts = member.sum(axis=1)
            for c, name in enumerate(WITHIN[:-1]):
                if name.endswith("_n") and g.finite:
                    within[:, :, c] += counts                        # defined under every swap
                    continue
                stat = {"tau": "kendall_tau_b", "rho": "spearman", "hits": "hits"}[
                    name.split("_")[0]]
                values = (sx if "_x" in name else sy)[stat]
                if name.endswith("_n"):
                    values = np.isfinite(values).astype(float)
                elif not g.finite:
                    values = np.nan_to_num(values)
                within[:, :, c] += (member @ values).T
            within[:, :, len(WITHIN) - 1] += member @ g.decisive
        return within, delta

    def _draw(self, g: _Group, n: int) -> tuple[np.ndarray, dict | None, dict | None]:
        """Swap bits ``(images, R)`` (float32) and the within stats of x' and y'
        ``(prompts, R)``; draws are prompt-major (a prompt's R draws are contiguous)."""
        d = self.data
        if g.table is not None:
            pattern = self.rng.integers(0, 2**g.k, size=(g.prompts.size, n), dtype=np.uint16)
            bits = ((pattern[g.local] >> g.slot.astype(np.uint16)[:, None]) & 1).astype(
                np.float32)
            return (bits, *g.table.pick(pattern))
        if g.k >= 2:
            drawn = self.rng.integers(0, 2, size=(g.prompts.size, n, g.k)).astype(bool)
            sx, sy = swapped_within(*(d.grid(v, g.prompts, g.k) for v in (d.h, d.x, d.y)),
                                    drawn)
            return drawn[g.local, :, g.slot].astype(np.float32), sx, sy
        return self.rng.integers(0, 2, size=(g.rows.size, n)).astype(np.float32), None, None


def swapped_sums(data: PairData, base: np.ndarray, delta: np.ndarray,
                 within: np.ndarray) -> np.ndarray:
    """``(R, columns)`` sums of one subset under swaps: ``base`` (its data sums), ``delta``
    ``(R, M + 3)`` (:class:`SwapDraws`), ``within`` ``(R, WITHIN)`` summed over its
    prompts."""
    m = data.n_models
    out = np.repeat(base[None, :], delta.shape[0], axis=0)
    out[:, m:2 * m] += delta[:, :m]
    out[:, 2 * m:3 * m] -= delta[:, :m]
    p = 4 * m
    for col, k, sign in ((p + 2, m, 1), (p + 3, m, -1), (p + 5, m + 1, 1),
                         (p + 6, m + 1, -1), (p + 7, m + 2, 1), (p + 8, m + 2, -1)):
        out[:, col] += sign * delta[:, k]
    out[:, data.within_at(0):] = within
    return out
