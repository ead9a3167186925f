"""Metric against metric: Williams' test (Steiger 1980's formula written here, and the
worked example of Howell's textbook), the statistics against scipy, the paired bootstrap
against rebuilt resamples, the swap permutation test against its exact distribution."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from concord.stats._resample import bootstrap_indices
from concord.stats.human_vs_metric import metric_swap
from concord.stats.human_vs_metric.metric_compare import metric_comparisons, williams_test
from concord.stats.human_vs_metric.table import join_sources


def steiger_williams(r12, r13, r23, n):
    """Williams' T2 as Steiger (1980, eq. 7) prints it, via the determinant of R."""
    big_r = np.linalg.det(np.array([[1, r12, r13], [r12, 1, r23], [r13, r23, 1]]))
    rbar = (r12 + r13) / 2
    t = (r12 - r13) * np.sqrt(((n - 1) * (1 + r23))
                              / (2 * (n - 1) / (n - 3) * big_r + rbar**2 * (1 - r23) ** 3))
    return t, 2 * stats.t.sf(abs(t), n - 3)


def test_williams_reproduces_the_published_example_and_the_formula():
    t, p = williams_test(0.80, 0.72, 0.89, 26)          # Howell (2007), p. 262
    assert round(t, 3) == 1.361 and round(p, 3) == 0.187
    rng = np.random.default_rng(0)
    for _ in range(20):
        data = rng.normal(size=(40, 3)) @ rng.normal(size=(3, 3))
        r = np.corrcoef(data.T)
        n = int(rng.integers(5, 200))
        assert williams_test(r[0, 1], r[0, 2], r[1, 2], n) == pytest.approx(
            steiger_williams(r[0, 1], r[0, 2], r[1, 2], n), rel=1e-10)
    assert np.isnan(williams_test(0.5, 0.4, 0.3, 3)[1])


def _study(seed=0, prompts=12, models=4, raters=2, noise=(0.5, 1.5), missing=0.0):
    """Ratings and two metrics (x less noisy than y) of prompts × models images."""
    rng = np.random.default_rng(seed)
    rows, scores = [], []
    for p in range(prompts):
        for m in range(models):
            latent = m * 0.3 + rng.normal()
            for r in range(raters):
                rows.append({"prompt_id": f"p{p:02d}", "model": f"m{m}", "rater": f"r{r}",
                             "criterion": "SC", "dimension": f"d{p % 2}",
                             "value": float(np.clip(np.round(latent + rng.normal()), -1, 2))})
            for metric, sd in zip(("x", "y"), noise, strict=True):
                if rng.random() >= missing:
                    scores.append({"prompt_id": f"p{p:02d}", "model": f"m{m}", "metric": metric,
                                   "judge": "", "value": latent + rng.normal(0, sd),
                                   "dimension": f"d{p % 2}"})
    return pd.DataFrame(rows), pd.DataFrame(scores)


def _reference(items: pd.DataFrame) -> dict:
    """Every statistic of both metrics by scipy / plain loops, from an items frame."""
    out = {}
    means = items.groupby("model")[["h", "x", "y"]].mean()
    for name, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                     ("kendall_tau_b", stats.kendalltau)):
        out[("model", name)] = tuple(fn(means["h"], means[v]).statistic for v in "xy")
    out[("item", "pearson")] = tuple(stats.pearsonr(items["h"], items[v]).statistic
                                     for v in "xy")
    for v in "xy":
        taus, rhos, hits, decisive = [], [], 0.0, 0
        for _, g in items.groupby("unit"):
            h, m = g["h"].to_numpy(), g[v].to_numpy()
            if len(g) >= 2 and np.ptp(h) > 0 and np.ptp(m) > 0:
                taus.append(stats.kendalltau(h, m).statistic)
                rhos.append(stats.spearmanr(h, m).statistic)
            for i, j in itertools.combinations(range(len(g)), 2):
                if h[i] != h[j]:
                    decisive += 1
                    sm = np.sign(m[i] - m[j])
                    hits += 1.0 if sm == np.sign(h[i] - h[j]) else 0.5 if sm == 0 else 0.0
        for key, value in ((("item", "kendall_tau_b_within_prompt"), np.mean(taus)),
                           (("item", "spearman_within_prompt"), np.mean(rhos)),
                           (("item", "pair_accuracy_within_prompt"), hits / decisive)):
            out.setdefault(key, []).append(value)
    return {k: tuple(v) for k, v in out.items()}


def _items(ratings, scores):
    h = ratings.groupby(["prompt_id", "model"])["value"].mean().rename("h")
    wide = scores.pivot_table(index=["prompt_id", "model"], columns="metric", values="value")
    items = pd.concat([h, wide], axis=1, join="inner").dropna().reset_index()
    items["unit"] = items["prompt_id"]
    return items


def test_values_bootstrap_and_williams_equal_independent_references():
    ratings, scores = _study(1, prompts=10, missing=0.1)
    out = metric_comparisons(join_sources(scores, ratings=ratings), n_boot=40, n_perm=20,
                             seed=2)
    out = out[out["dimension"] == "all"].set_index(["level", "statistic"])
    items = _items(ratings, scores)
    ref = _reference(items)
    prompts = sorted(items["prompt_id"].unique())
    draws = [_reference(pd.concat([items[items.prompt_id == prompts[i]].assign(unit=k)
                                   for k, i in enumerate(idx)]))
             for idx in bootstrap_indices(len(prompts), 40, 2)]
    for key, (vx, vy) in ref.items():
        row = out.loc[key]
        assert (row["value_a"], row["value_b"]) == pytest.approx((vx, vy), abs=1e-10), key
        diffs = np.array([d[key][0] - d[key][1] for d in draws])
        low, high = np.nanquantile(diffs, [0.025, 0.975])
        assert (row["diff_ci_boot_low"], row["diff_ci_boot_high"]) == pytest.approx(
            (low, high), abs=1e-10), key
    xy = np.corrcoef(items["x"], items["y"])[0, 1]
    expect = williams_test(ref[("item", "pearson")][0], ref[("item", "pearson")][1], xy,
                           len(items))[1]
    assert out.loc[("item", "pearson"), "diff_p_williams"] == pytest.approx(expect, rel=1e-9)
    assert np.isnan(out.loc[("item", "spearman_within_prompt"), "diff_p_williams"])


def _exact_swap_p(items: pd.DataFrame) -> dict:
    """The swap test by enumeration of every assignment (each image: swap or not)."""
    x, y = items["x"].to_numpy(), items["y"].to_numpy()
    x, y = (x - x.mean()) / x.std(), (y - y.mean()) / y.std()

    def diffs(frame):
        return {k: abs(v[0] - v[1]) for k, v in _reference(frame).items()}

    observed = diffs(items.assign(x=x, y=y))
    null = [diffs(items.assign(x=np.where(s, y, x), y=np.where(s, x, y)))
            for s in map(np.array, itertools.product([False, True], repeat=len(items)))]
    return {k: float(np.mean(np.nan_to_num([n[k] for n in null], nan=np.inf)
                             >= observed[k] * (1 - 1e-12))) for k in observed}


@pytest.mark.parametrize("table_max", [metric_swap.TABLE_MAX_ITEMS, 1])
def test_swap_permutation_p_approaches_the_exact_permutation_distribution(monkeypatch,
                                                                         table_max):
    # 2 prompts × 4 images: 256 swap assignments; 2,000 random swaps estimate each p
    # within a standard error of at most 0.011. table_max = 1 takes the path that draws
    # each swap (prompts too large for a table).
    monkeypatch.setattr("concord.stats.human_vs_metric.metric_pair.TABLE_MAX_ITEMS", table_max)
    ratings, scores = _study(3, prompts=2, models=4, raters=3, noise=(0.4, 0.9))
    out = metric_comparisons(join_sources(scores, ratings=ratings), n_boot=5, n_perm=2000,
                             seed=1, max_metrics=2)
    out = out[out["dimension"] == "all"].set_index(["level", "statistic"])
    exact = _exact_swap_p(_items(ratings, scores))
    for key, p in exact.items():
        assert abs(out.loc[key, "diff_p_perm"] - p) < 0.05, (key, p)


def test_adjustment_families_and_metric_cap():
    ratings, scores = _study(4, prompts=8)
    extra = scores[scores.metric == "x"].assign(metric="z", value=lambda d: d.value * 2 + 1)
    scores = pd.concat([scores, extra, scores[scores.metric == "y"].assign(metric="w")])
    out = metric_comparisons(join_sources(scores, ratings=ratings), n_boot=10, n_perm=30)
    assert len({(r.metric_a, r.metric_b) for r in out.itertuples()}) == 6
    from statsmodels.stats.multitest import multipletests
    for _, fam in out.groupby(["human", "dimension", "level", "statistic"]):
        assert np.allclose(fam["diff_p_perm_holm"], multipletests(fam["diff_p_perm"],
                                                                  method="holm")[1])
    # z = 2x + 1 has every statistic of x: no difference at all.
    same = out[(out.metric_a == "x") & (out.metric_b == "z") & (out.dimension == "all")]
    assert np.allclose(same["diff"], 0, atol=1e-12) and (same["diff_p_perm"] == 1).all()
    capped = metric_comparisons(join_sources(scores, ratings=ratings), n_boot=5, n_perm=5,
                                max_metrics=2)
    assert (capped["n_metrics"] == 4).all() and (capped["n_metrics_compared"] == 2).all()
    assert len({(r.metric_a, r.metric_b) for r in capped.itertuples()}) == 1


def test_shapes_nobody_wrote():
    ratings, scores = _study(5, prompts=6, models=2, raters=1)
    scores.loc[scores.index[:3], "value"] = np.nan           # NaN metric values
    out = metric_comparisons(join_sources(scores, ratings=ratings), n_boot=10, n_perm=10)
    model = out[out.level == "model"]
    assert model["value_a"].isna().all() and model["diff_p_perm"].isna().all()  # 2 models
    assert out[out.level == "item"]["value_a"].notna().any()
    constant = scores.assign(value=np.where(scores.metric == "y", 1.0, scores.value))
    out = metric_comparisons(join_sources(constant, ratings=ratings), n_boot=10, n_perm=10)
    accuracy = out["statistic"] == "pair_accuracy_within_prompt"
    assert out.loc[~accuracy, "value_b"].isna().all()
    assert out.loc[~accuracy, "diff_p_perm"].isna().all()
    assert (out.loc[accuracy, "value_b"] == 0.5).all()     # a constant metric ties every pair
    single = scores[scores.metric == "x"]
    assert metric_comparisons(join_sources(single, ratings=ratings)).empty
    # One image per prompt: nothing within prompts, the pooled Pearson still there.
    lone = scores[scores.model == "m0"]
    out = metric_comparisons(join_sources(lone, ratings=ratings[ratings.model == "m0"]),
                             n_boot=10, n_perm=10).set_index(["dimension", "statistic"])
    assert np.isnan(out.loc[("all", "kendall_tau_b_within_prompt"), "value_a"]).all()
    assert np.isfinite(out.loc[("all", "pearson"), "value_a"]).any()


@pytest.mark.parametrize("k", [5, 40, 300])
def test_within_prompt_statistics_of_any_size_equal_scipy(k):
    # 5: pair signs; 40: pair signs in chunks; 300: scipy's sort-based τ_b per row.
    rng = np.random.default_rng(k)
    h = np.round(rng.normal(size=(6, k)) * 2) / 2            # many human ties
    m = np.round(rng.normal(size=(6, k)) * 4) / 4            # some metric ties
    m[0] = 1.0                                                # a constant metric
    got = metric_swap.within_stats(h, m)
    for row in range(6):
        if np.ptp(m[row]) == 0:
            assert np.isnan(got["kendall_tau_b"][row]) and np.isnan(got["spearman"][row])
        else:
            assert got["kendall_tau_b"][row] == pytest.approx(
                stats.kendalltau(h[row], m[row]).statistic, abs=1e-9)
            assert got["spearman"][row] == pytest.approx(
                stats.spearmanr(h[row], m[row]).statistic, abs=1e-9)
        i, j = np.triu_indices(k, 1)
        sh, sm = np.sign(h[row, i] - h[row, j]), np.sign(m[row, i] - m[row, j])
        hits = ((sh != 0) & (sm == sh)).sum() + 0.5 * ((sh != 0) & (sm == 0)).sum()
        assert got["hits"][row] == pytest.approx(hits, abs=1e-6)


@pytest.mark.parametrize("k", [3, 12, 260])
def test_drawn_swaps_equal_the_statistics_of_the_swapped_values(k):
    rng = np.random.default_rng(k)
    h, x, y = (np.round(rng.normal(size=(4, k)) * 3) / 3 for _ in range(3))
    bits = rng.random((4, 5, k)) < 0.5
    first, second = metric_swap.swapped_within(h, x, y, bits)
    for p in range(4):
        for r in range(5):
            xs = np.where(bits[p, r], y[p], x[p])
            ys = np.where(bits[p, r], x[p], y[p])
            for got, values in ((first, xs), (second, ys)):
                ref = metric_swap.within_stats(h[p:p + 1], values[None, :])
                for name in ("kendall_tau_b", "spearman", "hits"):
                    assert got[name][p, r] == pytest.approx(ref[name][0], abs=1e-9,
                                                            nan_ok=True)
