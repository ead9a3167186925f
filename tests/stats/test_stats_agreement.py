"""Inter-rater agreement against krippendorff, statsmodels, scipy and hand formulas."""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats import inter_rater

from concord.stats import (
    agreement_table,
    fleiss_kappa,
    gold_accuracy,
    kendalls_w,
    krippendorff_alpha,
    leave_one_out,
    leave_one_out_table,
    mean_pairwise_spearman,
    rating_matrix,
)

LEVELS = ("nominal", "ordinal", "interval")


def _random_matrix(seed, raters=4, items=30, missing=0.2, values=(0, 0.5, 1, 2)):
    rng = np.random.default_rng(seed)
    data = rng.choice(values, size=(raters, items)).astype(float)
    data[rng.random(data.shape) < missing] = np.nan
    return data


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("level", LEVELS)
def test_alpha_matches_krippendorff_package(seed, level):
    data = _random_matrix(seed)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level=level) == pytest.approx(expected, abs=1e-12)


def test_alpha_hand_example_with_ties_and_missing():
    # Krippendorff's textbook example: 4 coders, 12 units, values 1..5 with gaps.
    nan = np.nan
    data = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
                     [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
                     [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
                     [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]])
    assert krippendorff_alpha(data, level="nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(data, level="interval") == pytest.approx(0.849, abs=5e-4)
    for level in LEVELS:
        ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert krippendorff_alpha(data, level=level) == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("data", [
    np.zeros((3, 6)),                          # a single category (ImagenHub's Imagic SC)
    np.array([[0.0, 1.0, 0.5]]),               # one rater
    np.array([[0.0, np.nan], [np.nan, 1.0]]),  # no item rated twice
])
def test_undefined_agreement_is_nan_not_zero_or_one(data):
    for level in LEVELS:
        assert np.isnan(krippendorff_alpha(data, level=level))
    assert np.isnan(fleiss_kappa(data))
    assert np.isnan(mean_pairwise_spearman(data))


@pytest.mark.parametrize("seed", range(4))
def test_fleiss_matches_statsmodels_on_complete_data(seed):
    data = _random_matrix(seed, raters=5, items=40, missing=0.0)
    table, _ = inter_rater.aggregate_raters(data.T)
    expected = inter_rater.fleiss_kappa(table, method="fleiss")
    assert fleiss_kappa(data) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("missing", [0.15, 0.4])
def test_fleiss_with_missing_uses_items_rated_by_the_modal_number_of_raters(missing):
    data = _random_matrix(7, raters=4, items=60, missing=missing)
    n = (~np.isnan(data)).sum(axis=0)
    counts = pd.Series(n[n >= 2]).value_counts()
    modal = max(k for k, v in counts.items() if v == counts.max())
    rows = [np.sort(col[~np.isnan(col)]) for col in data.T if (~np.isnan(col)).sum() == modal]
    table, _ = inter_rater.aggregate_raters(np.array(rows))
    expected = inter_rater.fleiss_kappa(table, method="fleiss")
    assert fleiss_kappa(data) == pytest.approx(expected, abs=1e-12)


def test_fleiss_modal_raters_by_hand():
    nan = np.nan
    # Items 0-2 have 2 ratings (the mode), item 3 has 3: only items 0-2 count.
    data = np.array([[0, 1, 1, 0], [0, 1, 0, 1], [nan, nan, nan, 1.0]])
    table = np.array([[2, 0], [0, 2], [1, 1]])
    expected = inter_rater.fleiss_kappa(table, method="fleiss")
    assert fleiss_kappa(data) == pytest.approx(expected, abs=1e-12)
    # A tie between counts goes to the larger count (items rated by 3 raters).
    tie = np.array([[0, 1, 1, 0], [0, 1, 0, 1], [nan, nan, 1, 1.0]])
    expected = inter_rater.fleiss_kappa(np.array([[1, 2], [1, 2]]), method="fleiss")
    assert fleiss_kappa(tie) == pytest.approx(expected, abs=1e-12)


def _hand_w(ranks: np.ndarray) -> float:
    """Kendall's W with tie correction written out with loops."""
    m, n = ranks.shape
    r = np.array([stats.rankdata(row) for row in ranks])
    totals = [sum(r[j, i] for j in range(m)) for i in range(n)]
    mean = m * (n + 1) / 2
    s = sum((t - mean) ** 2 for t in totals)
    ties = 0.0
    for row in ranks:
        for value in set(row.tolist()):
            t = int((row == value).sum())
            ties += t**3 - t
    return 12 * s / (m**2 * (n**3 - n) - m * ties)


def test_kendalls_w_without_ties_relates_to_mean_spearman():
    rng = np.random.default_rng(0)
    m, n = 5, 8
    ranks = np.array([rng.permutation(n) + 1 for _ in range(m)], dtype=float)
    w = kendalls_w(ranks)
    rho = np.mean([stats.spearmanr(ranks[a], ranks[b]).statistic
                   for a, b in itertools.combinations(range(m), 2)])
    assert rho == pytest.approx((m * w - 1) / (m - 1), abs=1e-12)
    assert w == pytest.approx(_hand_w(ranks), abs=1e-12)


def test_kendalls_w_with_ties_matches_hand_formula_and_extremes():
    ranks = np.array([[1, 1, 3, 4, 5], [2, 1, 3, 3, 5], [1, 2, 3, 4, 5]], dtype=float)
    assert kendalls_w(ranks) == pytest.approx(_hand_w(ranks), abs=1e-12)
    assert kendalls_w(np.array([[1, 2, 3], [1, 2, 3]])) == pytest.approx(1.0)
    assert kendalls_w(np.array([[1, 2, 3], [3, 2, 1]])) == pytest.approx(0.0)
    assert np.isnan(kendalls_w(np.array([[1, 2, 3]])))
    assert np.isnan(kendalls_w(np.ones((3, 4))))
    with pytest.raises(ValueError, match="complete"):
        kendalls_w(np.array([[1, np.nan], [1, 2]]))


def _pairwise_spearman_loop(data):
    rhos = []
    for a, b in itertools.combinations(range(data.shape[0]), 2):
        both = ~np.isnan(data[a]) & ~np.isnan(data[b])
        if both.sum() >= 3 and np.ptp(data[a, both]) > 0 and np.ptp(data[b, both]) > 0:
            rhos.append(stats.spearmanr(data[a, both], data[b, both]).statistic)
    return np.mean(rhos)


@pytest.mark.parametrize("missing", [0.0, 0.25])
def test_mean_pairwise_spearman_matches_scipy_pairs(missing):
    data = _random_matrix(3, raters=5, items=40, missing=missing)
    assert mean_pairwise_spearman(data) == pytest.approx(_pairwise_spearman_loop(data),
                                                         abs=1e-12)


@pytest.mark.parametrize("block", [10**9, 5])  # one block; a rater or two a block
def test_mean_pairwise_spearman_of_a_sparse_crowd_matrix(monkeypatch, block):
    """Many raters, each rating a few of the items: only raters sharing items are paired
    (in blocks of bounded size), with the same mean as every pair compared by scipy."""
    import concord.stats.agreement.entries as entries

    monkeypatch.setattr(entries, "PAIR_BLOCK", block)
    rng = np.random.default_rng(4)
    data = np.full((30, 60), np.nan)
    for item in range(60):  # each item rated by 4 of the 30 raters
        data[rng.choice(30, 4, replace=False), item] = rng.choice([0, 0.5, 1, 2], 4)
    data[:3, :20] = rng.choice([0, 1, 2], (3, 20))  # three raters share 20 items
    expected = _pairwise_spearman_loop(data)
    assert np.isfinite(expected)
    assert mean_pairwise_spearman(data) == pytest.approx(expected, abs=1e-12)
    assert np.isnan(mean_pairwise_spearman(np.full((5, 4), np.nan)))


@pytest.mark.parametrize("missing", [0.0, 0.25])
def test_leave_one_out_matches_scipy(missing):
    data = _random_matrix(9, raters=4, items=30, missing=missing)
    out = leave_one_out(pd.DataFrame(data, index=["a", "b", "c", "d"]))
    assert out["rater"].tolist() == ["a", "b", "c", "d"]
    for r in range(4):
        others = np.delete(data, r, axis=0)
        rest = np.nanmean(np.where(np.isnan(others), np.nan, others), axis=0)
        mask = ~np.isnan(data[r]) & ~np.isnan(rest)
        assert out["n_items"][r] == mask.sum()
        assert out["spearman"][r] == pytest.approx(
            stats.spearmanr(data[r, mask], rest[mask]).statistic, abs=1e-12)
        assert out["pearson"][r] == pytest.approx(
            stats.pearsonr(data[r, mask], rest[mask]).statistic, abs=1e-12)


def test_agreement_table_equals_matrix_functions(make_ratings):
    df = make_ratings(4, prompts=20, raters=4, missing=0.1)
    table = agreement_table(df, by=("model", "criterion"))
    assert len(table) == df.groupby(["model", "criterion"]).ngroups
    for row in table.itertuples():
        part = df[(df["model"] == row.model) & (df["criterion"] == row.criterion)]
        matrix = rating_matrix(part).to_numpy()
        for level in LEVELS:
            expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
            assert getattr(row, f"alpha_{level}") == pytest.approx(expected, abs=1e-12)
        assert row.fleiss_kappa == pytest.approx(fleiss_kappa(matrix), abs=1e-12, nan_ok=True)
        assert row.mean_spearman == pytest.approx(_pairwise_spearman_loop(matrix), abs=1e-12)
        assert (row.n_raters, row.n_items, row.n_ratings) == (*matrix.shape, len(part))


def test_rater_quality_per_criterion(make_ratings):
    df = make_ratings(6, raters=4)
    out = leave_one_out_table(df)
    assert sorted(out["criterion"].unique()) == ["PR", "SC"]
    sc = rating_matrix(df[df["criterion"] == "SC"])
    expected = leave_one_out(sc)
    got = out[out["criterion"] == "SC"].reset_index(drop=True)
    np.testing.assert_allclose(got["spearman"], expected["spearman"], atol=1e-12)


def test_rating_matrix_refuses_mixed_criteria(ratings):
    with pytest.raises(ValueError, match="rated an item twice; select one criterion"):
        rating_matrix(ratings)
    matrix = rating_matrix(ratings[ratings["criterion"] == "SC"])
    assert matrix.shape == (3, 48)


def test_agreement_table_refuses_duplicates_in_a_group(ratings):
    with pytest.raises(ValueError, match="rated the same item twice in group"):
        agreement_table(ratings, by=("model",))


def test_gold_accuracy_counts_within_tolerance():
    ratings = pd.DataFrame({"image_id": [1, 1, 2, 2, 3], "criterion": "SC",
                            "rater": ["a", "b", "a", "b", "a"],
                            "value": [1.0, 0.5, 0.0, 0.3, 1.0]})
    gold = pd.DataFrame({"image_id": [1, 2], "criterion": "SC", "expected": [1.0, 0.0],
                         "tolerance": [0.0, 0.3]})
    out = gold_accuracy(ratings, gold).set_index("rater")
    assert out.loc["a", ["n_gold", "n_correct", "accuracy"]].tolist() == [2, 2, 1.0]
    assert out.loc["b", ["n_gold", "n_correct", "accuracy"]].tolist() == [2, 1, 0.5]
    with pytest.raises(ValueError, match="tolerance must be >= 0"):
        gold_accuracy(ratings, gold.assign(tolerance=[-1.0, 0.0]))
    with pytest.raises(ValueError, match=r"missing column\(s\) \['expected'\]"):
        gold_accuracy(ratings, gold.drop(columns="expected"))
