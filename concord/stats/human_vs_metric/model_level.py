"""Human vs metric at the model level: correlation of model scores, bootstrap CI, permutation p.

The metric's model score is the mean of its image values. The human model score is one
of the two scores of :func:`concord.stats.model_scores`: the mean of image means
(``mean_image_means``, the default: the same per-image averaging as the metric side) or
the mean of rater means (``mean_rater_means``, ImagenHub's leaderboard score).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from concord.stats._resample import (
    bootstrap_weights,
    percentile_interval,
    prompt_codes,
    ratio,
    resampled_sums,
    unit_sums,
)
from concord.stats._validate import check_positive_int, require_columns
from concord.stats.human_vs_metric.correlation import ROWWISE

STATS = ("spearman", "kendall_tau_b", "pearson")
MODEL_SCORES = ("mean_image_means", "mean_rater_means")


@dataclass(frozen=True, slots=True)
class HumanModelScores:
    """Human model scores given from outside (e.g. mean of rater means) for one items frame.

    ``models`` names the columns of ``point`` (per model) and ``samples`` (per resample ×
    model); the resamples must be those of :func:`concord.stats._resample.bootstrap_weights`
    over the same prompts as the items.
    """

    models: Sequence[object]
    point: np.ndarray
    samples: np.ndarray


class _ModelSums:
    """Per-prompt sums of human, metric and item counts per model for one items frame."""

    def __init__(self, items: pd.DataFrame) -> None:
        require_columns(items, ["prompt_id", "model", "human", "metric"], where="model_level")
        units, _ = prompt_codes(items["prompt_id"])
        model, self.models = pd.factorize(items["model"], sort=True)
        self.n_units, self.n_models = int(units.max()) + 1, int(model.max()) + 1
        shape = (units, model)
        self.human, self.counts = unit_sums(*shape, items["human"].to_numpy(float),
                                            self.n_units, self.n_models)
        self.metric, _ = unit_sums(*shape, items["metric"].to_numpy(float),
                                   self.n_units, self.n_models)
        self.n_items = len(items)

    def take(self, given: HumanModelScores) -> tuple[np.ndarray, np.ndarray]:
        """``given``'s point and samples in this frame's model order."""
        at = pd.Index(list(given.models)).get_indexer(list(self.models))
        if (at < 0).any():
            raise ValueError("model_level: human model scores lack some models of the items")
        return np.asarray(given.point)[at], np.asarray(given.samples)[:, at]


def model_level(
    items: pd.DataFrame, *, n_boot: int = 1000, n_perm: int = 1000, seed: int = 0,
    ci: float = 0.95,
) -> dict[str, float]:
    """Rank agreement of model means, with a prompt-bootstrap CI and a permutation p-value.

    Model scores are the means over each model's items of ``human`` and of ``metric``.
    The CI resamples prompts (sorted by id) with replacement, recomputes both model means
    and all correlations for every resample at once. The p-value permutes the metric's
    model means over models (``default_rng((seed, 1))``), two-sided:
    ``(1 + #{|r_perm| >= |r|}) / (1 + n_perm)``.

    Args:
        items: ``prompt_id, model, human, metric`` (one row per item; higher = better).
        n_boot: Bootstrap resamples.
        n_perm: Permutations.
        seed: Seed of the bootstrap (and, with 1, of the permutations).
        ci: Confidence level.

    Returns:
        ``<stat>, <stat>_ci_boot_low, <stat>_ci_boot_high, <stat>_p_perm`` for Spearman,
        Kendall τ_b and Pearson, plus ``n`` (models), ``n_prompts`` and ``n_items``.
    """
    return model_level_many([items], n_boot=n_boot, n_perm=n_perm, seed=seed, ci=ci)[0]


def model_level_many(
    frames: Sequence[pd.DataFrame], *, n_boot: int = 1000, n_perm: int = 1000,
    seed: int = 0, ci: float = 0.95,
    human: Sequence[HumanModelScores | None] | None = None,
) -> list[dict[str, float]]:
    """:func:`model_level` of several items frames, each exactly as if alone.

    Frames with the same number of prompts share the resampling matrix, so their
    bootstraps run as ONE matrix product (reading that matrix is the dominant cost).
    ``human[k]``, when given, replaces frame k's human model means (point and resamples).
    """
    n_boot = check_positive_int(n_boot, name="n_boot")
    n_perm = check_positive_int(n_perm, name="n_perm")
    sums = [_ModelSums(f) for f in frames]
    given = list(human) if human is not None else [None] * len(frames)
    by_size: dict[int, list[int]] = {}
    for k, s in enumerate(sums):
        by_size.setdefault(s.n_units, []).append(k)
    boots: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for n_units, ks in by_size.items():
        stacked = np.hstack([m for k in ks
                             for m in (sums[k].human, sums[k].metric, sums[k].counts)])
        product = resampled_sums(bootstrap_weights(n_units, n_boot, seed), stacked)
        start = 0
        for k in ks:
            width = sums[k].n_models
            h, m, c = (product[:, start + j * width:start + (j + 1) * width] for j in range(3))
            point = sums[k].human.sum(0) / sums[k].counts.sum(0)
            hb = ratio(h, c)
            if given[k] is not None:
                point, hb = sums[k].take(given[k])
            boots[k] = (point, hb, ratio(m, c))
            start += 3 * width
    return [_model_stats(s, *boots[k], n_perm=n_perm, seed=seed, ci=ci)
            for k, s in enumerate(sums)]


def _model_stats(s: _ModelSums, h: np.ndarray, hb: np.ndarray, mb: np.ndarray, *,
                 n_perm: int, seed: int, ci: float) -> dict[str, float]:
    m = s.metric.sum(0) / s.counts.sum(0)
    rng = np.random.default_rng((seed, 1))
    perm = rng.permuted(np.tile(np.arange(s.n_models), (n_perm, 1)), axis=1)
    out: dict[str, float] = {"n": s.n_models, "n_prompts": s.n_units, "n_items": s.n_items}
    defined = s.n_models >= 3
    for name in STATS:
        fn = ROWWISE[name]
        r = float(fn(h[None, :], m[None, :])[0]) if defined else float("nan")
        low, high = percentile_interval(fn(hb, mb)[:, None], ci)
        null = fn(np.broadcast_to(h, perm.shape), m[perm])
        p = (1 + np.sum(np.abs(null) >= abs(r) - 1e-12)) / (1 + n_perm)
        out.update({name: r, f"{name}_ci_boot_low": float(low[0]) if defined else np.nan,
                    f"{name}_ci_boot_high": float(high[0]) if defined else np.nan,
                    f"{name}_p_perm": float(p) if np.isfinite(r) else np.nan})
    return out
