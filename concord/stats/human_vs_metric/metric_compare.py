"""Is metric X closer to humans than metric Y? Paired comparisons of two metrics' agreement
with the same human scores, per human source, dimension, level and statistic.

For every two metrics (metric × judge) of a human source, on the images both scored
(:mod:`concord.stats.human_vs_metric.metric_pair` for the statistics), the record gives
each metric's value, their difference ``diff = value_a − value_b`` and

* ``_ci_boot``: the prompt-bootstrap percentile interval (both metrics on the SAME
  resamples: a paired bootstrap);
* ``diff_p_perm``: a permutation test that swaps the two metrics' values on each image
  with probability ½ (``default_rng((seed, 3, k))`` for the k-th pair × source), two-sided,
  ``(1 + #{|diff*| ≥ |diff|}) / (1 + n_perm)``; a swap that leaves a statistic undefined
  counts as reaching it (conservative);
* ``diff_p_williams`` (Pearson rows): Williams' t-test for dependent correlations that
  share the human variable (Steiger 1980, eq. 7; df = n − 3);
* ``_holm`` / ``_bh``: the p-values adjusted over the metric pairs of the same human
  source, dimension, level and statistic.

Metrics² pairs: at most ``max_metrics`` metrics per human source are compared (those with
the highest item-level Pearson r with the humans; 5 by default, 10 pairs: each pair ×
human source costs a permutation test over all images).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import stats

from concord.stats._resample import bootstrap_weights, percentile_interval, resampled_sums
from concord.stats.human_vs_metric.metric_pair import (
    WITHIN,
    PairData,
    SwapDraws,
    statistics,
    swapped_sums,
)
from concord.stats.human_vs_metric.table import Joined, join_keys
from concord.stats.multiple import adjust_by_family

MAX_METRICS = 5
_SLACK = 100 * np.finfo(float).eps
_BLOCK_CELLS = 8_000_000
COLUMNS = ("human", "dimension", "level", "statistic", "metric_a", "judge_a", "metric_b",
           "judge_b", "value_a", "value_a_ci_boot_low", "value_a_ci_boot_high", "value_b",
           "value_b_ci_boot_low", "value_b_ci_boot_high", "diff", "diff_ci_boot_low",
           "diff_ci_boot_high", "diff_p_perm", "diff_p_perm_holm", "diff_p_perm_bh",
           "diff_p_williams", "diff_p_williams_holm", "diff_p_williams_bh", "n", "n_prompts",
           "n_metrics", "n_metrics_compared")


def williams_test(r12: object, r13: object, r23: object, n: object) -> tuple:
    """Williams' t for H0 ρ12 = ρ13 (variable 1 shared), two-sided p on n − 3 df.

    ``t = (r12 − r13) √((n − 1)(1 + r23)) / √(2 (n − 1)/(n − 3) |R| + r̄² (1 − r23)³)``,
    ``|R| = 1 − r12² − r13² − r23² + 2 r12 r13 r23``, ``r̄ = (r12 + r13) / 2``.
    Works on scalars (floats back) or arrays; NaN for n < 4 or an undefined correlation.
    """
    r12, r13, r23, n = (np.asarray(v, dtype=float) for v in (r12, r13, r23, n))
    det = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    rbar = (r12 + r13) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        den = 2 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r23) ** 3
        t = (r12 - r13) * np.sqrt((n - 1) * (1 + r23)) / np.sqrt(den)
        ok = (n >= 4) & (den > 0) & np.isfinite(t)
        t = np.where(ok, t, np.nan)
        p = np.where(ok, 2 * stats.t.sf(np.abs(t), np.where(ok, n - 3, 1)), np.nan)
    if t.ndim == 0:
        return float(t), float(p)
    return t, p


def metric_comparisons(joined: Joined, *, n_boot: int = 1000, n_perm: int = 1000,
                       seed: int = 0, ci: float = 0.95,
                       max_metrics: int = MAX_METRICS) -> pd.DataFrame:
    """Every pair of metrics per human source × dimension × level × statistic.

    Args:
        joined: :func:`concord.stats.human_vs_metric.table.join_sources` (its ``all`` subsets).
        n_boot, n_perm, seed, ci: Resampling (see the module docstring).
        max_metrics: Metrics compared per human source.

    Returns:
        One row per comparison with :data:`COLUMNS` (``metric_a`` < ``metric_b`` in
        (metric, judge) order).
    """
    rows: list[dict] = []
    index = 0
    for source in sorted({h["human"] for h in joined.heads}):
        metrics = {(h["metric"], h["judge"]): sub for h, sub in
                   zip(joined.heads, joined.subsets, strict=True)
                   if h["human"] == source and h["dimension"] == "all"}
        chosen = _closest(metrics, max_metrics)
        for a, b in itertools.combinations(chosen, 2):
            items = _both(metrics[a], metrics[b])
            head = {"human": source, "metric_a": a[0], "judge_a": a[1], "metric_b": b[0],
                    "judge_b": b[1], "n_metrics": len(metrics),
                    "n_metrics_compared": len(chosen)}
            if len(items) >= 2:
                rng = np.random.default_rng((seed, 3, index))
                rows += compare(PairData(items), head, n_boot=n_boot, n_perm=n_perm,
                                seed=seed, ci=ci, rng=rng)
            index += 1
    if not rows:
        return pd.DataFrame(columns=list(COLUMNS))
    out = pd.DataFrame(rows)
    family = out.groupby(["human", "dimension", "level", "statistic"], sort=False).ngroup()
    for name in ("diff_p_perm", "diff_p_williams"):
        out[f"{name}_holm"], out[f"{name}_bh"] = adjust_by_family(family.to_numpy(), out[name])
    return out[list(COLUMNS)]


def _closest(metrics: dict, limit: int) -> list:
    def pearson(sub: pd.DataFrame) -> float:
        h, m = sub["human"].to_numpy(float), sub["metric"].to_numpy(float)
        if len(h) < 3 or np.ptp(h) == 0 or np.ptp(m) == 0:
            return -np.inf
        return float(np.corrcoef(h, m)[0, 1])
    ranked = sorted(metrics, key=lambda k: (-pearson(metrics[k]), k))
    return sorted(ranked[:limit])


def _both(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    keys = join_keys(a, b)
    right = b[[*keys, "metric"]].rename(columns={"metric": "metric_y"})
    return a.rename(columns={"metric": "metric_x"}).merge(right, on=keys, how="inner")


def compare(data: PairData, head: dict, *, n_boot: int, n_perm: int, seed: int, ci: float,
            rng: np.random.Generator) -> list[dict]:
    """The records of one metric pair and human source, every subset of prompts."""
    masks = [mask for _, mask in data.subsets]
    points = [statistics(data, data.sums[mask].sum(axis=0, keepdims=True)) for mask in masks]
    boots = [statistics(data, resampled_sums(bootstrap_weights(int(mask.sum()), n_boot, seed),
                                             data.sums[mask])) for mask in masks]
    hits = _permutations(data, masks, points, n_perm, rng)
    intervals = _intervals(boots, ci)
    rows = []
    for s, (dim, mask) in enumerate(data.subsets):
        for key, (vx, vy) in points[s].items():
            rows.append({**head, "dimension": dim, "level": key[0], "statistic": key[1],
                         "value_a": vx[0], "value_b": vy[0], "diff": vx[0] - vy[0],
                         **intervals[s][key],
                         "diff_p_perm": (1 + hits[s][key]) / (1 + n_perm)
                         if np.isfinite(vx[0] - vy[0]) else np.nan,
                         "diff_p_williams": _williams(data, mask, points[s], key),
                         "n": data.n_models if key[0] == "model" else
                         int(np.isin(data.unit, np.flatnonzero(mask)).sum()),
                         "n_prompts": int(mask.sum())})
    return rows


def _intervals(boots: list[dict], ci: float) -> list[dict]:
    """Percentile intervals of both values and their difference, every subset and
    statistic at once (one quantile call)."""
    keys = [(s, key) for s, boot in enumerate(boots) for key in boot]
    columns = [c for s, key in keys for c in (boots[s][key][0], boots[s][key][1],
                                              boots[s][key][0] - boots[s][key][1])]
    low, high = percentile_interval(np.column_stack(columns), ci)
    out: list[dict] = [{} for _ in boots]
    for n, (s, key) in enumerate(keys):
        out[s][key] = {f"{name}_ci_boot_{end}": float(bound[3 * n + k])
                       for k, name in enumerate(("value_a", "value_b", "diff"))
                       for end, bound in (("low", low), ("high", high))}
    return out


def _williams(data: PairData, mask: np.ndarray, point: dict, key: tuple) -> float:
    if key[1] != "pearson":
        return float("nan")
    rx, ry = point[key][0][0], point[key][1][0]
    if key[0] == "item":
        rows = mask[data.unit]
        x, y = data.x[rows], data.y[rows]
        n = int(rows.sum())
    else:
        count = np.bincount(data.model[mask[data.unit]], minlength=data.n_models)
        x, y = (np.bincount(data.model[mask[data.unit]], weights=v[mask[data.unit]],
                            minlength=data.n_models) / count for v in (data.x, data.y))
        n = data.n_models
    if n < 4 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return williams_test(rx, ry, float(np.corrcoef(x, y)[0, 1]), n)[1]


def _permutations(data: PairData, masks: list[np.ndarray], points: list[dict], n_perm: int,
                  rng: np.random.Generator) -> list[dict]:
    """Per subset and (level, statistic): how many swaps reach the observed |diff|."""
    draws = SwapDraws(data, masks, rng)
    counts = [dict.fromkeys(p, 0) for p in points]
    bounds = [{k: abs(vx[0] - vy[0]) * (1 - _SLACK) for k, (vx, vy) in p.items()}
              for p in points]
    step = max(1, _BLOCK_CELLS // max(1, len(data.unit), data.n_units * len(WITHIN)))
    for start in range(0, n_perm, step):
        within, delta = draws.block(min(step, n_perm - start))
        for s, mask in enumerate(masks):
            sums = swapped_sums(data, data.sums[mask].sum(axis=0), delta[:, s], within[:, s])
            for key, (vx, vy) in statistics(data, sums).items():
                null = np.abs(vx - vy)
                counts[s][key] += int(np.sum(~(null < bounds[s][key])))
    return counts
