"""Spearman, Pearson and Kendall τ_b within many groups at once, and combining r over groups.

Per-model correlations (one per model × metric × human source × dimension) and rater-versus-
the-rest correlations (one per rater × model) run to thousands of small correlations on a
large study; calling scipy for each costs about a millisecond. Here every group is done
in a few vectorised passes, with the same definitions as scipy (average ranks for
Spearman; τ_b with ties on either side). Tests check every value against scipy.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from concord.stats._codes import first_rows
from concord.stats._contingency import MAX_CELLS, table_correlations

STATS = ("spearman", "kendall_tau_b", "pearson")
COMBINE = ("mean_r", "fisher_z", "tanh_mean_r")
# Kendall's τ_b loops once over the distinct values of the variable with fewer of them;
# above this many it falls back to scipy per group.
_MAX_LEVELS = 128
# atanh(±1) is infinite: r is clipped first, as the Fisher-z CI does.
CLIP = 0.999999999999


def _starts(new_run: np.ndarray) -> np.ndarray:
    """Index of the first row of the run each row belongs to (``new_run`` marks starts)."""
    return np.maximum.accumulate(np.where(new_run, np.arange(len(new_run)), 0))


class _Sorted:
    """Rows sorted by (group, value), with the runs of equal groups and of equal values."""

    def __init__(self, values: np.ndarray, group: np.ndarray) -> None:
        codes, uniques = pd.factorize(values, sort=True)
        self.codes, self.n_levels = codes.astype(np.int64), max(len(uniques), 1)
        key = group * self.n_levels + self.codes
        # One int64 key sorts 4-5x faster than lexsort on (group, value).
        self.order = np.argsort(key)
        k = key[self.order]
        self.group = group[self.order]
        n = len(k)
        self.new_group = np.r_[True, self.group[1:] != self.group[:-1]] if n else np.ones(0, bool)
        self.new_tie = np.r_[True, k[1:] != k[:-1]] if n else np.ones(0, bool)
        self.group_start = _starts(self.new_group)
        self.tie_start = _starts(self.new_tie)

    def ranks(self) -> np.ndarray:
        """Average ranks (1-based) within each group, in the original row order."""
        n = len(self.order)
        tie_end = np.r_[np.flatnonzero(self.new_tie)[1:], n] - 1  # last index of each run
        end = tie_end[np.cumsum(self.new_tie) - 1]
        ranks = np.empty(n)
        ranks[self.order] = (self.tie_start + end) / 2.0 - self.group_start + 1.0
        return ranks


def _pearson(x: np.ndarray, y: np.ndarray, group: np.ndarray, n: np.ndarray) -> np.ndarray:
    size = len(n)
    mx = np.bincount(group, weights=x, minlength=size) / np.maximum(n, 1)
    my = np.bincount(group, weights=y, minlength=size) / np.maximum(n, 1)
    dx, dy = x - mx[group], y - my[group]
    sxy = np.bincount(group, weights=dx * dy, minlength=size)
    sxx = np.bincount(group, weights=dx * dx, minlength=size)
    syy = np.bincount(group, weights=dy * dy, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)


def _kendall_parts(few: _Sorted, other: _Sorted,
                   size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group: Σ_{i<j} sign(a_i − a_j)·sign(b_i − b_j), and the tied pairs in a and in b.

    Rows are taken sorted by (group, b); for every level k of ``a`` a running count gives,
    for each row, how many rows of its group with a == k have a strictly smaller b.
    """
    g, c = other.group, few.codes[other.order]
    total = np.zeros(size)
    for k in range(few.n_levels):
        seen = np.concatenate([[0], np.cumsum(c == k)])  # seen[i] = count in rows < i
        before = seen[other.tie_start] - seen[other.group_start]  # smaller b, same group
        total += np.bincount(g, weights=np.sign(c - k) * before, minlength=size)
    return total, _ties(few, size), _ties(other, size)


def _ties(sorted_: _Sorted, size: int) -> np.ndarray:
    """Σ t(t−1)/2 over the runs of equal values within each group."""
    starts = np.flatnonzero(sorted_.new_tie)
    lengths = np.diff(np.r_[starts, len(sorted_.order)]).astype(float)
    return np.bincount(sorted_.group[starts], weights=lengths * (lengths - 1) / 2.0,
                       minlength=size)


def _kendall(x: _Sorted, y: _Sorted, raw: tuple[np.ndarray, np.ndarray], group: np.ndarray,
             n: np.ndarray) -> np.ndarray:
    size = len(n)
    if min(x.n_levels, y.n_levels) > _MAX_LEVELS:
        return _kendall_scipy(*raw, group, size)
    few, other = (x, y) if x.n_levels <= y.n_levels else (y, x)
    s, ties_a, ties_b = _kendall_parts(few, other, size)
    n0 = n * (n - 1) / 2.0
    denom = (n0 - ties_a) * (n0 - ties_b)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, s / np.sqrt(np.where(denom > 0, denom, 1.0)), np.nan)


def _kendall_scipy(x: np.ndarray, y: np.ndarray, group: np.ndarray, size: int) -> np.ndarray:
    out = np.full(size, np.nan)
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(group[order]) != 0, True])
    for start, stop in itertools.pairwise(bounds):
        rows = order[start:stop]
        if rows.size >= 2:
            out[group[rows[0]]] = stats.kendalltau(x[rows], y[rows]).statistic
    return out


def grouped_correlations(x: object, y: object, group: object, n_groups: int | None = None,
                         *, parents: object | None = None) -> pd.DataFrame:
    """Spearman ρ, Kendall τ_b and Pearson r of ``x`` vs ``y`` within each group.

    Pairs with a NaN are dropped first. A group's correlations are NaN when it has fewer
    than 3 pairs or either side is constant (scipy would warn and return NaN or ±1).

    Args:
        x: Values (e.g. the human score per image).
        y: Values of the same length (e.g. the metric score).
        group: Integer group code per pair, 0..n_groups-1.
        n_groups: Number of groups (default: max code + 1).
        parents: Optional parent code (0..P-1) of each group code: the result then also
            has one row per parent, pooling the pairs of its groups (e.g. models of a
            rater → the rater over all images), at index ``n_groups + parent``.

    Returns:
        One row per group code (index = code), then per parent:
        ``spearman, kendall_tau_b, pearson, n``.
    """
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    group = np.asarray(group, dtype=np.int64).ravel()
    if not x.shape == y.shape == group.shape:
        raise ValueError(f"grouped_correlations: lengths differ ({x.size}, {y.size}, "
                         f"{group.size})")
    size = int(n_groups if n_groups is not None else (group.max() + 1 if group.size else 0))
    up = None if parents is None else np.asarray(parents, dtype=np.int64).ravel()
    total = size + (0 if up is None else (int(up.max()) + 1 if up.size else 0))
    keep = np.isfinite(x) & np.isfinite(y)
    x, y, group = x[keep], y[keep], group[keep]
    out = pd.DataFrame(index=pd.RangeIndex(total))
    if x.size == 0:
        return out.assign(**dict.fromkeys(STATS, np.nan), n=0)
    cx, levels_x = pd.factorize(x, sort=True)
    cy, levels_y = pd.factorize(y, sort=True)
    if total * len(levels_x) * len(levels_y) <= MAX_CELLS:
        res = table_correlations(cx, np.asarray(levels_x), cy, np.asarray(levels_y), group,
                                 size, parents=up)
    else:
        if up is not None:  # pool by repeating each pair under its group's parent
            x, y, group = np.r_[x, x], np.r_[y, y], np.r_[group, up[group] + size]
        res = _sorted_correlations(x, y, group,
                                   np.bincount(group, minlength=total).astype(float))
    n = res["n"]
    defined = (n >= 3) & (res["spread_x"] > 0) & (res["spread_y"] > 0)
    for name in STATS:
        out[name] = np.where(defined, res[name], np.nan)
    out["n"] = n.astype(int)
    return out


def _sorted_correlations(x: np.ndarray, y: np.ndarray, group: np.ndarray,
                         n: np.ndarray) -> dict[str, np.ndarray]:
    """The general path: sort by (group, value) for ranks and for τ_b."""
    size = len(n)
    sx, sy = _Sorted(x, group), _Sorted(y, group)
    rx, ry = sx.ranks(), sy.ranks()
    mid = (n + 1) / 2.0
    # Ranks are halves, so a constant side gives exactly zero spread (no float noise).
    return {"n": n, "spearman": _pearson(rx, ry, group, n),
            "kendall_tau_b": _kendall(sx, sy, (x, y), group, n),
            "pearson": _pearson(x, y, group, n),
            "spread_x": np.bincount(group, weights=(rx - mid[group]) ** 2, minlength=size),
            "spread_y": np.bincount(group, weights=(ry - mid[group]) ** 2, minlength=size)}


def combine_r(values: object) -> dict[str, float]:
    """Combine correlations over groups (e.g. models) three ways; NaN values are skipped.

    ``mean_r`` = arithmetic mean of r; ``fisher_z`` = tanh of the mean of atanh r (r
    clipped to ±0.999999999999); ``tanh_mean_r`` = tanh of the arithmetic mean of r (a
    convention found in published MLLM-judge code); ``n`` = how many r were combined.
    """
    r = np.asarray(values, dtype=float)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return {"mean_r": float("nan"), "fisher_z": float("nan"),
                "tanh_mean_r": float("nan"), "n": 0}
    mean = float(np.mean(r))
    z = float(np.mean(np.arctanh(np.clip(r, -CLIP, CLIP))))
    return {"mean_r": mean, "fisher_z": float(np.tanh(z)), "tanh_mean_r": float(np.tanh(mean)),
            "n": int(r.size)}


def combine_table(table: pd.DataFrame, keys: Sequence[str],
                  count: str = "n_models") -> pd.DataFrame:
    """:func:`combine_r` of each of :data:`STATS` over the rows of each ``keys`` group.

    Every group at once (a crowd study has thousands of raters × models): sums per group
    code instead of one :func:`combine_r` call per group and statistic.

    Returns:
        Long format: ``keys``, ``statistic``, ``mean_r, fisher_z, tanh_mean_r``, ``count``.
    """
    keys = list(keys)
    columns = [*keys, "statistic", *COMBINE, count]
    if table.empty:
        return pd.DataFrame(columns=columns)
    code = table.groupby(keys, sort=True, observed=True, dropna=False).ngroup().to_numpy()
    size = int(code.max()) + 1
    heads = table.iloc[first_rows(code)][keys].reset_index(drop=True)
    parts = {}
    for stat in STATS:
        r = table[stat].to_numpy(dtype=float)
        ok = np.isfinite(r)
        n = np.bincount(code[ok], minlength=size)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.bincount(code[ok], weights=r[ok], minlength=size) / n
            z = np.bincount(code[ok], weights=np.arctanh(np.clip(r[ok], -CLIP, CLIP)),
                            minlength=size) / n
        parts[stat] = {"mean_r": np.where(n > 0, mean, np.nan),
                       "fisher_z": np.where(n > 0, np.tanh(z), np.nan),
                       "tanh_mean_r": np.where(n > 0, np.tanh(mean), np.nan), count: n}
    out = heads.loc[np.repeat(np.arange(size), len(STATS))].reset_index(drop=True)
    out["statistic"] = np.tile(STATS, size)
    for name in (*COMBINE, count):
        out[name] = np.column_stack([parts[stat][name] for stat in STATS]).ravel()
    return out[columns]
