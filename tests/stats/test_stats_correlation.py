"""Item-level correlations and pairwise accuracy vs scipy, brute force and t2v_metrics."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from concord.stats import (
    correlations,
    kendall_tau_b_grouped,
    pairwise_accuracy,
    pairwise_accuracy_ignore_ties,
    tau_23,
    winoground_accuracy,
)
from concord.stats.human_vs_metric.correlation import (
    rowwise_kendall,
    rowwise_pearson,
    rowwise_spearman,
)


def _data(seed, n=60, ties=True):
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, n).astype(float)
    metric = human + rng.normal(0, 1.5, n)
    if ties:
        metric = np.round(metric)
    return human, metric


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("ties", [True, False])
def test_correlations_match_scipy(seed, ties):
    h, m = _data(seed, ties=ties)
    out = correlations(h, m)
    for name, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                     ("kendall_tau_b", stats.kendalltau)):
        ref = fn(h, m)
        assert out[name] == pytest.approx(ref.statistic, abs=1e-12)
        assert out[f"{name}_p_analytic"] == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
        assert out[f"{name}_ci_fisher_low"] < out[name] < out[f"{name}_ci_fisher_high"]
    z, half = np.arctanh(out["pearson"]), 1.959963984540054 / np.sqrt(len(h) - 3)
    assert out["pearson_ci_fisher_low"] == pytest.approx(np.tanh(z - half), abs=1e-9)
    assert out["n"] == len(h)


def test_correlations_drop_nan_pairs_and_flag_constant_input():
    h, m = _data(0)
    h2, m2 = np.r_[h, np.nan, 3.0], np.r_[m, 1.0, np.nan]
    assert correlations(h2, m2)["spearman"] == pytest.approx(stats.spearmanr(h, m).statistic)
    const = correlations(np.ones(10), np.arange(10.0))
    assert np.isnan(const["pearson"])
    assert np.isnan(const["kendall_tau_b_p_analytic"])
    with pytest.raises(ValueError, match="differ in length"):
        correlations([1, 2, 3], [1, 2])


def _brute_acc(h, m, groups=None):
    """acc_23 by trying every ε over explicit pair loops; group mean of per-group accuracy."""
    groups = np.zeros(len(h)) if groups is None else np.asarray(groups)
    pairs = [(i, j) for i in range(len(h)) for j in range(i + 1, len(h))
             if groups[i] == groups[j]]
    candidates = sorted({0.0} | {abs(m[i] - m[j]) for i, j in pairs})
    best = (-1.0, None)
    for eps in candidates:
        per_group = {}
        for i, j in pairs:
            dh, dm = h[i] - h[j], m[i] - m[j]
            ok = (dh == 0) if abs(dm) <= eps else (dh != 0 and np.sign(dh) == np.sign(dm))
            per_group.setdefault(groups[i], []).append(ok)
        acc = np.mean([np.mean(v) for v in per_group.values()])
        if acc > best[0] + 1e-12:
            best = (acc, eps)
    return best


@pytest.mark.parametrize("seed", range(3))
def test_pairwise_accuracy_matches_brute_force(seed):
    h, m = _data(seed, n=25)
    assert pairwise_accuracy(h, m) == pytest.approx(_brute_acc(h, m), abs=1e-12)
    groups = np.repeat(np.arange(5), 5)
    assert pairwise_accuracy(h, m, groups=groups) == pytest.approx(
        _brute_acc(h, m, groups), abs=1e-12)
    labels = np.array([f"prompt {g}" for g in groups])  # any hashable labels work too
    assert pairwise_accuracy(h, m, groups=labels) == pairwise_accuracy(h, m, groups=groups)
    acc, eps = pairwise_accuracy(h, m)
    assert tau_23(h, m) == pytest.approx((2 * acc - 1, eps), abs=1e-12)


def test_pairwise_accuracy_ignore_ties_counts_by_hand():
    h = np.array([1.0, 1.0, 2.0, 3.0])
    m = np.array([0.5, 0.7, 0.7, 0.1])
    # pairs: (0,1) human tie, metric not → dropped; (0,2) con; (0,3) dis; (1,2) both tie
    # → kept, not concordant; (1,3) dis; (2,3) dis → 1 / 5.
    assert pairwise_accuracy_ignore_ties(h, m) == pytest.approx(0.2)


def test_rowwise_statistics_match_scipy_per_row():
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 4, (20, 7)).astype(float), rng.normal(size=(20, 7))
    y[3] = np.round(y[3])
    for fn, ref in ((rowwise_pearson, stats.pearsonr), (rowwise_spearman, stats.spearmanr),
                    (rowwise_kendall, stats.kendalltau)):
        got = fn(x, y)
        expected = [ref(a, b).statistic if np.ptp(a) > 0 else np.nan
                    for a, b in zip(x, y, strict=True)]
        np.testing.assert_allclose(got, expected, atol=1e-12)


def test_rowwise_kendall_in_blocks_matches_scipy_and_stays_small(monkeypatch):
    """Many columns are taken a few rows at a time (the same values as scipy per row), and
    no block holds more than ``_KENDALL_BLOCK`` pair differences: 2,000 resamples of 200
    models would otherwise be 40 million at once."""
    import concord.stats.human_vs_metric.correlation as correlation

    rng = np.random.default_rng(5)
    x, y = rng.integers(0, 5, (9, 12)).astype(float), rng.normal(size=(9, 12))
    x[2] = 1.0  # a constant row: undefined
    y[4, 3] = np.nan  # a row with a missing value: undefined
    expected = [stats.kendalltau(a, b).statistic if np.ptp(a) > 0 else np.nan
                for a, b in zip(x, y, strict=True)]
    monkeypatch.setattr(correlation, "_KENDALL_BLOCK", 100)  # 66 pairs: one row a block
    np.testing.assert_allclose(rowwise_kendall(x, y), expected, atol=1e-12)
    monkeypatch.setattr(correlation, "_KENDALL_SORT_MIN", 10)  # scipy row by row
    np.testing.assert_allclose(rowwise_kendall(x, y), expected, atol=1e-12)
    monkeypatch.undo()
    seen = []
    real_sign = np.sign

    def sign(a):  # the size of every block of pair differences
        seen.append(np.asarray(a).size)
        return real_sign(a)

    monkeypatch.setattr(correlation.np, "sign", sign)
    wide = rng.normal(size=(2000, 200))
    rowwise_kendall(wide, wide[:, ::-1])
    assert seen and max(seen) <= correlation._KENDALL_BLOCK


def test_kendall_tau_b_grouped_is_mean_of_group_taus():
    h, m = _data(4, n=30)
    groups = np.repeat(["a", "b", "c"], 10)
    expected = np.mean([stats.kendalltau(h[groups == g], m[groups == g]).statistic
                        for g in "abc"])
    assert kendall_tau_b_grouped(h, m, groups) == pytest.approx(expected, abs=1e-12)


def test_winoground_accuracy_by_hand():
    scores = [[[0.9, 0.1], [0.2, 0.8]],   # text and image correct
              [[0.9, 0.1], [0.95, 0.96]],  # text correct, image wrong (caption 0)
              [[0.5, 0.5], [0.1, 0.9]]]   # text tie → wrong; image correct
    assert winoground_accuracy(scores) == pytest.approx(
        {"text": 2 / 3, "image": 2 / 3, "group": 1 / 3})
    with pytest.raises(ValueError, match=r"shape \(N, 2, 2\), got \(2, 2\)"):
        winoground_accuracy([[1, 2], [3, 4]])


@pytest.mark.shared
def test_t2v_metrics_meta_evaluation_fixture(shared):
    folder = shared / "benchmarks" / "t2v_metrics" / "fixtures"
    data = pd.read_csv(folder / "synth_human_metric.csv")
    expected = json.loads((folder / "synth_human_metric.expected.json").read_text())
    h, m = data["human"].to_numpy(), data["metric"].to_numpy()
    out = correlations(h, m)
    assert 100 * out["pearson"] == pytest.approx(expected["pearson_x100"], abs=1e-9)
    assert out["kendall_tau_b"] == pytest.approx(expected["kendall_tau_b"], abs=1e-12)
    best = expected["pairwise_acc_with_tie_optimization"]
    assert pairwise_accuracy(h, m) == pytest.approx(
        (best["best_tau"], best["best_threshold"]), abs=1e-12)
    assert pairwise_accuracy_ignore_ties(h, m) == pytest.approx(
        expected["pairwise_acc_ignore_tie"][0], abs=1e-12)
    assert tau_23(h, m) == pytest.approx(expected["tau_with_tie_optimization"], abs=1e-12)


@pytest.mark.shared
def test_t2v_metrics_grouped_and_winoground_fixture(shared):
    folder = shared / "benchmarks" / "t2v_metrics" / "fixtures"
    data = pd.read_csv(folder / "synth_human_metric.csv")
    expected = json.loads((folder / "synth_human_metric.expected.json").read_text())
    h, m = data["human"].to_numpy(), data["metric"].to_numpy()
    rows = np.repeat(np.arange(40), 5)  # the reference reshapes the 200 items to 40 × 5
    grouped = expected["grouped_40x5"]
    assert kendall_tau_b_grouped(h, m, rows) == pytest.approx(grouped["tau_b_nanmean"],
                                                              abs=1e-12)
    acc, eps = pairwise_accuracy(h, m, groups=rows)
    ref = grouped["pairwise_acc_with_tie_optimization"]
    assert acc == pytest.approx(ref["best_tau"], abs=1e-12)
    # The reference's ε lies on the same plateau (its float noise picks the other end):
    # evaluated by brute force at its ε, the accuracy is the same optimum.
    d = {(i // 5): [] for i in range(200)}
    for g in range(40):
        idx = range(5 * g, 5 * g + 5)
        for i in idx:
            for j in idx:
                if i < j:
                    dh, dm = h[i] - h[j], m[i] - m[j]
                    tie = abs(dm) <= ref["best_threshold"]
                    d[g].append(dh == 0 if tie else dh != 0 and np.sign(dh) == np.sign(dm))
    assert np.mean([np.mean(v) for v in d.values()]) == pytest.approx(acc, abs=1e-12)
    assert eps <= ref["best_threshold"]
    wino = json.loads((folder / "synth_winoground_scores.json").read_text())
    assert winoground_accuracy(wino) == pytest.approx(expected["winoground_50"], abs=1e-12)


@pytest.mark.parametrize("width", [1, 2, 8, 40])
def test_row_ranks_equal_scipy_rankdata_with_ties(width):
    from concord.stats.human_vs_metric.correlation import row_ranks

    rng = np.random.default_rng(width)
    tied = rng.integers(0, 4, (300, width)).astype(float)
    smooth = rng.random((300, width))
    for x in (tied, smooth):
        np.testing.assert_array_equal(row_ranks(x), stats.rankdata(x, axis=1))
