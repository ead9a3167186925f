"""Correlation between human and metric scores over items, and its meta-evaluation variants.

Array-level functions (no frames): Pearson / Spearman / Kendall τ_b with p-values and
Fisher-z intervals, pairwise accuracy with tie calibration (Deutsch et al., EMNLP 2023, as
in the t2v_metrics meta-evaluation), τ_23, and Winoground text/image/group accuracy.
Row-wise variants evaluate many resamples at once for the bootstrap.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from concord.stats._validate import check_fraction

# Standard errors of atanh(r) (Fieller, Hartley & Pearson 1957): Pearson 1/sqrt(n-3),
# Spearman sqrt(1.06/(n-3)), Kendall sqrt(0.437/(n-4)).
_FISHER = {"pearson": (1.0, 3), "spearman": (1.06, 3), "kendall_tau_b": (0.437, 4)}
# Above this many pairs an ungrouped pairwise accuracy would need gigabytes; ask for groups.
MAX_PAIRS = 50_000_000


def _pair(x: object, y: object, where: str) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"{where}: human and metric differ in length ({a.size} vs {b.size})")
    keep = np.isfinite(a) & np.isfinite(b)
    return a[keep], b[keep]


def _fisher_interval(r: float, n: int, kind: str, ci: float) -> tuple[float, float]:
    factor, offset = _FISHER[kind]
    if not np.isfinite(r) or n <= offset:
        return float("nan"), float("nan")
    z = np.arctanh(np.clip(r, -0.999999999999, 0.999999999999))
    half = stats.norm.ppf(0.5 + ci / 2) * np.sqrt(factor / (n - offset))
    return float(np.tanh(z - half)), float(np.tanh(z + half))


def correlations(human: object, metric: object, *, ci: float = 0.95) -> dict[str, float]:
    """Pearson, Spearman and Kendall τ_b between two score vectors (NaN pairs dropped).

    p-values are scipy's (two-sided); intervals are Fisher-z intervals. Every statistic is
    NaN when fewer than 3 pairs remain or either side is constant.

    Returns:
        Keys ``<stat>``, ``<stat>_ci_fisher_low``, ``<stat>_ci_fisher_high``,
        ``<stat>_p_analytic`` for stat in ``pearson, spearman, kendall_tau_b``, and ``n``.
    """
    check_fraction(ci, name="ci")
    x, y = _pair(human, metric, "correlations")
    out: dict[str, float] = {"n": int(x.size)}
    defined = x.size >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0
    tests = {"pearson": stats.pearsonr, "spearman": stats.spearmanr,
             "kendall_tau_b": stats.kendalltau}
    for name, test in tests.items():
        r, p = (float("nan"), float("nan"))
        if defined:
            res = test(x, y)
            r, p = float(res.statistic), float(res.pvalue)
        low, high = _fisher_interval(r, x.size, name, ci)
        out.update({name: r, f"{name}_ci_fisher_low": low, f"{name}_ci_fisher_high": high,
                    f"{name}_p_analytic": p})
    return out


def rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of two (rows × n) arrays; NaN rows give NaN."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=1) / np.sqrt((xc**2).sum(axis=1) * (yc**2).sum(axis=1))
    return np.clip(r, -1.0, 1.0)


def row_ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) within each row, as ``scipy.stats.rankdata(x, axis=1)``.

    Rows of a few values (models) are ranked by comparing every pair, which is many times
    faster than sorting a thousand resampled rows one by one; NaN rows give garbage that
    the callers mask.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[1] > 32:
        return stats.rankdata(x, axis=1)
    less = (x[:, None, :] < x[:, :, None]).sum(axis=2)
    equal = (x[:, None, :] == x[:, :, None]).sum(axis=2)
    return less + (equal + 1) / 2.0


def rowwise_spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman ρ (average ranks) of each row pair; rows containing NaN give NaN."""
    bad = np.isnan(x).any(axis=1) | np.isnan(y).any(axis=1)
    r = rowwise_pearson(row_ranks(x), row_ranks(y))
    r[bad] = np.nan
    return r


# Pair differences held at once by rowwise_kendall (a block of rows × column pairs): 2,000
# resamples of 200 models are 40 million pairs, 0.3 GB for each array when taken at once
# (a model-level correlation of 400 models peaked at 3.0 GB).
_KENDALL_BLOCK = 2_000_000
# From this many columns on, scipy's O(n log n) τ_b per row beats comparing every pair
# (2,000 rows: 0.65 against 0.77 s at 200 columns, 3.8 against 1.0 s at 400).
_KENDALL_SORT_MIN = 256


def rowwise_kendall(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall τ_b of each row pair: Σ sign(dx)·sign(dy) / sqrt(Σ|sign dx| · Σ|sign dy|).

    Rows are taken in blocks of at most ``_KENDALL_BLOCK`` column pairs, so memory stays
    bounded for many columns (each row's value does not depend on the blocking); with
    ``_KENDALL_SORT_MIN`` columns or more, row by row with scipy (NaN rows and constant
    rows give NaN, as here).
    """
    if x.shape[1] >= _KENDALL_SORT_MIN:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant rows: NaN, as the pair formula gives
            return np.array([stats.kendalltau(a, b).statistic for a, b in zip(x, y, strict=True)],
                            dtype=float)
    i, j = np.triu_indices(x.shape[1], 1)
    step = max(1, _KENDALL_BLOCK // max(i.size, 1))
    out = np.empty(x.shape[0])
    for start in range(0, x.shape[0], step):
        xs, ys = x[start:start + step], y[start:start + step]
        sx, sy = np.sign(xs[:, i] - xs[:, j]), np.sign(ys[:, i] - ys[:, j])
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:start + step] = (sx * sy).sum(axis=1) / np.sqrt(
                np.abs(sx).sum(axis=1) * np.abs(sy).sum(axis=1))
    return out


ROWWISE = {"spearman": rowwise_spearman, "kendall_tau_b": rowwise_kendall,
           "pearson": rowwise_pearson}


def pair_differences(
    human: object, metric: object, groups: object | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Differences over all item pairs (within each group if given).

    Returns:
        ``(d_human, d_metric, group)``: one entry per pair; ``group`` numbers the groups
        that have pairs 0..k-1 (0 without groups). Items with a NaN score are dropped first.
    """
    h, m = np.asarray(human, dtype=float).ravel(), np.asarray(metric, dtype=float).ravel()
    if h.shape != m.shape:
        raise ValueError(f"pairwise: human and metric differ in length ({h.size} vs {m.size})")
    g = np.zeros(h.size, dtype=np.int64) if groups is None else _codes(groups, h.size)
    keep = np.isfinite(h) & np.isfinite(m)
    h, m, g = h[keep], m[keep], g[keep]
    order = np.argsort(g, kind="stable")
    g_sorted = g[order]
    starts = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
    sizes = np.diff(np.r_[starts, g_sorted.size])
    if int((sizes * (sizes - 1) // 2).sum()) > MAX_PAIRS:
        raise ValueError(f"pairwise: more than {MAX_PAIRS:,} pairs; pass groups (e.g. prompt)")
    dh, dm, pg = [np.empty(0)], [np.empty(0)], [np.empty(0, dtype=np.int64)]
    for k in np.unique(sizes[sizes >= 2]):
        # Groups of equal size share one triangle of index pairs: one gather per size.
        block = order[starts[sizes == k][:, None] + np.arange(k)]
        i, j = np.triu_indices(int(k), 1)
        dh.append((h[block[:, i]] - h[block[:, j]]).ravel())
        dm.append((m[block[:, i]] - m[block[:, j]]).ravel())
        pg.append(np.repeat(g[block[:, 0]], i.size))
    return np.concatenate(dh), np.concatenate(dm), _dense(np.concatenate(pg))


def _dense(codes: np.ndarray) -> np.ndarray:
    """Renumber non-negative integer codes to 0..k-1 (order kept) without sorting."""
    if codes.size == 0:
        return codes
    present = np.zeros(int(codes.max()) + 1, dtype=bool)
    present[codes] = True
    return (np.cumsum(present) - 1)[codes]


def _codes(groups: object, n: int) -> np.ndarray:
    arr = np.asarray(groups)
    if arr.shape != (n,):
        raise ValueError(f"pairwise: groups must have one entry per item ({n}), got {arr.shape}")
    if arr.dtype.kind in "iu" and (arr.size == 0 or arr.min() >= 0):
        return _dense(arr.astype(np.int64))  # already integer codes: no sort needed
    return np.unique(arr, return_inverse=True)[1].ravel().astype(np.int64)


def _group_mean(hits: np.ndarray, group: np.ndarray) -> float:
    """Mean over groups (dense codes) of the share of ``hits`` among the group's pairs."""
    per_group = np.bincount(group, weights=hits.astype(float)) / np.bincount(group)
    return float(np.mean(per_group))


def pairwise_accuracy(
    human: object, metric: object, *, groups: object | None = None
) -> tuple[float, float]:
    """Pairwise accuracy with tie calibration (``acc_23`` of Deutsch et al. 2023).

    A pair is correct when human and metric order it the same way, or when the human
    ties and the metric difference is at most ε (a metric tie). ε is searched over 0 and
    every observed |Δmetric|; the smallest ε reaching the best accuracy (to 1e-12) is
    returned. With ``groups``, only pairs inside a group count and the accuracy is the
    mean over groups of the per-group accuracy (as t2v_metrics does for 2-D input).

    Returns:
        ``(accuracy, epsilon)``; ``(nan, nan)`` when there is no pair.
    """
    dh, dm, pg = pair_differences(human, metric, groups)
    if dh.size == 0:
        return float("nan"), float("nan")
    # Each pair weighs 1 / (pairs in its group × groups): the group mean as one weighted sum.
    weight = 1.0 / (np.bincount(pg)[pg] * (int(pg.max()) + 1))
    adm = np.abs(dm)
    concordant = (np.sign(dh) == np.sign(dm)) & (dh != 0) & (dm != 0)
    human_tie = dh == 0
    order = np.argsort(adm, kind="stable")
    a = adm[order]
    # Raising ε to a[k] turns the first k+1 pairs (by |Δm|) into metric ties: they lose
    # their concordance credit and gain credit where the human ties too.
    run_end = np.flatnonzero(np.r_[a[1:] != a[:-1], True])
    lost = np.cumsum((weight * concordant)[order])[run_end]
    gained = np.cumsum((weight * human_tie)[order])[run_end]
    total = float((weight * concordant).sum())
    accs = np.r_[total + float((weight * (human_tie & (adm == 0))).sum()), total - lost + gained]
    eps = np.r_[0.0, a[run_end]]
    best = int(np.flatnonzero(accs >= accs.max() - 1e-12)[0])
    hits = np.where(adm <= eps[best], human_tie, concordant)
    return _group_mean(hits, pg), float(eps[best])


def tau_23(human: object, metric: object, *, groups: object | None = None) -> tuple[float, float]:
    """Tie-calibrated Kendall τ_23 = 2·acc_23 − 1 (Deutsch et al.), with its ε."""
    acc, eps = pairwise_accuracy(human, metric, groups=groups)
    return 2.0 * acc - 1.0, eps


def pairwise_accuracy_ignore_ties(
    human: object, metric: object, *, groups: object | None = None
) -> float:
    """Concordant pairs / (pairs − pairs tied by the human only), as in t2v_metrics.

    Pairs tied by both stay in the denominator (they are not concordant). With
    ``groups``, the mean over groups of the per-group value.
    """
    dh, dm, pg = pair_differences(human, metric, groups)
    if dh.size == 0:
        return float("nan")
    concordant = (np.sign(dh) == np.sign(dm)) & (dh != 0) & (dm != 0)
    counted = ~((dh == 0) & (dm != 0))
    num = np.bincount(pg, weights=concordant.astype(float))
    den = np.bincount(pg, weights=counted.astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_group = num / den
    return float(np.nanmean(per_group)) if np.isfinite(per_group).any() else float("nan")


def kendall_tau_b_grouped(human: object, metric: object, groups: object) -> float:
    """Mean over groups of Kendall τ_b within each group (NaN groups skipped)."""
    h, m = np.asarray(human, dtype=float).ravel(), np.asarray(metric, dtype=float).ravel()
    g = _codes(groups, h.size)
    taus = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for code in np.unique(g):
            sel = g == code
            taus.append(stats.kendalltau(h[sel], m[sel]).statistic if sel.sum() >= 2 else np.nan)
    taus = np.asarray(taus, dtype=float)
    return float(np.nanmean(taus)) if np.isfinite(taus).any() else float("nan")


def winoground_accuracy(scores: object) -> dict[str, float]:
    """Winoground text / image / group accuracy of ``scores[k][image][caption]``.

    Text-correct: each image scores its own caption higher; image-correct: each caption
    scores its own image higher; group: both. Ties count as wrong (strict ``>``).

    Args:
        scores: Array of shape (N, 2, 2): ``scores[k, i, c]`` = score of image i, caption c.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 3 or s.shape[1:] != (2, 2):
        raise ValueError(f"winoground_accuracy: expected shape (N, 2, 2), got {s.shape}")
    text = (s[:, 0, 0] > s[:, 0, 1]) & (s[:, 1, 1] > s[:, 1, 0])
    image = (s[:, 0, 0] > s[:, 1, 0]) & (s[:, 1, 1] > s[:, 0, 1])
    return {"text": float(text.mean()), "image": float(image.mean()),
            "group": float((text & image).mean())}
