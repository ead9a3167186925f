"""Grouped correlations from a groups × x-levels × y-levels count table (no sorting).

Human scores take few distinct values (rubric levels, means of a few of them, ranks),
so a group's Spearman ρ, Pearson r and Kendall τ_b follow from how many pairs fall in
each (x level, y level) cell: average ranks from cumulative level counts, τ_b from 2-D
suffix sums of the table. One ``bincount`` over the rows replaces the sorts of the
general path in :mod:`concord.stats.grouped`; the results are the same numbers.
"""

from __future__ import annotations

import numpy as np

# Largest table (groups × x levels × y levels) built; larger inputs take the sort path.
MAX_CELLS = 3_000_000


def _weighted_pearson(table: np.ndarray, vx: np.ndarray, vy: np.ndarray,
                      n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pearson r of the levels' values ``vx[g, a]``, ``vy[g, b]`` weighted by the table.

    Returns:
        ``(r, spread_x, spread_y)`` per group (spreads = Σ weight · deviation²).
    """
    nx, ny = table.sum(axis=2), table.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (nx * vx).sum(axis=1) / n
        my = (ny * vy).sum(axis=1) / n
    dx, dy = vx - mx[:, None], vy - my[:, None]
    sxx, syy = (nx * dx * dx).sum(axis=1), (ny * dy * dy).sum(axis=1)
    sxy = np.einsum("gab,ga,gb->g", table, dx, dy)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0), sxx, syy


def _average_ranks(counts: np.ndarray) -> np.ndarray:
    """Average rank (1-based) of each level within each group, from level counts."""
    return np.cumsum(counts, axis=1) - counts + (counts + 1.0) / 2.0


def _kendall(table: np.ndarray, n: np.ndarray) -> np.ndarray:
    """τ_b per group: Σ N_ab (N[>a, >b] − N[>a, <b]) over (n0 − ties x)(n0 − ties y)."""
    below = np.zeros_like(table)  # Σ over a' > a of N[a', b]
    below[:, :-1, :] = np.cumsum(table[:, ::-1, :], axis=1)[:, ::-1, :][:, 1:, :]
    higher = np.zeros_like(table)  # Σ over a' > a, b' > b
    higher[:, :, :-1] = np.cumsum(below[:, :, ::-1], axis=2)[:, :, ::-1][:, :, 1:]
    lower = np.zeros_like(table)   # Σ over a' > a, b' < b
    lower[:, :, 1:] = np.cumsum(below, axis=2)[:, :, :-1]
    s = (table * (higher - lower)).sum(axis=(1, 2))
    nx, ny = table.sum(axis=2), table.sum(axis=1)
    n0 = n * (n - 1) / 2.0
    denom = (n0 - (nx * (nx - 1) / 2).sum(axis=1)) * (n0 - (ny * (ny - 1) / 2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, s / np.sqrt(np.where(denom > 0, denom, 1.0)), np.nan)


def table_correlations(codes_x: np.ndarray, levels_x: np.ndarray, codes_y: np.ndarray,
                       levels_y: np.ndarray, group: np.ndarray, size: int, *,
                       parents: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Spearman, Kendall τ_b and Pearson per group from level codes (sorted levels).

    Args:
        codes_x: Code of each row's x in ``levels_x`` (ascending distinct values).
        levels_x: The distinct x values.
        codes_y: As ``codes_x`` for y.
        levels_y: The distinct y values.
        group: Group code per row (0..size-1).
        size: Number of groups.
        parents: Optional parent code of each group: parents' tables are the sums of
            their groups' tables, appended after the groups.

    Returns:
        Per group (then parent): ``n``, ``spearman, kendall_tau_b, pearson`` (raw, NaN
        where undefined by arithmetic) and ``spread_x, spread_y`` (Σ squared rank
        deviations; 0 exactly for a constant side).
    """
    lx, ly = len(levels_x), len(levels_y)
    flat = (group * lx + codes_x) * ly + codes_y
    table = np.bincount(flat, minlength=size * lx * ly).reshape(size, lx, ly).astype(float)
    if parents is not None and parents.size:
        pooled = np.zeros((int(parents.max()) + 1, lx, ly))
        np.add.at(pooled, parents, table)
        table = np.concatenate([table, pooled])
        size = table.shape[0]
    n = table.sum(axis=(1, 2))
    rank_x, rank_y = _average_ranks(table.sum(axis=2)), _average_ranks(table.sum(axis=1))
    spearman, spread_x, spread_y = _weighted_pearson(table, rank_x, rank_y, n)
    vx = np.broadcast_to(levels_x, (size, lx))
    vy = np.broadcast_to(levels_y, (size, ly))
    pearson, _, _ = _weighted_pearson(table, vx, vy, n)
    return {"n": n, "spearman": spearman, "kendall_tau_b": _kendall(table, n),
            "pearson": pearson,
            "spread_x": spread_x, "spread_y": spread_y}
