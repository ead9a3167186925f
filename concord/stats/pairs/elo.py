"""Online Elo ratings of the models of a Pairs frame, for comparison with arena leaderboards.

Every model starts at ``initial``; the judgments are replayed one at a time, and after a
judgment between ``a`` (left) and ``b`` (right)::

    E_a = 1 / (1 + base^((R_b − R_a) / scale)),  S_a = 1 (left won), 0 (right won), ½ (tie)
    R_a ← R_a + K (S_a − E_a),                   R_b ← R_b − K (S_a − E_a)

(arena defaults: K = 4, scale 400, base 10, initial 1000). Online Elo depends on the order
of the judgments. Two conventions, named by method:

- :func:`elo_online` — the arenas' **online Elo**: one pass over the votes in time order
  (``created_at``), with a bootstrap over votes (resampled with replacement, replayed in
  time order) for its interval;
- :func:`elo_ratings` — the **mean over random orders** (``elo_perm_mean`` in the report):
  averaged over ``n_perm`` random orders, an order-free summary.

Arena leaderboards have since moved to Bradley–Terry maximum likelihood
(:func:`concord.stats.pairs.bradley_terry.bradley_terry`, whose ``score`` is on the same
400-points-per-factor-10 scale); Elo is here to compare with older published numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._validate import check_positive_int
from concord.stats.pairs.frame import judgments

# Bounded memory: at most this many (order × judgment) indices are held at once.
_MAX_CELLS = 4_000_000


def _positive(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a number > 0, got {value!r}")
    return float(value)


def elo_ratings(
    pairs: pd.DataFrame, *, k: float = 4.0, initial: float = 1000.0, scale: float = 400.0,
    n_perm: int | None = 100, seed: int = 0, both_bad: str = "tie", base: float = 10.0,
) -> pd.DataFrame:
    """Online Elo ratings, averaged over random orders of the judgments.

    Args:
        pairs: Pairs frame (``prompt_id, rater, left_model, right_model, outcome``).
        k: Update step K (4 as in the LMSYS/GenAI arenas' Elo; 16–32 suits small studies).
        initial: Starting rating of every model.
        scale: Rating difference at which the expected score is ``base``:1 (400).
        n_perm: Number of random orders (``numpy.random.default_rng(seed).permutation`` of
            the rows, one after another); ``None`` replays the frame's row order once.
        seed: Seed of the orders.
        both_bad: ``"tie"`` or ``"exclude"``.
        base: Odds per ``scale`` points (10).

    Returns:
        One row per model, best first: ``model, elo`` (mean over orders), ``elo_sd`` (std
        over orders, ddof 0; 0 for one order), ``n_comparisons``, ``n_orders``.

    Raises:
        ValueError: A bad Pairs frame or a non-positive ``k``, ``scale`` or ``n_perm``.
    """
    j = judgments(pairs, both_bad=both_bad, where="elo_ratings")
    k, scale, base = _checked(k, scale, base, initial)
    scale = scale / np.log10(base)  # base^(d / scale) = 10^(d / (scale / log10 base))
    n = len(j.credit)
    if n_perm is None:
        ratings = _replay(j.left, j.right, j.credit, np.arange(n)[None, :], len(j.models), k,
                          scale)
    else:
        n_perm = check_positive_int(n_perm, name="n_perm")
        rng = np.random.default_rng(seed)
        chunk = max(1, _MAX_CELLS // n)
        # Orders are drawn chunk by chunk in sequence: the same orders whatever the chunk.
        ratings = np.vstack([
            _replay(j.left, j.right, j.credit,
                    np.stack([rng.permutation(n) for _ in range(min(chunk, n_perm - s))]),
                    len(j.models), k, scale)
            for s in range(0, n_perm, chunk)])
    out = pd.DataFrame({"model": j.models, "elo": initial + ratings.mean(axis=0),
                        "elo_sd": ratings.std(axis=0),
                        "n_comparisons": np.bincount(np.r_[j.left, j.right],
                                                     minlength=len(j.models)),
                        "n_orders": len(ratings)})
    return out.sort_values(["elo", "model"], ascending=[False, True], ignore_index=True)


def elo_online(
    pairs: pd.DataFrame, *, k: float = 4.0, initial: float = 1000.0, scale: float = 400.0,
    base: float = 10.0, n_boot: int = 0, ci: float = 0.95, seed: int = 0,
    both_bad: str = "tie",
) -> pd.DataFrame:
    """The arenas' online Elo: one pass over the votes in time order.

    Args:
        pairs: Pairs frame; with ``created_at`` the votes are replayed in that order (rows
            with the same time, or a frame without the column: in row order).
        k, initial, scale, base: As :func:`elo_ratings` (arena defaults).
        n_boot: Bootstrap resamples of the votes (with replacement, each replayed in time
            order); 0: no interval.
        ci, seed: Interval level and seed of the resamples.
        both_bad: ``"tie"`` or ``"exclude"``.

    Returns:
        One row per model, best first: ``model, elo, elo_ci_low, elo_ci_high`` (NaN without
        resamples), ``n_comparisons``, ``n_boot``.

    Raises:
        ValueError: A bad Pairs frame or argument.
    """
    from concord.stats._resample import percentile_interval
    from concord.stats._validate import check_fraction

    j = judgments(pairs, both_bad=both_bad, where="elo_online")
    k, scale, base = _checked(k, scale, base, initial)
    scale = scale / np.log10(base)
    check_fraction(ci, name="ci")
    order = _time_order(j.frame)
    left, right, credit = j.left[order], j.right[order], j.credit[order]
    n, n_models = len(order), len(j.models)
    point = _replay(left, right, credit, np.arange(n)[None, :], n_models, k, scale)[0]
    low = high = np.full(n_models, np.nan)
    if n_boot:
        n_boot = check_positive_int(n_boot, name="n_boot")
        rng = np.random.default_rng(seed)
        chunk = max(1, _MAX_CELLS // max(n, 1))
        boots = np.vstack([  # sorted draws: each resample replays in time order
            _replay(left, right, credit,
                    np.sort(rng.integers(0, n, size=(min(chunk, n_boot - s), n)), axis=1),
                    n_models, k, scale)
            for s in range(0, n_boot, chunk)])
        low, high = percentile_interval(initial + boots, ci)
    out = pd.DataFrame({"model": j.models, "elo": initial + point, "elo_ci_low": low,
                        "elo_ci_high": high,
                        "n_comparisons": np.bincount(np.r_[j.left, j.right],
                                                     minlength=n_models),
                        "n_boot": int(n_boot)})
    return out.sort_values(["elo", "model"], ascending=[False, True], ignore_index=True)


def _time_order(frame: pd.DataFrame) -> np.ndarray:
    """Positions of the rows in time order (``created_at``; stable), else row order."""
    if "created_at" not in frame.columns:
        return np.arange(len(frame))
    when = pd.to_datetime(frame["created_at"], utc=True, errors="coerce", format="ISO8601")
    if when.isna().any():
        raise ValueError("elo_online: created_at must be a time on every row (ISO 8601), got "
                         f"{frame['created_at'][when.isna()].iloc[0]!r}")
    return np.argsort(when.to_numpy(), kind="stable")


def _checked(k: object, scale: object, base: object,
             initial: object) -> tuple[float, float, float]:
    k, scale, base = _positive(k, "k"), _positive(scale, "scale"), _positive(base, "base")
    if base == 1.0:
        raise ValueError("base must not be 1 (every rating difference would be even odds)")
    if isinstance(initial, bool) or not isinstance(initial, int | float) \
            or not np.isfinite(initial):
        raise ValueError(f"initial must be a finite number, got {initial!r}")
    return k, scale, base


def _replay(left: np.ndarray, right: np.ndarray, credit: np.ndarray, orders: np.ndarray,
            n_models: int, k: float, scale: float) -> np.ndarray:
    """Ratings minus ``initial`` after replaying each row of ``orders`` (all at once)."""
    ratings = np.zeros((len(orders), n_models))
    rows = np.arange(len(orders))
    for step in range(orders.shape[1]):
        idx = orders[:, step]
        a, b = left[idx], right[idx]
        expected = 1.0 / (1.0 + 10.0 ** ((ratings[rows, b] - ratings[rows, a]) / scale))
        delta = k * (credit[idx] - expected)
        ratings[rows, a] += delta
        ratings[rows, b] -= delta
    return ratings
