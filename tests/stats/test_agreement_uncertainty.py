"""Uncertainty on agreement: prompt-bootstrap intervals of α and Fleiss' κ (krippendorff,
statsmodels on rebuilt resamples), ICC(2,1)/ICC(2,k) (pingouin), weighted κ
(scikit-learn) and Kendall's W with its χ² test (scipy's Friedman test, pingouin)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats import inter_rater

from concord.stats._resample import bootstrap_indices
from concord.stats.agreement.entries import Entries
from concord.stats.agreement.frames import agreement_table, rating_matrix
from concord.stats.agreement.reliability import icc2, weighted_kappa
from concord.stats.rankings import kendalls_w_by_prompt

LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _resampled(df: pd.DataFrame, idx: np.ndarray) -> pd.DataFrame:
    """The ratings of drawn prompts, each draw a new prompt (its images new items)."""
    prompts = sorted(df["prompt_id"].unique())
    parts = [df[df["prompt_id"] == prompts[i]].assign(prompt_id=f"draw{k:03d}")
             for k, i in enumerate(idx)]
    return pd.concat(parts, ignore_index=True)


def _reference(df: pd.DataFrame, domain: np.ndarray) -> dict[str, float]:
    matrix = rating_matrix(df).to_numpy()
    out = {}
    for level in LEVELS:
        with np.errstate(all="ignore"):
            out[level] = krippendorff.alpha(reliability_data=matrix, value_domain=domain,
                                            level_of_measurement=level)
    items = matrix.T
    n = (~np.isnan(items)).sum(axis=1)
    sizes, freq = np.unique(n[n >= 2], return_counts=True)
    modal = sizes[freq == freq.max()].max()
    keep = np.sort(items[n == modal], axis=1)[:, :modal]
    table, _ = inter_rater.aggregate_raters(keep, n_cat=None)
    cats = np.unique(keep)
    full = np.zeros((len(keep), len(domain)))
    full[:, np.searchsorted(domain, cats)] = table
    with np.errstate(all="ignore"):
        out["kappa"] = (inter_rater.fleiss_kappa(full) if (full.sum(0) > 0).sum() >= 2
                        else np.nan)
    return out


@pytest.mark.parametrize("missing", [0.0, 0.25])
def test_bootstrap_intervals_equal_quantiles_of_rebuilt_resamples(make_ratings, missing):
    df = make_ratings(4, prompts=9, models=2, raters=4, criteria=("SC",),
                      levels=(0.0, 0.5, 1.0, 2.0), missing=missing)
    row = agreement_table(df, levels=LEVELS, n_boot=60, seed=3).iloc[0]
    domain = np.sort(df["value"].unique())
    refs = [_reference(_resampled(df, idx), domain) for idx in bootstrap_indices(9, 60, 3)]
    for key, name in [*((lv, f"alpha_{lv}") for lv in LEVELS), ("kappa", "fleiss_kappa")]:
        values = np.array([r[key] for r in refs], dtype=float)
        low, high = np.nanquantile(values, [0.025, 0.975])
        assert row[f"{name}_ci_boot_low"] == pytest.approx(low, abs=1e-10), name
        assert row[f"{name}_ci_boot_high"] == pytest.approx(high, abs=1e-10), name


def test_intervals_are_undefined_where_the_statistic_is(make_ratings):
    df = make_ratings(1, prompts=6, models=2, raters=1, criteria=("SC",))
    one = agreement_table(df, n_boot=20).iloc[0]
    assert np.isnan(one["alpha_ordinal_ci_boot_low"]) and np.isnan(one["fleiss_kappa_ci_boot_high"])
    constant = make_ratings(1, prompts=6, models=2, raters=3, criteria=("SC",)).assign(value=1.0)
    row = agreement_table(constant, n_boot=20).iloc[0]
    assert np.isnan(row["alpha_nominal"]) and np.isnan(row["alpha_nominal_ci_boot_low"])
    assert np.isnan(row["icc2_1"]) and np.isnan(row["fleiss_kappa_ci_boot_low"])


def test_many_distinct_values_leave_the_ordinal_interval_undefined():
    rng = np.random.default_rng(0)
    rows = [{"prompt_id": f"p{p}", "model": "m", "rater": f"r{r}", "criterion": "x",
             "value": float(rng.integers(0, 1000))} for p in range(60) for r in range(2)]
    row = agreement_table(pd.DataFrame(rows), n_boot=10).iloc[0]
    assert np.isnan(row["alpha_ordinal_ci_boot_low"])
    assert np.isfinite(row["alpha_interval_ci_boot_low"]) and np.isfinite(row["alpha_ordinal"])


def _long(matrix: np.ndarray) -> pd.DataFrame:
    raters, items = np.nonzero(~np.isnan(matrix))
    return pd.DataFrame({"item": items, "rater": raters, "value": matrix[raters, items]})


@pytest.mark.parametrize("seed", range(5))
def test_icc_equals_pingouin_icc2_and_icc2k(seed):
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(2, 6)), int(rng.integers(5, 30))
    matrix = rng.normal(size=(1, n)) * 2 + rng.normal(size=(k, 1)) + rng.normal(size=(k, n))
    matrix = np.round(matrix, int(rng.integers(0, 3)))
    if seed % 2:
        matrix[rng.random(matrix.shape) < 0.1] = np.nan   # incomplete items are left out
    mine = icc2(Entries.from_matrix(matrix))
    ref = pingouin.intraclass_corr(_long(matrix), targets="item", raters="rater",
                                   ratings="value", nan_policy="omit").set_index("Type")
    assert mine["icc_n_items"] == np.isfinite(matrix).all(axis=0).sum()
    for name, kind in (("icc2_1", "ICC(A,1)"), ("icc2_k", "ICC(A,k)")):
        assert mine[name] == pytest.approx(ref.loc[kind, "ICC"], abs=1e-10)
        low, high = ref.loc[kind, "CI95"]
        assert (mine[f"{name}_ci_f_low"], mine[f"{name}_ci_f_high"]) == pytest.approx(
            (low, high), abs=0.006)       # pingouin rounds its interval to 2 decimals
    assert mine["icc2_p_f"] == pytest.approx(ref.loc["ICC(A,1)", "pval"], rel=1e-8, abs=1e-300)


def test_icc_of_exact_agreement_is_one_and_of_nothing_nan():
    same = np.tile(np.arange(6.0), (3, 1))
    assert icc2(Entries.from_matrix(same))["icc2_1"] == pytest.approx(1.0)
    assert np.isnan(icc2(Entries.from_matrix(np.ones((3, 6))))["icc2_1"])
    assert np.isnan(icc2(Entries.from_matrix(same[:1]))["icc2_k"])         # one rater
    sparse = np.full((3, 6), np.nan)
    sparse[[0, 1, 2], [0, 1, 2]] = 1.0                                       # crowd-like
    assert icc2(Entries.from_matrix(sparse))["icc_n_items"] == 0


@pytest.mark.parametrize("seed", range(6))
def test_weighted_kappa_equals_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    levels = np.array([0.0, 0.5, 1.0, 2.0, 3.0])[: int(rng.integers(2, 6))]
    matrix = levels[rng.integers(0, len(levels), size=(2, 40))]
    agree = rng.random(40) < 0.4
    matrix[1, agree] = matrix[0, agree]
    matrix[rng.random(matrix.shape) < 0.15] = np.nan
    mine = weighted_kappa(Entries.from_matrix(matrix))
    both = ~np.isnan(matrix).any(axis=0)
    a, b = matrix[0, both], matrix[1, both]
    assert mine["kappa_n_items"] == both.sum()
    for weights in ("linear", "quadratic"):
        ref = cohen_kappa_score((2 * a).astype(int), (2 * b).astype(int), weights=weights)
        assert mine[f"kappa_{weights}"] == pytest.approx(ref, abs=1e-12)


def test_weighted_kappa_needs_exactly_two_raters_and_two_categories():
    three = np.array([[0, 1, 2.0], [1, 1, 2], [0, 2, 2]])
    assert np.isnan(weighted_kappa(Entries.from_matrix(three))["kappa_linear"])
    flat = np.ones((2, 5))
    assert np.isnan(weighted_kappa(Entries.from_matrix(flat))["kappa_quadratic"])


def _rankings(seed: int, prompts: int, raters: int, models: int, ties: bool) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(prompts):
        for r in range(raters):
            score = np.arange(models) + rng.normal(0, 1.5, models)
            if ties:
                score = np.round(score / 2)
            rank = stats.rankdata(-score, method="min")
            rows += [{"prompt_id": f"p{p}", "rater": f"r{r}", "criterion": "overall",
                      "model": f"m{m}", "rank": float(rank[m])} for m in range(models)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("models", "ties"), [(4, False), (5, True), (3, True)])
def test_kendalls_w_chi2_is_friedmans_test(models, ties):
    df = _rankings(1, prompts=6, raters=4, models=models, ties=ties)
    out = kendalls_w_by_prompt(df).set_index("prompt_id")
    for prompt, part in df.groupby("prompt_id"):
        wide = part.pivot(index="rater", columns="model", values="rank")
        ref = stats.friedmanchisquare(*wide.to_numpy().T)
        row = out.loc[prompt]
        assert row["chi2"] == pytest.approx(ref.statistic, rel=1e-10)
        assert row["chi2_p_analytic"] == pytest.approx(ref.pvalue, rel=1e-8)
        assert row["dof"] == models - 1


def test_kendalls_w_of_two_models_equals_pingouin():
    df = _rankings(2, prompts=4, raters=5, models=2, ties=False)
    out = kendalls_w_by_prompt(df).set_index("prompt_id")
    for prompt, part in df.groupby("prompt_id"):
        ref = pingouin.friedman(part, dv="rank", within="model", subject="rater")
        assert out.loc[prompt, "w"] == pytest.approx(ref["W"].iloc[0], abs=1e-12)
        assert out.loc[prompt, "chi2_p_analytic"] == pytest.approx(ref["p_unc"].iloc[0],
                                                                   rel=1e-8)
