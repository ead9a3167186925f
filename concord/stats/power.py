"""How many prompts and raters are enough? Planning by simulation from variance components.

The model of a rating (one criterion): ``y = μ_model + u_prompt + v_prompt,model + e``,
with independent normal ``u ~ N(0, σ_p²)``, ``v ~ N(0, σ_pm²)`` and rating noise
``e ~ N(0, σ_e²)``; each of the P prompts' images is rated by R raters. Targets, each for
a grid of P and R (``n_sims`` simulated studies per cell, ``default_rng((seed, P, R))``):

* ``power_diff``: share of studies in which two models ``difference`` apart differ at
  level α by the paired t-test on the per-prompt differences (the large-sample twin of
  the report's permutation test); closed form (normal approximation for a paired
  difference): ``Φ(Δ√P/σ_d − z) + Φ(−Δ√P/σ_d − z)``, ``σ_d² = 2σ_pm² + 2σ_e²/R``,
  ``z = Φ⁻¹(1 − α/2)`` (``power_diff_normal``);
* ``score_width``: width of the central ``1 − α`` range of a model's mean score over the
  simulated studies (what a calibrated interval spans); closed form
  ``2 z √((σ_p² + σ_pm² + σ_e²/R) / P)`` (``score_width_normal``);
* ``alpha_width``: the same range of Krippendorff's α (interval level) over the P × M
  images, each rated by R ≥ 2 raters (models spread ``sd_model``); ``alpha_mean`` its
  mean;
* ``power_metrics``: share of studies of P × M images in which Williams' test separates two
  metrics whose correlations with the human image scores are ``r_hx`` and ``r_hy``
  (``r_xy`` between them), at level α (trivariate normal images); correlations measured
  on image means of ``raters_measured`` raters are rescaled to R raters (attenuation).

From a pilot study the components come from its ratings (:func:`components_from_pilot`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats

from concord.stats._validate import check_fraction, check_positive_int
from concord.stats.human_vs_metric.metric_compare import williams_test

# Simulated values (studies × prompts × models × raters) drawn at once.
_BLOCK = 4_000_000
# Values a whole plan may draw (about a minute on one core).
MAX_WORK = 3_000_000_000


@dataclass(frozen=True)
class Components:
    """What a plan needs; SDs on the rating scale (see the module docstring)."""

    sd_prompt: float
    sd_prompt_model: float
    sd_rater: float
    sd_model: float
    n_models: int
    difference: float
    r_hx: float | None = None
    r_hy: float | None = None
    r_xy: float | None = None
    raters_measured: float | None = None

    def __post_init__(self) -> None:
        for name in ("sd_prompt", "sd_prompt_model", "sd_rater", "sd_model"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and np.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not (isinstance(self.difference, int | float) and np.isfinite(self.difference)):
            raise ValueError(f"difference must be a finite number, got {self.difference!r}")
        check_positive_int(self.n_models, name="n_models", minimum=2)
        given = [r for r in (self.r_hx, self.r_hy, self.r_xy) if r is not None]
        if given and len(given) != 3:
            raise ValueError("r_hx, r_hy and r_xy are needed together")
        for r in given:
            if not (isinstance(r, int | float) and -1 < r < 1):
                raise ValueError(f"correlations must lie strictly between -1 and 1, got {r!r}")
        if given and np.linalg.eigvalsh(self.correlation()).min() <= 0:
            raise ValueError(f"r_hx={self.r_hx}, r_hy={self.r_hy}, r_xy={self.r_xy} is not a "
                             "possible correlation matrix")

    def correlation(self, raters: int | None = None) -> np.ndarray:
        """The human–x–y correlation matrix; with ``raters`` and ``raters_measured``, the
        human correlations rescaled to an image mean of that many raters (attenuation:
        ``r(R) = r · √(rel(R) / rel(R₀))``, ``rel(R) = s² / (s² + σ_e² / R)`` with s² the
        variance of the images' true scores)."""
        scale = 1.0
        if raters is not None and self.raters_measured:
            true = self.sd_prompt**2 + self.sd_prompt_model**2 + self.sd_model**2
            def rel(n: float) -> float:
                return true / (true + self.sd_rater**2 / n) if true > 0 else 0.0
            base = rel(self.raters_measured)
            scale = np.sqrt(rel(raters) / base) if base > 0 else 1.0
        hx, hy = (float(np.clip(v * scale, -0.999, 0.999)) for v in (self.r_hx, self.r_hy))
        return np.array([[1, hx, hy], [hx, 1, self.r_xy], [hy, self.r_xy, 1]], dtype=float)


def components_from_pilot(ratings: pd.DataFrame, *, difference: float | None = None,
                          metrics: pd.DataFrame | None = None) -> Components:
    """Variance components of one criterion's ratings (method of moments).

    ``σ_e²``: pooled variance of the ratings of one image around its mean; from the
    image means ``ȳ_pm`` (R̄ raters on average) of prompts with every model:
    ``σ_pm² = var(residual of prompt + model effects) · PM/((P−1)(M−1)) − σ_e²/R̄``,
    ``σ_p² = var(prompt means) − (σ_pm² + σ_e²/R̄)/M`` (each floored at 0); ``sd_model``:
    SD of the model means; ``difference``: the gap between the two best models unless
    given. ``metrics`` (``human, x, y`` per image) adds the three correlations.
    """
    df = ratings.dropna(subset=["value"])
    if df.empty:
        raise ValueError("the pilot has no ratings")
    keys = ["prompt_id", "model"]
    image = df.groupby(keys, observed=True)["value"].agg(["mean", "var", "count"])
    replicated = image[image["count"] >= 2]
    sd_e = float(np.sqrt(np.average(replicated["var"], weights=replicated["count"] - 1))
                 ) if not replicated.empty else 0.0
    grid = image["mean"].unstack("model").dropna()
    if grid.shape[0] < 2 or grid.shape[1] < 2:
        raise ValueError("the pilot needs at least 2 prompts rated for every one of 2 models")
    p, m = grid.shape
    r_bar = float(image["count"].mean())
    resid = grid.to_numpy() - grid.mean(axis=1).to_numpy()[:, None] - grid.mean(
        axis=0).to_numpy()[None, :] + grid.to_numpy().mean()
    var_pm = max(float((resid**2).sum() / ((p - 1) * (m - 1))) - sd_e**2 / r_bar, 0.0)
    var_p = max(float(grid.mean(axis=1).var(ddof=1)) - (var_pm + sd_e**2 / r_bar) / m, 0.0)
    means = np.sort(grid.mean(axis=0).to_numpy())[::-1]
    corr: dict[str, float] = {}
    if metrics is not None and len(metrics) >= 4:
        c = np.corrcoef(metrics[["human", "x", "y"]].to_numpy(float).T)
        if np.isfinite(c).all():
            corr = {"r_hx": float(c[0, 1]), "r_hy": float(c[0, 2]), "r_xy": float(c[1, 2]),
                    "raters_measured": r_bar}
    return Components(float(np.sqrt(var_p)), float(np.sqrt(var_pm)), sd_e,
                      float(means.std(ddof=1)), int(m),
                      float(means[0] - means[1]) if difference is None else float(difference),
                      **corr)


def plan_table(c: Components, *, prompts: Sequence[int], raters: Sequence[int],
               alpha: float = 0.05, n_sims: int = 1000, seed: int = 0) -> pd.DataFrame:
    """One row per (raters, prompts): simulated targets and their closed forms."""
    check_fraction(alpha, name="alpha")
    n_sims = check_positive_int(n_sims, name="n_sims", minimum=2)
    work = n_sims * c.n_models * sum(p * r for p in prompts for r in raters)
    if work > MAX_WORK:
        raise ValueError(f"a plan of {n_sims:,} studies × {c.n_models} models over prompts "
                         f"{list(prompts)} and raters {list(raters)} draws {work:,.0f} values "
                         f"(limit {MAX_WORK:,}); use fewer simulations or a smaller grid")
    z = stats.norm.ppf(1 - alpha / 2)
    rows = []
    for r in sorted({check_positive_int(v, name="raters") for v in raters}):
        for p in sorted({check_positive_int(v, name="prompts", minimum=2) for v in prompts}):
            rng = np.random.default_rng((seed, p, r))
            sd_d = np.sqrt(2 * c.sd_prompt_model**2 + 2 * c.sd_rater**2 / r)
            shift = c.difference * np.sqrt(p) / sd_d if sd_d > 0 else np.inf * np.sign(
                c.difference)
            row = {"raters": r, "prompts": p, "images": p * c.n_models,
                   "power_diff": _power_diff(c, p, r, n_sims, alpha, rng),
                   "power_diff_normal": float(stats.norm.cdf(shift - z)
                                              + stats.norm.cdf(-shift - z)),
                   "score_width": _score_width(c, p, r, n_sims, alpha, rng),
                   "score_width_normal": float(2 * z * np.sqrt(
                       (c.sd_prompt**2 + c.sd_prompt_model**2 + c.sd_rater**2 / r) / p))}
            row.update(_alpha_stats(c, p, r, n_sims, alpha, rng))
            row["power_metrics"] = _power_metrics(c, p, r, n_sims, alpha, rng)
            rows.append(row)
    return pd.DataFrame(rows)


def _power_diff(c: Components, p: int, r: int, n_sims: int, alpha: float,
                rng: np.random.Generator) -> float:
    hits = 0
    step = max(1, _BLOCK // (2 * p * (r + 1)))
    for start in range(0, n_sims, step):
        k = min(step, n_sims - start)
        v = rng.normal(0, c.sd_prompt_model, (k, p, 2))
        e = rng.normal(0, c.sd_rater, (k, p, 2, r)).mean(axis=3)
        d = c.difference + (v[..., 0] - v[..., 1]) + (e[..., 0] - e[..., 1])
        sd = d.std(axis=1, ddof=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = d.mean(axis=1) / (sd / np.sqrt(p))
        pval = np.where(sd > 0, 2 * stats.t.sf(np.abs(t), p - 1),
                        np.where(d.mean(axis=1) != 0, 0.0, 1.0))
        hits += int(np.sum(pval < alpha))
    return hits / n_sims


def _score_width(c: Components, p: int, r: int, n_sims: int, alpha: float,
                 rng: np.random.Generator) -> float:
    means = []
    step = max(1, _BLOCK // (3 * p))
    for start in range(0, n_sims, step):
        k = min(step, n_sims - start)
        u = rng.normal(0, c.sd_prompt, (k, p))
        v = rng.normal(0, c.sd_prompt_model, (k, p))
        e = rng.normal(0, c.sd_rater / np.sqrt(r), (k, p))   # the mean of R ratings
        means.append((u + v + e).mean(axis=1))
    low, high = np.quantile(np.concatenate(means), [alpha / 2, 1 - alpha / 2])
    return float(high - low)


def _alpha_stats(c: Components, p: int, r: int, n_sims: int, alpha: float,
                 rng: np.random.Generator) -> dict[str, float]:
    """Krippendorff's α (interval) of simulated complete studies, in blocks of studies."""
    if r < 2:
        return {"alpha_mean": float("nan"), "alpha_width": float("nan")}
    m = c.n_models
    model = np.linspace(-1, 1, m) * c.sd_model / (np.linspace(-1, 1, m).std() or 1)
    values = []
    step = max(1, _BLOCK // (p * m * r))
    for start in range(0, n_sims, step):
        k = min(step, n_sims - start)
        truth = (model[None, None, :] + rng.normal(0, c.sd_prompt, (k, p, 1))
                 + rng.normal(0, c.sd_prompt_model, (k, p, m)))
        y = (truth[..., None] + rng.normal(0, c.sd_rater, (k, p, m, r))).reshape(k, -1, r)
        values.append(interval_alpha(y))
    a = np.concatenate(values)
    low, high = np.nanquantile(a, [alpha / 2, 1 - alpha / 2]) if np.isfinite(a).any() \
        else (np.nan, np.nan)
    return {"alpha_mean": float(np.nanmean(a)) if np.isfinite(a).any() else float("nan"),
            "alpha_width": float(high - low)}


def interval_alpha(y: np.ndarray) -> np.ndarray:
    """Krippendorff's α, interval level, of complete data ``(studies, items, raters)``:
    ``1 − (N − 1) Σ_i Σ_pairs (v − v')² / (R − 1) / Σ_all pairs (v − v')²``."""
    r = y.shape[2]
    n = y.shape[1] * r
    within = (2 * r * (y**2).sum(axis=2) - 2 * y.sum(axis=2) ** 2).sum(axis=1) / (r - 1)
    flat = y.reshape(y.shape[0], -1)
    total = 2 * n * (flat**2).sum(axis=1) - 2 * flat.sum(axis=1) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 1 - (n - 1) * within / total, np.nan)


def _power_metrics(c: Components, p: int, r: int, n_sims: int, alpha: float,
                   rng: np.random.Generator) -> float:
    if c.r_hx is None:
        return float("nan")
    n = p * c.n_models
    matrix = c.correlation(r)
    if n < 4 or np.linalg.eigvalsh(matrix).min() <= 0:
        return float("nan")
    chol = np.linalg.cholesky(matrix)
    hits = 0
    step = max(1, _BLOCK // (3 * n))
    for start in range(0, n_sims, step):
        k = min(step, n_sims - start)
        draws = rng.normal(size=(k, n, 3)) @ chol.T
        draws -= draws.mean(axis=1, keepdims=True)
        cov = np.einsum("kni,knj->kij", draws, draws)
        sd = np.sqrt(np.einsum("kii->ki", cov))
        corr = cov / (sd[:, :, None] * sd[:, None, :])
        _, pvals = williams_test(corr[:, 0, 1], corr[:, 0, 2], corr[:, 1, 2], n)
        hits += int(np.sum(pvals < alpha))
    return hits / n_sims


def needed(table: pd.DataFrame, *, power: float = 0.8, width: float | None = None,
           alpha_width: float | None = None) -> pd.DataFrame:
    """Per raters: the fewest prompts of the table reaching each target (NaN: none)."""
    check_fraction(power, name="power")
    out = []
    for r, part in table.groupby("raters", sort=True):
        part = part.sort_values("prompts")
        row = {"raters": r}
        targets = {"prompts_for_power_diff": part["power_diff"] >= power,
                   "prompts_for_power_metrics": part["power_metrics"] >= power}
        if width is not None:
            targets["prompts_for_score_width"] = part["score_width"] <= width
        if alpha_width is not None:
            targets["prompts_for_alpha_width"] = part["alpha_width"] <= alpha_width
        for name, ok in targets.items():
            row[name] = int(part.loc[ok, "prompts"].iloc[0]) if ok.any() else None
        out.append(row)
    return pd.DataFrame(out)


def with_difference(c: Components, difference: float | None) -> Components:
    """``c`` with another difference to detect (None keeps it)."""
    return c if difference is None else replace(c, difference=float(difference))
