"""Win rates, the win matrix and left/right bias of the Pairs frame.

References: hand-made cases, resampled frames rebuilt from the bootstrap indices and
scipy.stats.binomtest.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from concord.stats._resample import bootstrap_indices
from concord.stats.pairs.frame import pairs_from_rankings
from concord.stats.pairs.pairwise import pair_position_bias, win_matrix, win_rates
from tests.stats.pairs_helpers import davidson_pairs, pairs_frame, plackett_luce_rankings

THETA = np.array([0.9, 0.4, 0.0, -0.5, -0.8])


def hand_pairs() -> pd.DataFrame:
    return pairs_frame([
        ("p1", "r1", "x", "y", "left"), ("p1", "r2", "y", "x", "left"),
        ("p1", "r3", "x", "z", "tie"), ("p2", "r1", "z", "x", "both_bad"),
        ("p2", "r2", "y", "z", "right"), ("p2", "r3", "x", "y", "left")])


def test_win_rates_hand_case():
    out = win_rates(hand_pairs(), n_boot=10).set_index("model")
    # x: beat y twice, lost to y once, tied z, both-bad with z → 2 wins, 1 loss, 2 ties of 5.
    assert out.loc["x", ["n", "wins", "losses", "ties", "both_bad"]].tolist() == [5, 2, 1, 2, 1]
    assert out.loc["x", "win_rate"] == pytest.approx(3 / 5)
    assert out.loc["x", "tie_rate"] == pytest.approx(2 / 5)
    assert out.loc["x", "decisive_win_rate"] == pytest.approx(2 / 3)
    # z: tie, both-bad, a win over y → (1 + 1) / 3.
    assert out.loc["z", "win_rate"] == pytest.approx(2 / 3)
    assert out.index.tolist() == ["z", "x", "y"]
    excluded = win_rates(hand_pairs(), both_bad="exclude", n_boot=10).set_index("model")
    assert excluded.loc["x", ["n", "ties", "both_bad"]].tolist() == [4, 1, 1]
    assert excluded.loc["z", "win_rate"] == pytest.approx(1.5 / 2)


def test_win_rate_interval_is_the_prompt_bootstrap():
    df = davidson_pairs(THETA[:3], nu=0.5, prompts=25, raters=2, seed=1)
    out = win_rates(df, n_boot=40, seed=7, ci=0.9).set_index("model")
    prompts = np.sort(df["prompt_id"].unique())
    samples = []
    for row in bootstrap_indices(len(prompts), 40, 7):
        resample = pd.concat([df[df["prompt_id"] == prompts[k]] for k in row])
        samples.append(win_rates(resample, n_boot=1).set_index("model")["win_rate"])
    ref = pd.concat(samples, axis=1).reindex(out.index)
    low, high = np.nanquantile(ref.to_numpy(), [0.05, 0.95], axis=1)
    assert np.allclose(out["win_rate_ci_low"], low) and np.allclose(out["win_rate_ci_high"], high)


def test_win_matrix_values():
    df = hand_pairs()
    rate = win_matrix(df)
    assert rate.loc["x", "y"] == pytest.approx(2 / 3) and rate.loc["y", "x"] == pytest.approx(1 / 3)
    assert rate.loc["x", "z"] == 0.5 and np.isnan(rate.loc["x", "x"])
    assert win_matrix(df, value="n").loc["x", "z"] == 2
    assert win_matrix(df, value="wins").loc["z", "y"] == 1
    assert win_matrix(df, value="ties", both_bad="exclude").loc["z", "x"] == 1
    big = win_matrix(davidson_pairs(THETA, nu=0.4, prompts=50, seed=2))
    off = ~np.eye(5, dtype=bool)
    assert np.allclose((big + big.T).to_numpy()[off], 1.0)
    with pytest.raises(ValueError, match=r"value must be one of .* got 'rate'"):
        win_matrix(df, value="rate")


def test_position_bias_matches_binomtest():
    df = davidson_pairs(THETA, nu=0.3, prompts=300, seed=3, left_bias=0.5)
    out = pair_position_bias(df, ci=0.9).iloc[0]
    left = int((df["outcome"] == "left").sum())
    decisive = left + int((df["outcome"] == "right").sum())
    test = stats.binomtest(left, decisive, p=0.5)
    interval = test.proportion_ci(confidence_level=0.9)
    assert out["left_wins"] == left and out["n_decisive"] == decisive
    assert out["p_value"] == test.pvalue and out["p_value"] < 1e-3
    assert (out["ci_low"], out["ci_high"]) == (interval.low, interval.high)
    assert out["tie_share"] == pytest.approx(1 - decisive / len(df))
    wilson = pair_position_bias(df, method="wilson").iloc[0]
    ref = test.proportion_ci(confidence_level=0.95, method="wilson")
    assert (wilson["ci_low"], wilson["ci_high"]) == (ref.low, ref.high)


def test_position_bias_per_rater_and_without_decisive_judgments():
    df = hand_pairs().assign(outcome=["left", "tie", "right", "left", "tie", "left"])
    out = pair_position_bias(df, by=["rater"]).set_index("rater")
    assert out.loc["r1", ["left_wins", "n_decisive"]].tolist() == [2, 2]
    assert np.isnan(out.loc["r2", "left_share"]) and np.isnan(out.loc["r2", "p_value"])
    assert out.loc["r3", "left_share"] == 0.5
    no_bias = pair_position_bias(davidson_pairs(THETA, prompts=300, seed=4)).iloc[0]
    assert no_bias["ci_low"] < 0.5 < no_bias["ci_high"]
    with pytest.raises(ValueError, match=r"missing column\(s\) \['batch'\]"):
        pair_position_bias(df, by=["batch"])
    with pytest.raises(ValueError, match="method must be one of"):
        pair_position_bias(df, method="wald")


def test_derived_pairs_show_slot_bias_as_left_bias():
    theta = np.zeros(4)
    df = plackett_luce_rankings(theta, prompts=300, seed=3)
    first = df["position"] == 0
    # Move the image in slot 0 to rank 1 in a third of the rankings: a first-slot bias.
    boost = first & (df["prompt_id"].str[-1].isin(["0", "3", "6"]))
    groups = df.loc[boost, ["prompt_id", "rater"]].apply(tuple, axis=1)
    hit = df[["prompt_id", "rater"]].apply(tuple, axis=1).isin(set(groups))
    df.loc[hit, "rank"] = df.loc[hit, "rank"] + 1
    df.loc[boost, "rank"] = 1
    bias = pair_position_bias(pairs_from_rankings(df)).iloc[0]
    assert bias["left_share"] > 0.5 and bias["p_value"] < 0.01


def test_position_bias_keeps_rows_whose_group_value_is_empty():
    df = hand_pairs().assign(batch=["a", None, "a", None, "a", "a"])
    out = pair_position_bias(df, by=["batch"])
    assert out["n_judgments"].tolist() == [4, 2]
