"""Model differences over prompts, multiple-comparison adjustments and rank intervals,
each against an independent implementation (statsmodels, scipy, pandas on rebuilt
resamples)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from concord.stats import model_scores
from concord.stats._resample import bootstrap_indices
from concord.stats.differences import model_differences
from concord.stats.multiple import benjamini_hochberg, holm, min_ranks, rank_intervals


@pytest.mark.parametrize("seed", range(4))
def test_holm_and_bh_equal_statsmodels(seed):
    rng = np.random.default_rng(seed)
    p = rng.random(17) ** 3
    p[[2, 9]] = p[4]                      # tied p-values
    p[5] = 1.0
    for mine, method in ((holm, "holm"), (benjamini_hochberg, "fdr_bh")):
        ref = multipletests(p, method=method)[1]
        assert np.abs(mine(p) - ref).max() < 1e-15


def test_adjustments_leave_nan_out_of_the_family():
    p = np.array([0.01, np.nan, 0.04, 0.03])
    for mine, method in ((holm, "holm"), (benjamini_hochberg, "fdr_bh")):
        out = mine(p)
        assert np.isnan(out[1])
        assert np.allclose(out[[0, 2, 3]], multipletests(p[[0, 2, 3]], method=method)[1])
    assert np.isnan(holm([np.nan])).all() and holm([]).size == 0
    with pytest.raises(ValueError, match=r"1\.5"):
        holm([0.2, 1.5])


def test_min_ranks_equal_scipy_min_ranking_with_ties_and_nan():
    rng = np.random.default_rng(3)
    x = np.round(rng.normal(size=(50, 7)), 1)
    x[x > 1.5] = np.nan
    ranks = min_ranks(x)
    for row, got in zip(x, ranks, strict=True):
        ok = ~np.isnan(row)
        assert np.array_equal(got[ok], stats.rankdata(-row[ok], method="min"))
        assert np.isnan(got[~ok]).all()


def _frame(values: dict, raters=("r0",)) -> pd.DataFrame:
    """{(prompt, model): value} rated identically by each rater (criterion c)."""
    return pd.DataFrame([{"prompt_id": p, "model": m, "rater": r, "criterion": "c",
                          "value": v} for (p, m), v in values.items() for r in raters])


def _prompt_scores(df: pd.DataFrame) -> pd.DataFrame:
    """Independent prompt score: mean over raters per image, then per prompt × model."""
    keys = [c for c in ("prompt_id", "model", "sample") if c in df.columns]
    image = df.groupby(keys, observed=True)["value"].mean().reset_index()
    return image.groupby(["prompt_id", "model"])["value"].mean().unstack("model")


def test_point_bootstrap_and_tests_equal_independent_references(make_ratings):
    df = make_ratings(5, prompts=14, models=3, raters=3, criteria=("SC",), missing=0.15)
    out = model_differences(df, n_boot=300, n_perm=200, seed=4, by_dimension=False)
    scores = _prompt_scores(df)
    prompts = sorted(scores.index)
    idx = bootstrap_indices(len(prompts), 300, 4)
    for row in out.itertuples():
        pair = scores[[row.model_a, row.model_b]].dropna()
        d = (pair[row.model_a] - pair[row.model_b]).reindex(prompts)
        assert row.n_prompts == d.notna().sum()
        assert row.mean_diff == pytest.approx(d.mean(), abs=1e-12)
        assert row.mean_a == pytest.approx(pair[row.model_a].mean(), abs=1e-12)
        resampled = [d.to_numpy()[i] for i in idx]
        means = [np.nanmean(r) if np.isfinite(r).any() else np.nan for r in resampled]
        low, high = np.nanquantile(means, [0.025, 0.975])
        assert (row.mean_diff_ci_boot_low, row.mean_diff_ci_boot_high) == pytest.approx(
            (low, high), abs=1e-12)
        diffs = d.dropna().to_numpy()
        assert row.p_wilcoxon == pytest.approx(stats.wilcoxon(diffs).pvalue, abs=1e-12)


def test_permutation_p_is_scipys_exact_paired_test_when_all_flips_fit():
    rng = np.random.default_rng(0)
    values = {(f"p{k}", m): float(rng.integers(0, 5)) for k in range(8) for m in "abc"}
    out = model_differences(_frame(values), n_perm=2**8, by_dimension=False)
    wide = _prompt_scores(_frame(values))
    for row in out.itertuples():
        ref = stats.permutation_test(
            (wide[row.model_a].to_numpy(), wide[row.model_b].to_numpy()),
            lambda x, y: np.mean(x - y), permutation_type="samples", n_resamples=10**6)
        assert row.mean_diff_p_perm == pytest.approx(ref.pvalue, abs=1e-12)


def test_random_permutation_p_is_near_the_exact_one():
    rng = np.random.default_rng(1)
    values = {(f"p{k:02d}", m): float(rng.normal(0.3 * (m == "a"), 1))
              for k in range(40) for m in "ab"}
    row = model_differences(_frame(values), n_perm=4000, by_dimension=False).iloc[0]
    wide = _prompt_scores(_frame(values))
    ref = stats.permutation_test((wide["a"].to_numpy(), wide["b"].to_numpy()),
                                 lambda x, y: np.mean(x - y), permutation_type="samples",
                                 n_resamples=200_000, random_state=0).pvalue
    # Monte Carlo: 4000 flips give a standard error of at most 0.008.
    assert abs(row.mean_diff_p_perm - ref) < 0.035


def test_adjusted_p_values_are_per_leaderboard(make_ratings):
    df = make_ratings(2, prompts=10, models=5, raters=2, criteria=("SC", "PR"))
    out = model_differences(df, n_boot=50, n_perm=99)
    for _, fam in out.groupby(["criterion", "dimension"]):
        assert len(fam) == 10
        for col, method in (("mean_diff_p_perm", "holm"), ("p_wilcoxon", "fdr_bh")):
            suffix = "_holm" if method == "holm" else "_bh"
            assert np.allclose(fam[col + suffix], multipletests(fam[col], method=method)[1])
    assert set(out["dimension"]) == {"all", "d0", "d1"}


def test_dimension_rows_equal_a_frame_filtered_to_the_dimension(make_ratings):
    df = make_ratings(3, prompts=12, models=3, raters=2, criteria=("SC",))
    out = model_differences(df, n_boot=80, n_perm=50)
    alone = model_differences(df[df["dimension"] == "d1"], n_boot=80, n_perm=50,
                              by_dimension=False)
    got = out[out["dimension"] == "d1"].drop(columns="dimension").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, alone.drop(columns="dimension"))


def test_shapes_nobody_wrote_ties_constants_gaps_single_rater_two_models():
    # Two models, one rater, equal scores on every prompt: no difference at all.
    same = {(f"p{k}", m): 1.0 for k in range(6) for m in ("a", "b")}
    row = model_differences(_frame(same), by_dimension=False).iloc[0]
    assert row.mean_diff == 0 and row.mean_diff_p_perm == 1.0
    assert np.isnan(row.p_wilcoxon)           # no non-zero difference to rank
    assert row.mean_diff_ci_boot_low == row.mean_diff_ci_boot_high == 0
    # A model missing on most prompts, NaN values, a model with a single prompt.
    gappy = {**{(f"p{k}", "a"): float(k % 3) for k in range(9)},
             **{(f"p{k}", "b"): 1.0 for k in range(0, 9, 4)}, ("p8", "c"): 2.0}
    df = _frame(gappy, raters=("r0", "r1"))
    df.loc[0, "value"] = np.nan
    out = model_differences(df, by_dimension=False, n_boot=100, n_perm=100)
    ab = out[(out.model_a == "a") & (out.model_b == "b")].iloc[0]
    assert ab.n_prompts == 3
    bc = out[(out.model_a == "b") & (out.model_b == "c")].iloc[0]
    assert bc.n_prompts == 1 and bc.mean_diff_ci_boot_low == bc.mean_diff == -1.0
    ac = out[(out.model_a == "a") & (out.model_b == "c")].iloc[0]
    assert ac.mean_diff == pytest.approx(2.0 - 2.0)
    # One model only: no pair.
    assert model_differences(_frame({("p1", "a"): 1.0})).empty
    # Bad input names the problem.
    with pytest.raises(ValueError, match="model"):
        model_differences(_frame(same), by=("model",))
    with pytest.raises(ValueError, match="missing"):
        model_differences(_frame(same).drop(columns="rater"))


def test_many_models_are_capped_and_say_so():
    rng = np.random.default_rng(0)
    values = {(f"p{k}", f"m{m:02d}"): float(m + rng.normal()) for k in range(5)
              for m in range(12)}
    out = model_differences(_frame(values), max_models=4, by_dimension=False, n_perm=20)
    assert len(out) == 6
    assert set(out["model_a"]) | set(out["model_b"]) == {"m08", "m09", "m10", "m11"}
    assert (out["n_models"] == 12).all() and (out["n_models_compared"] == 4).all()


def test_rank_intervals_are_whole_rank_quantiles_of_rebuilt_resamples(make_ratings):
    df = make_ratings(7, prompts=10, models=4, raters=3, criteria=("SC",))
    table = model_scores(df, n_boot=200, seed=2)
    prompts = sorted(df["prompt_id"].unique())
    ranks = []
    for idx in bootstrap_indices(len(prompts), 200, 2):
        parts = [df[df["prompt_id"] == prompts[i]].assign(prompt_id=f"b{k}")
                 for k, i in enumerate(idx)]
        boot = pd.concat(parts)
        means = boot.groupby(["model", "rater"])["value"].mean().groupby("model").mean()
        ranks.append(stats.rankdata(-means.reindex(table["model"]).to_numpy(), method="min"))
    ranks = np.array(ranks)
    assert np.array_equal(table["rank_mean_rater_means_ci_boot_low"],
                          np.quantile(ranks, 0.025, axis=0, method="lower"))
    assert np.array_equal(table["rank_mean_rater_means_ci_boot_high"],
                          np.quantile(ranks, 0.975, axis=0, method="higher"))
    assert np.array_equal(table["rank_mean_rater_means"],
                          stats.rankdata(-table["mean_rater_means"], method="min"))


def test_equal_models_share_rank_one_so_neither_is_alone_on_top():
    values = {(f"p{k}", m): v for k in range(6) for m, v in (("a", 1.0), ("b", 1.0),
                                                              ("c", 0.0))}
    table = model_scores(_frame(values), n_boot=50).set_index("model")
    assert table.loc[["a", "b"], "rank_mean_rater_means"].tolist() == [1, 1]
    assert table.loc[["a", "b"], "rank_mean_rater_means_ci_boot_high"].tolist() == [1, 1]
    _, low, high = rank_intervals(np.array([1.0, np.nan]), np.array([[1.0, np.nan]] * 3), 0.95)
    assert low[0] == 1 and np.isnan(high[1])


def test_every_pair_appears_once_in_name_order(make_ratings):
    df = make_ratings(0, prompts=6, models=4, raters=1, criteria=("SC",))
    out = model_differences(df, by_dimension=False, n_perm=10, n_boot=10)
    pairs = list(zip(out["model_a"], out["model_b"], strict=True))
    assert pairs == list(itertools.combinations(sorted(df["model"].unique()), 2))
