"""Bradley–Terry strengths by maximum likelihood, with ties by Davidson (1970) or counted half.

Each model ``i`` has a log-strength ``θ_i`` (``π_i = exp θ_i``). Davidson's model, the
default (``tie_model="davidson"``), for one comparison of ``i`` and ``j``::

    P(i wins) = π_i / D,   P(j wins) = π_j / D,   P(tie) = ν √(π_i π_j) / D,
    D = π_i + π_j + ν √(π_i π_j),   ν ≥ 0 (ν = 0 is plain Bradley–Terry).

``tie_model="half"`` is plain Bradley–Terry ``P(i wins) = π_i / (π_i + π_j)`` with every
tie counted as half a win for each side (the arena convention). Both maximise
``Σ counts · log P − ½·prior·Σθ²`` (the second term is a N(0, 1/prior) prior, only when
``prior > 0``) by Newton's method on the analytic gradient and Hessian (the objective is
concave). Scale: ``Σ θ_i = 0``; the Elo-like ``score`` is
``base + 400/ln 10 · (θ_i − θ_anchor)`` (``θ_anchor = 0`` without an anchor model).
"""

from __future__ import annotations

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
from concord.stats.pairs import Judgments, count_matrices, judgments

TIE_MODELS = ("davidson", "half")
ELO_FACTOR = 400.0 / np.log(10.0)  # score points per unit of log-strength


@dataclass(frozen=True)
class BradleyTerryFit:
    """Result of :func:`fit_bradley_terry`.

    ``strength``: log-strengths θ (sum 0); ``nu``: Davidson's ν (0 for ``"half"`` or when
    nothing tied); ``loglik``: the log-likelihood at the estimate (without the prior; for
    ``"half"`` with fractional win counts); ``n``: number of comparisons.
    """

    strength: np.ndarray
    nu: float
    loglik: float
    n: float


def _check_counts(wins: object, ties: object | None) -> tuple[np.ndarray, np.ndarray]:
    w = np.asarray(wins, dtype=float)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or w.shape[0] < 2:
        raise ValueError(f"fit_bradley_terry: wins must be a square matrix of >= 2 models, "
                         f"got shape {w.shape}")
    t = np.zeros_like(w) if ties is None else np.asarray(ties, dtype=float)
    if t.shape != w.shape:
        raise ValueError(f"fit_bradley_terry: ties has shape {t.shape}, wins {w.shape}")
    for name, m in (("wins", w), ("ties", t)):
        if not np.isfinite(m).all() or (m < 0).any() or np.diag(m).any():
            raise ValueError(f"fit_bradley_terry: {name} must be finite counts >= 0 with a "
                             f"zero diagonal, got {m.tolist()}")
    if not np.allclose(t, t.T):
        raise ValueError("fit_bradley_terry: ties must be symmetric (ties[i, j] = ties[j, i])")
    return w, t


def _closure(adjacency: np.ndarray) -> np.ndarray:
    """Reachability (``r[i, j]``: a path from i to j, incl. i = j) by repeated squaring."""
    reach = adjacency | np.eye(len(adjacency), dtype=bool)
    while True:
        step = reach.astype(float)
        nxt = (step @ step) > 0
        if (nxt == reach).all():
            return reach
        reach = nxt


def check_identifiable(wins: np.ndarray, ties: np.ndarray, models: np.ndarray) -> None:
    """Raise ``ValueError`` naming the models when the MLE of the strengths is not finite.

    Finite strengths need every split of the models into two groups to have a win or a tie
    each way (Zermelo 1929, Ford 1957): the graph "i won or tied against j" must be strongly
    connected. The message names separate groups, or the models that won (lost) every
    comparison with the rest.
    """
    credit = (wins + ties) > 0
    reach = _closure(credit)
    if reach.all():
        return
    met = _closure(credit | credit.T)
    if not met.all():
        groups = [models[row].tolist() for row in np.unique(met, axis=0)[::-1]]
        raise ValueError(f"the comparison graph is disconnected: no model of one group "
                         f"{groups} was compared with another group, so their strengths "
                         f"are not on one scale; pass prior > 0 for a regularised fit")
    mutual = reach & reach.T
    # A model is "top" when only its own strong component reaches it, "bottom" when it
    # reaches only its own component.
    top = models[(reach == mutual).all(axis=0)].tolist()
    bottom = models[(reach == mutual).all(axis=1)].tolist()
    raise ValueError(f"no finite maximum-likelihood strengths: models {top} never lost "
                     f"or tied against the other models and {bottom} never won or tied "
                     f"against them; pass prior > 0 for a regularised (MAP) fit")


def _terms(x: np.ndarray, data: tuple, n_models: int, prior: float,
           hessian: bool = True) -> tuple[float, np.ndarray, np.ndarray | None]:
    """Negative log-likelihood (+ prior), gradient and Hessian in ``x = [θ, log ν]``.

    Per comparison ``D = logsumexp(a, b, λ + (a+b)/2)`` is convex, so the objective is
    convex in ``x`` and Newton's method with a line search finds the global optimum.
    """
    i, j, wij, wji, t = data
    theta, size = x[:n_models], x.size
    a, b = theta[i], theta[j]
    tie_logit = x[n_models] + (a + b) / 2 if size > n_models else np.full(a.shape, -np.inf)
    d = np.logaddexp(np.logaddexp(a, b), tie_logit)
    n = wij + wji + t
    nll = n * d - wij * a - wji * b - (t * tie_logit if size > n_models else 0.0)
    value = float(nll.sum() + prior / 2 * theta @ theta)
    pa, pb, pt = np.exp(a - d), np.exp(b - d), np.exp(tie_logit - d)
    ga, gb = pa + pt / 2, pb + pt / 2  # dD/da, dD/db; dD/dλ = pt
    grad = (np.bincount(i, n * ga - wij - t / 2, n_models)
            + np.bincount(j, n * gb - wji - t / 2, n_models) + prior * theta)
    if size > n_models:
        grad = np.r_[grad, (n * pt - t).sum()]
    if not hessian:
        return value, grad, None
    lam = np.full(i.shape, n_models)
    # Hessian of D: A'diag(p)A - g g' with A mapping (a, b, λ) to the three logits.
    cells = [(i, i, pa + pt / 4 - ga * ga), (j, j, pb + pt / 4 - gb * gb),
             (i, j, pt / 4 - ga * gb), (j, i, pt / 4 - ga * gb)]
    if size > n_models:
        cells += [(i, lam, pt / 2 - ga * pt), (lam, i, pt / 2 - ga * pt),
                  (j, lam, pt / 2 - gb * pt), (lam, j, pt / 2 - gb * pt),
                  (lam, lam, pt - pt * pt)]
    rows, cols, vals = (np.concatenate(parts) for parts in zip(*cells, strict=True))
    hess = np.bincount(rows * size + cols, np.tile(n, len(cells)) * vals, size * size)
    hess = hess.reshape(size, size)
    hess[np.arange(n_models), np.arange(n_models)] += prior
    return value, grad, hess


def _newton(x: np.ndarray, data: tuple, n_models: int, prior: float, total: float) -> np.ndarray:
    """Damped Newton iterations on the objective / ``total`` until the gradient vanishes."""
    for _ in range(200):
        value, grad, hess = _terms(x, data, n_models, prior)
        value, grad, hess = value / total, grad / total, hess / total
        if np.abs(grad).max() < 1e-11:
            return x
        if prior == 0:
            # θ + c has the same likelihood: adding 1·1' fixes that flat direction (the
            # gradient is orthogonal to it) so the Newton system is regular.
            hess[:n_models, :n_models] += np.trace(hess[:n_models, :n_models]) / n_models
        step = -np.linalg.solve(hess, grad)
        rate, slope = 1.0, float(grad @ step)
        # Armijo line search; the 1e-15 slack keeps rounding noise in the value from
        # rejecting the last (tiny) Newton steps.
        while (_terms(x + rate * step, data, n_models, prior, False)[0] / total
               > value + 1e-4 * rate * slope + 1e-15 * (1 + abs(value))) and rate > 1e-12:
            rate /= 2
        x = x + rate * step
    raise RuntimeError(f"fit_bradley_terry did not converge (gradient {np.abs(grad).max():.3g})")


def fit_bradley_terry(
    wins: object, ties: object | None = None, *, tie_model: str = "davidson",
    prior: float = 0.0, models: object | None = None, start: np.ndarray | None = None,
) -> BradleyTerryFit:
    """Maximum-likelihood (``prior = 0``) or MAP Bradley–Terry fit from count matrices.

    Args:
        wins: ``wins[i, j]`` = how often model i beat model j (counts may be fractional).
        ties: Symmetric ``ties[i, j]`` = how often i and j tied (default none).
        tie_model: ``"davidson"`` (estimate ν) or ``"half"`` (a tie = half a win each way).
        prior: Precision of a N(0, 1/prior) prior on each θ; 0 = plain MLE.
        models: Model names for error messages (default ``0..n-1``).
        start: Starting θ (warm start), e.g. a previous fit.

    Raises:
        ValueError: Bad matrices; with ``prior = 0`` strengths that are not finite
            (:func:`check_identifiable`); Davidson with every comparison a tie (ν = ∞).
        RuntimeError: The optimiser did not reach a zero gradient.
    """
    check_choice(tie_model, TIE_MODELS, name="tie_model")
    if not isinstance(prior, int | float) or not np.isfinite(prior) or prior < 0:
        raise ValueError(f"prior must be a number >= 0, got {prior!r}")
    w, t = _check_counts(wins, ties)
    names = np.asarray(models if models is not None else np.arange(len(w)).astype(str))
    if names.shape != (len(w),):
        raise ValueError(f"fit_bradley_terry: {len(w)} models but {names.size} names")
    if w.sum() + t.sum() == 0:
        raise ValueError("fit_bradley_terry: no comparisons (all counts are 0)")
    return _fit(w, t, tie_model, float(prior), names, start)


def _fit(w: np.ndarray, t: np.ndarray, tie_model: str, prior: float, names: np.ndarray,
         start: np.ndarray | None) -> BradleyTerryFit:
    """:func:`fit_bradley_terry` on checked count matrices."""
    if tie_model == "half":
        w, t = w + t / 2, np.zeros_like(t)
    if prior == 0:
        check_identifiable(w, t, names)
    total = float(np.triu(t).sum() + w.sum())
    share = float(np.triu(t).sum()) / total
    if share >= 1.0:
        raise ValueError("every comparison is a tie: Davidson's tie parameter ν is infinite "
                         "(use tie_model='half')")
    i, j = np.triu_indices(len(w), 1)
    keep = (w[i, j] + w[j, i] + t[i, j]) > 0
    data = (i[keep], j[keep], w[i, j][keep], w[j, i][keep], t[i, j][keep])
    x0 = np.zeros(len(w)) if start is None else np.asarray(start, dtype=float).copy()
    if share > 0:  # Davidson with ties; without ties its MLE is ν = 0, plain Bradley–Terry
        x0 = np.r_[x0, np.log(2 * share / (1 - share))]
    x = _newton(x0, data, len(w), prior, total)
    loglik = -_terms(x, data, len(w), 0.0, hessian=False)[0]
    theta = x[:len(w)] - x[:len(w)].mean()
    return BradleyTerryFit(theta, float(np.exp(x[-1])) if share > 0 else 0.0, loglik, total)


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
                       seed: int = 0) -> BradleyTerryBoot:
    """The fit of :func:`bradley_terry` and its bootstrap refits (same arguments)."""
    j = judgments(pairs, both_bad=both_bad, where="bradley_terry")
    wins, ties = count_matrices(j)
    fit = fit_bradley_terry(wins, ties, tie_model=tie_model, prior=prior, models=j.models)
    thetas, nus = _bootstrap(j, fit, tie_model, prior, check_positive_int(n_boot, name="n_boot"),
                             seed)
    return BradleyTerryBoot(j, fit, thetas, nus, tie_model)


def bradley_terry(
    pairs: pd.DataFrame, *, tie_model: str = "davidson", both_bad: str = "tie",
    prior: float = 0.0, anchor: str | None = None, base: float = 1000.0,
    n_boot: int = 1000, ci: float = 0.95, seed: int = 0,
    boot: BradleyTerryBoot | None = None,
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
            ``anchor, base, ci`` are used).

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
    if boot is None:
        boot = bradley_terry_boot(pairs, tie_model=tie_model, both_bad=both_bad, prior=prior,
                                  n_boot=n_boot, seed=seed)
    j, fit, thetas, nus = boot.judgments, boot.fit, boot.thetas, boot.nus
    if anchor is not None:
        check_choice(anchor, j.models.tolist(), name="anchor")
    ref = 0.0 if anchor is None else fit.strength[j.models.tolist().index(anchor)]
    refs = 0.0 if anchor is None else thetas[:, [j.models.tolist().index(anchor)]]
    low, high = percentile_interval(thetas, ci)
    s_low, s_high = percentile_interval(base + ELO_FACTOR * (thetas - refs), ci)
    nu_low, nu_high = percentile_interval(nus[:, None], ci)
    out = pd.DataFrame({
        "model": j.models, "strength": fit.strength, "strength_ci_low": low,
        "strength_ci_high": high, "score": base + ELO_FACTOR * (fit.strength - ref),
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
