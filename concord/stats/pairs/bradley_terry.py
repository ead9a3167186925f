"""Bradley–Terry strengths by maximum likelihood, with ties by Davidson (1970) or counted half.

Each model ``i`` has a log-strength ``θ_i`` (``π_i = exp θ_i``). Davidson's model, the
default (``tie_model="davidson"``), for one comparison of ``i`` and ``j``::

    P(i wins) = π_i / D,   P(j wins) = π_j / D,   P(tie) = ν √(π_i π_j) / D,
    D = π_i + π_j + ν √(π_i π_j),   ν ≥ 0 (ν = 0 is plain Bradley–Terry).

``tie_model="half"`` is plain Bradley–Terry ``P(i wins) = π_i / (π_i + π_j)`` with every
tie counted as half a win for each side (the arena convention). Both maximise
``Σ counts · log P − ½·prior·Σθ²`` (the second term is a N(0, 1/prior) prior, only when
``prior > 0``) by Newton's method on the analytic gradient and Hessian (the objective is
concave; the fit is :mod:`concord.stats.pairs.bt_fit`). Scale: ``Σ θ_i = 0``; the Elo-like
``score`` is ``base + scale/ln(odds) · (θ_i − θ_anchor)`` (``θ_anchor = 0`` without an
anchor model; arena defaults base 1000, scale 400, odds 10: 400 points are odds of 10:1).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from concord.stats._resample import (
    bootstrap_weights,
    percentile_interval,
    resampled_sums,
    unit_sums,
)
from concord.stats._validate import check_choice, check_fraction, check_positive_int
from concord.stats.pairs.bt_fit import TIE_MODELS as TIE_MODELS  # the tie models of this API
from concord.stats.pairs.bt_fit import BradleyTerryFit, _fit, fit_bradley_terry
from concord.stats.pairs.frame import Judgments, count_matrices, judgments

ELO_FACTOR = 400.0 / np.log(10.0)  # score points per unit of log-strength
UNITS = ("prompt", "vote")  # bootstrap resampling units


def score_factor(scale: float = 400.0, odds: float = 10.0) -> float:
    """Score points per unit of log-strength: ``scale`` points are odds of ``odds``:1
    (the arena scale: 400 points, odds 10:1)."""
    for name, value in (("scale", scale), ("odds", odds)):
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    if odds == 1:
        raise ValueError("odds must not be 1 (every score difference would be even odds)")
    return float(scale) / float(np.log(odds))


@dataclass(frozen=True)
class BradleyTerryBoot:
    """A fit and its prompt-bootstrap refits: ``thetas`` ``(n_boot, models)`` and ``nus``
    (NaN rows: resamples without a finite MLE), for tables and pairwise differences."""

    judgments: Judgments
    fit: BradleyTerryFit
    thetas: np.ndarray
    nus: np.ndarray
    tie_model: str


def bradley_terry_boot(pairs: pd.DataFrame, *, tie_model: str = "davidson",
                       both_bad: str = "tie", prior: float = 0.0, n_boot: int = 1000,
                       seed: int = 0, unit: str = "prompt") -> BradleyTerryBoot:
    """The fit of :func:`bradley_terry` and its bootstrap refits (same arguments).
    ``unit``: what a resample draws, ``prompt`` (a prompt with all its judgments) or
    ``vote`` (each judgment on its own, as arena leaderboards resample battles)."""
    check_choice(unit, UNITS, name="unit")
    j = judgments(pairs, both_bad=both_bad, where="bradley_terry")
    if unit == "vote":
        j = dataclasses.replace(j, prompt=np.arange(len(j.credit)),
                                prompts=np.arange(len(j.credit)).astype(str))
    wins, ties = count_matrices(j)
    fit = fit_bradley_terry(wins, ties, tie_model=tie_model, prior=prior, models=j.models)
    thetas, nus = _bootstrap(j, fit, tie_model, prior, check_positive_int(n_boot, name="n_boot"),
                             seed)
    return BradleyTerryBoot(j, fit, thetas, nus, tie_model)


def bradley_terry(
    pairs: pd.DataFrame, *, tie_model: str = "davidson", both_bad: str = "tie",
    prior: float = 0.0, anchor: str | None = None, base: float = 1000.0,
    n_boot: int = 1000, ci: float = 0.95, seed: int = 0,
    boot: BradleyTerryBoot | None = None, scale: float = 400.0, odds: float = 10.0,
) -> pd.DataFrame:
    """Bradley–Terry strengths of the models of a Pairs frame, with prompt-bootstrap CIs.

    Args:
        pairs: Pairs frame (``prompt_id, rater, left_model, right_model, outcome``).
        tie_model: ``"davidson"`` or ``"half"`` (see the module docstring).
        both_bad: ``"tie"`` (counted as a tie) or ``"exclude"`` (left out).
        prior: Gaussian prior precision on θ; 0 = maximum likelihood.
        anchor: Model whose ``score`` is fixed at ``base`` (default: mean θ at ``base``).
        base: Score of the anchor (or of the mean strength).
        n_boot, ci, seed: Prompt bootstrap (resamples, level, seed of the resamples).
        boot: :func:`bradley_terry_boot`'s result, when already computed (then only
            ``anchor, base, ci, scale, odds`` are used).
        scale, odds: The score scale: ``scale`` points are odds of ``odds``:1, so
            ``score = base + scale / ln(odds) · (θ − θ_anchor)`` (arena: 400, 10).

    Returns:
        One row per model, strongest first: ``model, strength, strength_ci_low,
        strength_ci_high, score, score_ci_low, score_ci_high, n_comparisons``, and the fit:
        ``tie_model, nu, nu_ci_low, nu_ci_high, loglik, n_judgments, boot_undefined`` (the
        resamples whose MLE was not finite: they are left out of the interval).

    Raises:
        ValueError: A bad Pairs frame or argument, an unknown anchor, or no finite MLE
            (disconnected comparisons, a model that never lost or never won) with
            ``prior = 0``; the message names the models.
    """
    check_fraction(ci, name="ci")
    factor = score_factor(scale, odds)
    if boot is None:
        boot = bradley_terry_boot(pairs, tie_model=tie_model, both_bad=both_bad, prior=prior,
                                  n_boot=n_boot, seed=seed)
    j, fit, thetas, nus = boot.judgments, boot.fit, boot.thetas, boot.nus
    if anchor is not None:
        check_choice(anchor, j.models.tolist(), name="anchor")
    ref = 0.0 if anchor is None else fit.strength[j.models.tolist().index(anchor)]
    refs = 0.0 if anchor is None else thetas[:, [j.models.tolist().index(anchor)]]
    low, high = percentile_interval(thetas, ci)
    s_low, s_high = percentile_interval(base + factor * (thetas - refs), ci)
    nu_low, nu_high = percentile_interval(nus[:, None], ci)
    out = pd.DataFrame({
        "model": j.models, "strength": fit.strength, "strength_ci_low": low,
        "strength_ci_high": high, "score": base + factor * (fit.strength - ref),
        "score_ci_low": s_low, "score_ci_high": s_high,
        "n_comparisons": np.bincount(np.r_[j.left, j.right], minlength=len(j.models)),
        "tie_model": boot.tie_model, "nu": fit.nu, "nu_ci_low": nu_low[0], "nu_ci_high": nu_high[0],
        "loglik": fit.loglik, "n_judgments": len(j.credit),
        "boot_undefined": int(np.isnan(thetas).all(axis=1).sum())})
    return out.sort_values(["strength", "model"], ascending=[False, True], ignore_index=True)


def _bootstrap(
    j: Judgments, fit: BradleyTerryFit, tie_model: str, prior: float, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """θ and ν of each prompt resample (NaN rows where the resample has no finite MLE)."""
    n = len(j.models)
    decisive = j.credit != 0.5
    winner = np.where(j.credit == 1.0, j.left, j.right)
    loser = np.where(j.credit == 1.0, j.right, j.left)
    cell = np.where(decisive, winner * n + loser,
                    n * n + np.minimum(j.left, j.right) * n + np.maximum(j.left, j.right))
    used, dense = np.unique(cell, return_inverse=True)
    counts, _ = unit_sums(j.prompt, dense, np.ones(len(cell)), len(j.prompts), len(used))
    resampled = resampled_sums(bootstrap_weights(len(j.prompts), n_boot, seed), counts)
    thetas, nus = np.full((n_boot, n), np.nan), np.full(n_boot, np.nan)
    for b in range(n_boot):
        flat = np.zeros(2 * n * n)
        flat[used] = resampled[b]
        wins, ties = flat[:n * n].reshape(n, n), flat[n * n:].reshape(n, n)
        if not ((wins + wins.T + ties + ties.T).sum(axis=1) > 0).all():
            continue  # a model not in this resample: its strength would be the prior's
        try:
            res = _fit(wins, ties + ties.T, tie_model, prior, j.models, fit.strength)
        except ValueError:
            continue  # no finite MLE in this resample: left out, counted in boot_undefined
        thetas[b], nus[b] = res.strength, res.nu
    return thetas, nus
