"""Paired differences over prompts: the mean difference, its prompt-bootstrap interval and
two paired tests, for many columns (e.g. model pairs) at once.

A column holds one difference per prompt where both sides were measured (``d[p, k]``;
``present[p, k]`` says where). The statistic is the mean of the column's differences.

* *bootstrap*: prompts are resampled as everywhere (``_resample.bootstrap_weights``), so
  every resample of every column is ``(W @ d) / (W @ present)``: one matrix product.
* *permutation over prompts* (paired, sign flip): under "no difference" the two sides of a
  prompt are exchangeable, so each prompt's difference keeps or flips its sign. Flip
  ``k`` is row ``k`` of ``default_rng((seed, 2))`` signs; every column's null means are
  ``(S @ d) / n``. ``p = (1 + #{|T*| ≥ |T|}) / (1 + n_perm)``; when a column has so few
  non-zero differences that all ``2^n`` sign vectors number at most ``n_perm``, they are
  enumerated and ``p = #{|T*| ≥ |T|} / 2^n`` (exact, as ``scipy.stats.permutation_test``).
* *Wilcoxon signed-rank*: ``scipy.stats.wilcoxon`` on the column's differences (zeros
  dropped, scipy's ``method="auto"``); NaN with no non-zero difference.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from concord.stats._resample import bootstrap_weights, percentile_interval, ratio, resampled_sums

# Relative slack when a null statistic is compared with the observed one (scipy's
# permutation_test uses 100 ulp): sign flips of equal sums must count as equal.
_SLACK = 100 * np.finfo(float).eps
# Above this many differences (zeros included) scipy's wilcoxon uses the normal
# approximation, which is computed here for all columns at once.
_WILCOXON_NORMAL = 50
# Cells of one block of sign flips (resamples × prompts).
_MAX_CELLS = 4_000_000


@dataclass(frozen=True, slots=True)
class PairedColumns:
    """Differences of one set of prompts: ``d`` and ``present`` are ``(prompts, columns)``."""

    d: np.ndarray
    present: np.ndarray


def paired_tests(blocks: list[PairedColumns], *, n_boot: int, n_perm: int, seed: int,
                 ci: float) -> list[dict[str, np.ndarray]]:
    """Mean difference, bootstrap interval, permutation and Wilcoxon p per column.

    Blocks with the same number of prompts share their resamples and sign flips, so
    their products run at once.

    Returns:
        Per block: ``mean_diff, mean_diff_ci_boot_low, mean_diff_ci_boot_high,
        mean_diff_p_perm, p_wilcoxon, n_prompts`` (arrays over its columns).
    """
    out: list[dict[str, np.ndarray]] = [{} for _ in blocks]
    by_size: dict[int, list[int]] = {}
    for k, block in enumerate(blocks):
        by_size.setdefault(block.d.shape[0], []).append(k)
    for n_units, ks in by_size.items():
        d = np.hstack([blocks[k].d for k in ks])
        present = np.hstack([blocks[k].present for k in ks]).astype(float)
        width = d.shape[1]
        boot = resampled_sums(bootstrap_weights(n_units, n_boot, seed), np.hstack([d, present]))
        low, high = percentile_interval(ratio(boot[:, :width], boot[:, width:]), ci)
        stats_ = _tests(d, present, n_perm, seed)
        start = 0
        for k in ks:
            cols = slice(start, start + blocks[k].d.shape[1])
            out[k] = {"mean_diff_ci_boot_low": low[cols], "mean_diff_ci_boot_high": high[cols],
                      **{name: v[cols] for name, v in stats_.items()}}
            start = cols.stop
    return out


def _tests(d: np.ndarray, present: np.ndarray, n_perm: int, seed: int) -> dict[str, np.ndarray]:
    n = present.sum(axis=0)
    observed = ratio(d.sum(axis=0), n)
    bound = np.abs(observed) * (1 - _SLACK) * np.where(n > 0, n, 1.0)
    hits = np.zeros(d.shape[1])
    rng = np.random.default_rng((seed, 2))
    # Sign flips a block of rows at a time (memory bounded; the same stream as one draw).
    step = max(1, _MAX_CELLS // max(1, d.shape[0]))
    for start in range(0, n_perm, step):
        flips = np.where(rng.random((min(step, n_perm - start), d.shape[0])) < 0.5, -1.0, 1.0)
        hits += (np.abs(resampled_sums(flips, d)) >= bound).sum(axis=0)
    p = (1 + hits) / (1 + n_perm)
    wilcoxon = _wilcoxon_large(np.where(present > 0, d, np.nan))
    for k in range(d.shape[1]):
        diffs = d[present[:, k] > 0, k]
        nonzero = np.count_nonzero(diffs)
        if nonzero and 2**min(nonzero, 62) <= n_perm:
            p[k] = _exact_p(diffs[diffs != 0], observed[k], len(diffs))
        if nonzero and len(diffs) <= _WILCOXON_NORMAL:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                wilcoxon[k] = float(stats.wilcoxon(diffs).pvalue)
    p = np.where(n > 0, np.where(np.isfinite(observed), p, np.nan), np.nan)
    p = np.where((n > 0) & np.all((d == 0) | (present == 0), axis=0), 1.0, p)
    return {"mean_diff": observed, "mean_diff_p_perm": p, "p_wilcoxon": wilcoxon,
            "n_prompts": n.astype(int)}


def _wilcoxon_large(d: np.ndarray) -> np.ndarray:
    """Two-sided Wilcoxon signed-rank p per column of more than 50 differences (NaN =
    absent), as ``scipy.stats.wilcoxon`` computes it there (``method="auto"``): zeros
    dropped, average ranks of |d|, the normal approximation with the tie correction
    ``σ² = (n(n+1)(2n+1) − Σ(t³ − t)/2) / 24`` and no continuity correction. Smaller
    columns are left NaN (the caller asks scipy, whose exact and permutation branches
    apply there)."""
    rows = np.where(d == 0, np.nan, d).T                       # columns as rows
    order = np.argsort(np.abs(rows), axis=1)                   # NaN last
    value = np.take_along_axis(np.abs(rows), order, axis=1)
    valid = ~np.isnan(value)
    count = valid.sum(axis=1)
    start = np.ones(value.shape, dtype=bool)
    start[:, 1:] = value[:, 1:] != value[:, :-1]
    gid = np.cumsum(start.ravel()) - 1                         # tie group, row-major
    pos = np.tile(np.arange(1, value.shape[1] + 1), value.shape[0]).astype(float)
    size = np.bincount(gid, weights=valid.ravel())
    first = np.bincount(gid, weights=np.where(start.ravel(), pos, 0.0))
    rank = (first + (size - 1) / 2)[gid].reshape(value.shape)
    positive = np.take_along_axis(rows, order, axis=1) > 0
    r_plus = np.where(positive, rank, 0.0).sum(axis=1)
    group_row = np.repeat(np.arange(value.shape[0]), value.shape[1])[start.ravel()]
    ties = np.bincount(group_row, weights=size**3 - size, minlength=value.shape[0])
    n = count.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt((n * (n + 1) * (2 * n + 1) - ties / 2) / 24)
        z = (r_plus - n * (n + 1) / 4) / se
    p = np.clip(2 * stats.norm.sf(np.abs(z)), 0, 1)
    big = (~np.isnan(d)).sum(axis=0) > _WILCOXON_NORMAL
    return np.where(big & (count > 0), p, np.nan)


def _exact_p(nonzero: np.ndarray, observed: float, n: int) -> float:
    """Share of all sign vectors of the non-zero differences whose |mean| reaches the
    observed one (zeros flip to themselves, so they only scale every mean alike)."""
    signs = 1 - 2 * ((np.arange(2 ** nonzero.size)[:, None] >> np.arange(nonzero.size)) & 1)
    null = np.abs(signs @ nonzero) / n
    return float(np.mean(null >= abs(observed) * (1 - _SLACK)))
