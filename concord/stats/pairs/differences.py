"""Pairwise and ranking data, pair by pair: Bradley–Terry differences and head-to-head
win rates, each with a prompt-bootstrap interval.

* ``bradley_terry_differences``: for models a < b (by name), ``θ_a − θ_b`` of one fit and
  its percentile interval over the SAME prompt resamples as the fit's own intervals
  (:func:`concord.stats.pairs.bradley_terry.bradley_terry_boot`: no second refit), and the
  same on the arena scale (``score_diff = 400/ln 10 · (θ_a − θ_b)``). A resample without
  a finite MLE is left out (``boot_undefined``), as in the fit.
* ``pair_win_rates``: over the judgments of a against b only, ``win_rate_a = (wins_a +
  ties/2) / n``, its interval resamples prompts (``(W @ credit) / (W @ n)`` per pair).

Models² pairs: only the ``max_models`` strongest models (by strength, or by overall win
rate) are paired (30 by default: 435 pairs); ``n_models`` / ``n_models_compared`` say
when others were left out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._resample import (
    bootstrap_weights,
    percentile_interval,
    ratio,
    resampled_sums,
    unit_sums,
)
from concord.stats.differences import MAX_MODELS
from concord.stats.pairs.bradley_terry import ELO_FACTOR, BradleyTerryBoot
from concord.stats.pairs.frame import Judgments


def _top_pairs(score: np.ndarray, max_models: int) -> tuple[np.ndarray, np.ndarray, int]:
    keep = np.sort(np.argsort(-score, kind="stable")[:max_models])
    a, b = (keep[idx] for idx in np.triu_indices(keep.size, 1))
    return a, b, int(keep.size)


def bradley_terry_differences(boot: BradleyTerryBoot, *, ci: float = 0.95,
                              max_models: int = MAX_MODELS,
                              factor: float = ELO_FACTOR) -> pd.DataFrame:
    """Per pair of models: the strength and score difference with bootstrap intervals.

    Returns:
        ``model_a, model_b, strength_diff, strength_diff_ci_boot_low,
        strength_diff_ci_boot_high, score_diff, score_diff_ci_boot_low,
        score_diff_ci_boot_high, n_direct`` (judgments between the two), ``tie_model``,
        ``boot_undefined``, ``n_models``, ``n_models_compared``.
    """
    j, theta = boot.judgments, boot.fit.strength
    a, b, kept = _top_pairs(theta, max_models)
    diff = boot.thetas[:, a] - boot.thetas[:, b]
    low, high = percentile_interval(diff, ci)
    n = len(j.models)
    met = np.bincount(np.minimum(j.left, j.right) * n + np.maximum(j.left, j.right),
                      minlength=n * n).reshape(n, n)
    return pd.DataFrame({
        "model_a": j.models[a], "model_b": j.models[b], "strength_diff": theta[a] - theta[b],
        "strength_diff_ci_boot_low": low, "strength_diff_ci_boot_high": high,
        "score_diff": factor * (theta[a] - theta[b]),
        "score_diff_ci_boot_low": factor * low, "score_diff_ci_boot_high": factor * high,
        "n_direct": met[a, b], "tie_model": boot.tie_model,
        "boot_undefined": int(np.isnan(boot.thetas).all(axis=1).sum()), "n_models": n,
        "n_models_compared": kept})


def pair_win_rates(j: Judgments, *, n_boot: int = 1000, seed: int = 0, ci: float = 0.95,
                   max_models: int = MAX_MODELS) -> pd.DataFrame:
    """Head-to-head win rate of a against b per pair that met, with a prompt-bootstrap CI.

    Returns:
        ``model_a, model_b, n, wins_a, wins_b, ties, win_rate_a,
        win_rate_a_ci_boot_low, win_rate_a_ci_boot_high, n_models, n_models_compared``.
    """
    n_models = len(j.models)
    credit = np.bincount(np.r_[j.left, j.right], weights=np.r_[j.credit, 1 - j.credit],
                         minlength=n_models)
    count = np.bincount(np.r_[j.left, j.right], minlength=n_models)
    a, b, kept = _top_pairs(credit / np.maximum(count, 1), max_models)
    column = np.full((n_models, n_models), -1)
    column[a, b] = np.arange(a.size)
    low_first = j.left < j.right
    lo, hi = np.minimum(j.left, j.right), np.maximum(j.left, j.right)
    col = column[lo, hi]
    mine = col >= 0
    credit_a = np.where(low_first, j.credit, 1 - j.credit)[mine]
    sums, n = unit_sums(j.prompt[mine], col[mine], credit_a, len(j.prompts), a.size)
    wins, _ = unit_sums(j.prompt[mine], col[mine], (credit_a == 1).astype(float),
                        len(j.prompts), a.size)
    losses, _ = unit_sums(j.prompt[mine], col[mine], (credit_a == 0).astype(float),
                          len(j.prompts), a.size)
    weights = bootstrap_weights(len(j.prompts), n_boot, seed)
    both = resampled_sums(weights, np.hstack([sums, n]))
    low, high = percentile_interval(ratio(both[:, :a.size], both[:, a.size:]), ci)
    total = n.sum(axis=0)
    out = pd.DataFrame({
        "model_a": j.models[a], "model_b": j.models[b], "n": total.astype(int),
        "wins_a": wins.sum(axis=0).astype(int), "wins_b": losses.sum(axis=0).astype(int),
        "ties": (total - wins.sum(axis=0) - losses.sum(axis=0)).astype(int),
        "win_rate_a": ratio(sums.sum(axis=0), total), "win_rate_a_ci_boot_low": low,
        "win_rate_a_ci_boot_high": high, "n_models": n_models, "n_models_compared": kept})
    return out[out["n"] > 0].reset_index(drop=True)
