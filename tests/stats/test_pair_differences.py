"""Pairwise and ranking data pair by pair: Bradley–Terry differences (choix refits on
rebuilt resamples) and head-to-head win rates (pandas on rebuilt resamples)."""

from __future__ import annotations

import choix
import numpy as np
import pandas as pd
import pytest

from concord.stats._resample import bootstrap_indices
from concord.stats.pairs.bradley_terry import ELO_FACTOR, bradley_terry_boot
from concord.stats.pairs.differences import bradley_terry_differences, pair_win_rates
from concord.stats.pairs.frame import count_matrices, judgments, pairs_from_rankings
from concord.stats.report.pair_sections import pair_sections
from tests.stats.pairs_helpers import davidson_pairs, pairs_frame, plackett_luce_rankings


def _choix_theta(df: pd.DataFrame, models: list[str]) -> np.ndarray:
    """Plain Bradley–Terry with ties counted half, by choix (a different algorithm)."""
    j = judgments(df, where="t")
    wins, ties = count_matrices(j)
    at = [list(j.models).index(m) for m in models]
    dense = np.zeros((len(j.models), len(j.models)))
    dense += wins + ties / 2
    theta = choix.ilsr_pairwise_dense(dense, max_iter=10_000, tol=1e-13)
    return (theta - theta.mean())[at]


def test_bradley_terry_differences_equal_choix_on_rebuilt_resamples():
    df = davidson_pairs([0.6, 0.2, -0.1, -0.7], nu=0.5, prompts=60, raters=2, seed=4)
    boot = bradley_terry_boot(df, tie_model="half", n_boot=40, seed=5)
    out = bradley_terry_differences(boot, ci=0.9)
    models = sorted(df["left_model"].unique())
    point = _choix_theta(df, models)
    prompts = np.sort(df["prompt_id"].unique())
    draws = np.array([_choix_theta(pd.concat([df[df["prompt_id"] == prompts[k]] for k in row]),
                                   models) for row in bootstrap_indices(len(prompts), 40, 5)])
    for row in out.itertuples():
        a, b = models.index(row.model_a), models.index(row.model_b)
        assert row.strength_diff == pytest.approx(point[a] - point[b], abs=1e-8)
        assert row.score_diff == pytest.approx(ELO_FACTOR * (point[a] - point[b]), abs=1e-6)
        low, high = np.quantile(draws[:, a] - draws[:, b], [0.05, 0.95])
        assert (row.strength_diff_ci_boot_low, row.strength_diff_ci_boot_high) == \
            pytest.approx((low, high), abs=1e-7)
    assert len(out) == 6 and (out["boot_undefined"] == 0).all()


def test_head_to_head_win_rates_equal_counts_on_rebuilt_resamples():
    df = davidson_pairs([0.5, 0.0, -0.5], nu=0.6, prompts=30, raters=2, seed=2,
                        both_bad_share=0.3)
    out = pair_win_rates(judgments(df, where="t"), n_boot=50, seed=7)

    def rate(frame, a, b):
        mine = frame[((frame.left_model == a) & (frame.right_model == b))
                     | ((frame.left_model == b) & (frame.right_model == a))]
        if mine.empty:
            return np.nan
        a_won = ((mine.left_model == a) & (mine.outcome == "left")) | (
            (mine.right_model == a) & (mine.outcome == "right"))
        tie = mine.outcome.isin(["tie", "both_bad"])
        return (a_won.sum() + tie.sum() / 2) / len(mine)

    prompts = np.sort(df["prompt_id"].unique())
    resamples = [pd.concat([df[df["prompt_id"] == prompts[k]] for k in row])
                 for row in bootstrap_indices(len(prompts), 50, 7)]
    for row in out.itertuples():
        assert row.win_rate_a == pytest.approx(rate(df, row.model_a, row.model_b), abs=1e-12)
        assert row.wins_a + row.wins_b + row.ties == row.n
        values = [rate(r, row.model_a, row.model_b) for r in resamples]
        low, high = np.nanquantile(values, [0.025, 0.975])
        assert (row.win_rate_a_ci_boot_low, row.win_rate_a_ci_boot_high) == \
            pytest.approx((low, high), abs=1e-12)


def test_pairs_that_never_met_and_two_model_studies():
    df = pairs_frame([("p1", "r", "a", "b", "left"), ("p2", "r", "b", "a", "tie"),
                      ("p3", "r", "c", "d", "right"), ("p3", "r", "a", "c", "left"),
                      ("p4", "r", "d", "a", "left"), ("p4", "r", "b", "c", "left"),
                      ("p5", "r", "c", "b", "left")])
    out = pair_win_rates(judgments(df, where="t"), n_boot=20)
    assert {(r.model_a, r.model_b) for r in out.itertuples()} == {
        ("a", "b"), ("c", "d"), ("a", "c"), ("a", "d"), ("b", "c")}
    ab = out[(out.model_a == "a") & (out.model_b == "b")].iloc[0]
    assert (ab.n, ab.wins_a, ab.ties, ab.win_rate_a) == (2, 1, 1, 0.75)
    two = pairs_frame([("p1", "r", "x", "y", "left"), ("p2", "r", "y", "x", "left"),
                       ("p3", "r", "x", "y", "tie")])
    diff = bradley_terry_differences(bradley_terry_boot(two, tie_model="half", n_boot=30))
    assert len(diff) == 1 and diff["strength_diff"].iloc[0] == pytest.approx(0.0, abs=1e-9)


def test_many_models_are_capped():
    df = davidson_pairs(np.linspace(1, -1, 8), prompts=200, raters=3, per_prompt=2, seed=3)
    boot = bradley_terry_boot(df, tie_model="half", n_boot=5)
    out = bradley_terry_differences(boot, max_models=3)
    assert set(out["model_a"]) | set(out["model_b"]) == {"m0", "m1", "m2"}
    assert (out["n_models"] == 8).all() and (out["n_models_compared"] == 3).all()


def test_report_sections_hold_differences_for_pairs_and_rankings():
    pairs = davidson_pairs([0.5, 0.0, -0.5], nu=0.3, prompts=30, seed=1)
    ranks = plackett_luce_rankings([0.4, 0.0, -0.4], prompts=30, seed=2)
    out = pair_sections(pairs, ranks, None, n_boot=20, seed=0, ci=0.95,
                        higher_is_better=None)
    diff = out["pairs_bradley_terry_differences"]
    assert set(zip(diff["source"], diff["tie_model"], strict=True)) == {
        ("pairs", "davidson"), ("pairs", "half"), ("rankings", "davidson"),
        ("rankings", "half")}
    table = out["pairs_bradley_terry"].set_index(["source", "tie_model", "model"])
    for row in diff.itertuples():
        a = table.loc[(row.source, row.tie_model, row.model_a), "strength"]
        b = table.loc[(row.source, row.tie_model, row.model_b), "strength"]
        assert row.strength_diff == pytest.approx(a - b, abs=1e-12)
    h2h = out["pairs_head_to_head"]
    assert set(h2h["source"]) == {"pairs", "rankings"}
    derived = pair_win_rates(judgments(pairs_from_rankings(ranks), where="t"), n_boot=20)
    got = h2h[h2h["source"] == "rankings"].drop(columns=["source", "criterion"])
    pd.testing.assert_frame_equal(got.reset_index(drop=True), derived)
