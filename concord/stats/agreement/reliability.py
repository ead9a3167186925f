"""Interval-scale and two-rater reliability: ICC(2,1), ICC(2,k) and weighted Cohen's κ.

* **ICC, two-way random effects, absolute agreement** (Shrout & Fleiss 1979 ICC(2,1) and
  ICC(2,k); McGraw & Wong 1996 ICC(A,1), ICC(A,k)) on the n items × k raters block of
  items EVERY rater of the group rated (items missing a rater are left out, as
  pingouin's ``nan_policy="omit"`` does): with the two-way ANOVA mean squares of items
  (MSR, n − 1 df), raters (MSC, k − 1 df) and error (MSE, (n − 1)(k − 1) df),
  ``ICC(2,1) = (MSR − MSE) / (MSR + (k − 1) MSE + k (MSC − MSE) / n)`` and
  ``ICC(2,k) = (MSR − MSE) / (MSR + (MSC − MSE) / n)``. The interval is McGraw & Wong's
  F-based one (their Table 7, case 2A), its ICC(2,k) end points ``k L / (1 + (k − 1) L)``;
  the p-value tests ICC = 0 with ``F = MSR / MSE`` on (n − 1, (n − 1)(k − 1)) df.
* **Weighted κ** of a group with exactly two raters, over the items both rated:
  ``κ_w = 1 − Σ w_ij O_ij / Σ w_ij E_ij`` with O the observed and E the chance
  (product of the margins) proportions, categories the sorted distinct values and
  ``w_ij = |i − j|`` (linear) or ``(i − j)²`` (quadratic) on category positions, as
  ``sklearn.metrics.cohen_kappa_score``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from concord.stats.agreement.entries import Entries

ICC_FIELDS = ("icc2_1", "icc2_1_ci_f_low", "icc2_1_ci_f_high", "icc2_k", "icc2_k_ci_f_low",
              "icc2_k_ci_f_high", "icc2_p_f", "icc_n_items")
KAPPA_FIELDS = ("kappa_linear", "kappa_quadratic", "kappa_n_items")


def icc2(entries: Entries, *, ci: float = 0.95) -> dict[str, float]:
    """ICC(2,1) and ICC(2,k) with F-based intervals over the items every rater rated.

    Returns:
        :data:`ICC_FIELDS`; NaN when fewer than 2 raters or 2 complete items remain, or
        the block has no variance.
    """
    out = dict.fromkeys(ICC_FIELDS, float("nan"))
    k = entries.n_raters
    per_item = np.bincount(entries.item, minlength=entries.n_items)
    full = per_item == k
    out["icc_n_items"] = int(full.sum())
    n = int(full.sum())
    if k < 2 or n < 2:
        return out
    keep = full[entries.item]
    row = np.cumsum(full) - 1             # complete items only: memory follows the data
    y = np.zeros((n, k))
    y[row[entries.item[keep]], entries.rater[keep]] = entries.value[keep]
    grand = y.mean()
    item_mean, rater_mean = y.mean(axis=1), y.mean(axis=0)
    ssr = k * ((item_mean - grand) ** 2).sum()
    ssc = n * ((rater_mean - grand) ** 2).sum()
    sse = ((y - item_mean[:, None] - rater_mean[None, :] + grand) ** 2).sum()
    msr, msc = ssr / (n - 1), ssc / (k - 1)
    df_e = (n - 1) * (k - 1)
    mse = sse / df_e
    single_den = msr + (k - 1) * mse + k * (msc - mse) / n
    if not single_den > 0:
        return out                        # no variance at all: undefined
    single = (msr - mse) / single_den
    average = (msr - mse) / (msr + (msc - mse) / n)
    out.update(icc2_1=single, icc2_k=average,
               icc2_p_f=float(stats.f.sf(msr / mse if mse > 0 else np.inf, n - 1, df_e)))
    if mse > 0:                           # the interval divides by MSE
        low, high = _mcgraw_wong(single, msr, msc, mse, n, k, ci)
        out.update(icc2_1_ci_f_low=low, icc2_1_ci_f_high=high,
                   icc2_k_ci_f_low=k * low / (1 + (k - 1) * low),
                   icc2_k_ci_f_high=k * high / (1 + (k - 1) * high))
    return {key: float(v) if key != "icc_n_items" else v for key, v in out.items()}


def _mcgraw_wong(icc: float, msr: float, msc: float, mse: float, n: int, k: int,
                 ci: float) -> tuple[float, float]:
    """McGraw & Wong (1996) interval of ICC(A,1): Satterthwaite df ``v`` of the
    denominator's mean-square combination, then F quantiles on (n − 1, v)."""
    tail = (1 - ci) / 2
    fj = msc / mse
    a = k * icc * fj + n * (1 + (k - 1) * icc) - k * icc
    v = ((n - 1) * (k - 1) * a**2
         / ((n - 1) * k**2 * icc**2 * fj**2 + (n * (1 + (k - 1) * icc) - k * icc) ** 2))
    f_up = stats.f.ppf(1 - tail, n - 1, v)
    f_low = stats.f.ppf(1 - tail, v, n - 1)
    mix = k * msc + (k * n - k - n) * mse
    low = n * (msr - f_up * mse) / (f_up * mix + n * msr)
    high = n * (f_low * msr - mse) / (mix + n * f_low * msr)
    return float(low), float(high)


def weighted_kappa(entries: Entries) -> dict[str, float]:
    """Linear and quadratic weighted κ of a group of exactly two raters (NaN otherwise,
    and when fewer than two categories or no item both rated)."""
    out = dict.fromkeys(KAPPA_FIELDS, float("nan"))
    out["kappa_n_items"] = 0
    if entries.n_raters != 2:
        return out
    first = np.full(entries.n_items, np.nan)
    second = np.full(entries.n_items, np.nan)
    for target, r in ((first, 0), (second, 1)):
        mine = entries.rater == r
        target[entries.item[mine]] = entries.value[mine]
    both = ~np.isnan(first) & ~np.isnan(second)
    out["kappa_n_items"] = int(both.sum())
    a, b = first[both], second[both]
    domain = np.unique(np.r_[a, b])
    if domain.size < 2:
        return out
    ia, ib = np.searchsorted(domain, a), np.searchsorted(domain, b)
    size = domain.size
    observed = np.bincount(ia * size + ib, minlength=size * size).reshape(size, size)
    expected = np.outer(np.bincount(ia, minlength=size), np.bincount(ib, minlength=size))
    expected = expected / len(a)
    gap = np.abs(np.subtract.outer(np.arange(size), np.arange(size))).astype(float)
    for name, w in (("kappa_linear", gap), ("kappa_quadratic", gap**2)):
        den = float((w * expected).sum())
        out[name] = 1 - float((w * observed).sum()) / den if den > 0 else float("nan")
    return out
