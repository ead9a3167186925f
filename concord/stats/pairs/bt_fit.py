"""The Bradley–Terry fit itself: maximum likelihood of strengths (and Davidson's tie
parameter) from win and tie counts, by Newton's method (the model and the objective are
in :mod:`concord.stats.pairs.bradley_terry`, which builds the tables and intervals on it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from concord.stats._validate import check_choice

TIE_MODELS = ("davidson", "half")


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
