"""Rater agreement on pairs and the metric's pairwise accuracy against human judgments.

References: the krippendorff package, hand-made cases and a plain Python loop.
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest

from concord.stats.pairs.agreement import metric_pair_accuracy, oriented_pairs, pair_agreement
from tests.stats.pairs_helpers import davidson_pairs, pairs_frame

THETA = np.array([0.9, 0.4, 0.0, -0.5, -0.8])


def hand_pairs() -> pd.DataFrame:
    return pairs_frame([
        ("p1", "r1", "x", "y", "left"), ("p1", "r2", "y", "x", "left"),
        ("p1", "r3", "x", "z", "tie"), ("p2", "r1", "z", "x", "both_bad"),
        ("p2", "r2", "y", "z", "right"), ("p2", "r3", "x", "y", "left")])


def test_orientation_makes_mirrored_judgments_equal():
    df = pairs_frame([("p", "r1", "x", "y", "left"), ("p", "r2", "y", "x", "right"),
                      ("p", "r3", "y", "x", "left"), ("p", "r4", "x", "y", "both_bad")])
    out = oriented_pairs(df, both_bad="category")
    assert out[["model_a", "model_b"]].drop_duplicates().values.tolist() == [["x", "y"]]
    assert out["pair_outcome"].tolist() == ["a", "a", "b", "both_bad"]
    assert oriented_pairs(df)["pair_outcome"].tolist()[-1] == "tie"
    assert len(oriented_pairs(df, both_bad="exclude")) == 3


def krippendorff_reference(df, both_bad="tie"):
    o = oriented_pairs(df, both_bad=both_bad)
    item = o["prompt_id"] + "|" + o["model_a"] + "|" + o["model_b"]
    code = o["pair_outcome"].map({"a": 0, "b": 1, "tie": 2, "both_bad": 3})
    matrix = pd.DataFrame({"rater": o["rater"], "item": item, "code": code}).pivot(
        index="rater", columns="item", values="code")
    return krippendorff.alpha(reliability_data=matrix.to_numpy(dtype=float),
                              level_of_measurement="nominal")


@pytest.mark.parametrize("both_bad", ["tie", "category", "exclude"])
def test_pair_agreement_matches_krippendorff(both_bad):
    rng = np.random.default_rng(5)
    df = davidson_pairs(THETA, nu=0.8, prompts=40, raters=4, seed=6, both_bad_share=0.4)
    # Same pairs for every rater of a prompt, some judgments missing.
    first = df[df["rater"] == "r0"].set_index("prompt_id")[["left_model", "right_model"]]
    df[["left_model", "right_model"]] = first.loc[df["prompt_id"]].to_numpy()
    swap = rng.random(len(df)) < 0.5  # shown mirrored to half the raters
    df.loc[swap, ["left_model", "right_model"]] = df.loc[swap, ["right_model",
                                                               "left_model"]].to_numpy()
    df = df.drop(columns=["left_image_id", "right_image_id"])[rng.random(len(df)) > 0.15]
    out = pair_agreement(df, both_bad=both_bad).iloc[0]
    assert out["study"] == "s"
    assert out["alpha_nominal"] == pytest.approx(krippendorff_reference(df, both_bad), abs=1e-12)


def test_pair_agreement_hand_case():
    df = pairs_frame([
        ("p1", "r1", "x", "y", "left"), ("p1", "r2", "y", "x", "right"),
        ("p1", "r3", "x", "y", "tie"),                     # item 1: a, a, tie → 1 of 3 pairs
        ("p2", "r1", "x", "y", "right"), ("p2", "r2", "x", "y", "right"),  # item 2: agree
        ("p3", "r1", "x", "y", "left")])                    # judged once: not counted
    out = pair_agreement(df).iloc[0]
    assert out["percent_agreement"] == pytest.approx((1 / 3 + 1) / 2)
    assert out[["n_items", "n_raters", "n_judgments"]].tolist() == [2, 3, 6]
    assert out["alpha_nominal"] == pytest.approx(krippendorff_reference(df), abs=1e-12)
    perfect = pair_agreement(df.iloc[3:5]).iloc[0]
    assert np.isnan(perfect["alpha_nominal"]) and perfect["percent_agreement"] == 1.0
    assert np.isnan(pair_agreement(df.iloc[5:]).iloc[0]["percent_agreement"])


def test_pair_agreement_per_study_and_duplicates():
    df = pd.concat([hand_pairs().assign(study="a"), hand_pairs().assign(study="b")])
    assert pair_agreement(df)["study"].tolist() == ["a", "b"]
    dup = pd.concat([hand_pairs(), hand_pairs().iloc[[1]].assign(
        left_model="x", right_model="y", outcome="right")])
    with pytest.raises(ValueError, match="rows share a key"):
        pair_agreement(dup)


def test_metric_pair_accuracy_hand_case():
    pairs = pairs_frame([("p1", "r1", "x", "y", "left"), ("p1", "r2", "y", "x", "left"),
                         ("p1", "r3", "x", "z", "right"), ("p2", "r1", "x", "y", "left"),
                         ("p2", "r1", "x", "z", "tie"), ("p3", "r1", "x", "y", "left")])
    scores = pd.DataFrame({"prompt_id": ["p1", "p1", "p1", "p2", "p2"],
                           "model": ["x", "y", "z", "x", "y"],
                           "value": [0.9, 0.5, 0.9, 0.3, 0.3]})
    out = metric_pair_accuracy(pairs, scores, n_boot=50)
    # p1: x>y agrees, y>x disagrees, z>x is a metric tie; p2: x>y metric tie; p3 unscored.
    assert out["accuracy"] == pytest.approx((1 + 0 + 0.5 + 0.5) / 4)
    assert (out["n_pairs"], out["n_agree"], out["n_disagree"], out["n_metric_ties"]) == (
        4, 1, 1, 2)
    assert (out["n_unscored"], out["n_not_decisive"], out["metric_tie_share"]) == (1, 1, 0.5)
    lower = metric_pair_accuracy(pairs, scores, higher_is_better=False, n_boot=50)
    assert lower["accuracy"] == pytest.approx((0 + 1 + 0.5 + 0.5) / 4)
    loose = metric_pair_accuracy(pairs, scores.assign(value=[0.9, 0.5, 0.95, 0.3, 0.3]),
                                 tie_tolerance=0.1, n_boot=50)
    assert loose["n_metric_ties"] == 2


def test_metric_pair_accuracy_by_image_matches_a_loop():
    df = davidson_pairs(THETA, nu=0.4, prompts=60, seed=7)
    rng = np.random.default_rng(8)
    ids = np.unique(np.r_[df["left_image_id"], df["right_image_id"]])
    value = dict(zip(ids, THETA[ids % 100] + rng.normal(0, 0.3, len(ids)), strict=True))
    scores = pd.DataFrame({"image_id": ids, "value": [value[i] for i in ids]})
    out = metric_pair_accuracy(df, scores, n_boot=200)
    credit = [1.0 if (value[r.left_image_id] > value[r.right_image_id]) == (r.outcome == "left")
              else 0.0 for r in df.itertuples() if r.outcome in ("left", "right")]
    assert out["accuracy"] == pytest.approx(np.mean(credit))
    assert out["ci_low"] < out["accuracy"] < out["ci_high"]
    assert out["accuracy"] > 0.6


def test_metric_pair_accuracy_bad_scores():
    pairs = hand_pairs()
    with pytest.raises(ValueError, match=r"missing column\(s\) \['value'\]"):
        metric_pair_accuracy(pairs, pd.DataFrame({"prompt_id": ["p1"], "model": ["x"]}))
    dup = pd.DataFrame({"prompt_id": ["p1", "p1"], "model": ["x", "x"], "value": [1, 2]})
    with pytest.raises(ValueError, match="rows share a key"):
        metric_pair_accuracy(pairs, dup)
    bad = pd.DataFrame({"prompt_id": ["p1"], "model": ["x"], "value": ["high"]})
    with pytest.raises(ValueError, match="non-numeric value 'high'"):
        metric_pair_accuracy(pairs, bad)
    with pytest.raises(ValueError, match="tie_tolerance must be a number >= 0, got -1"):
        metric_pair_accuracy(pairs, dup.iloc[:1], tie_tolerance=-1)
    with pytest.raises(ValueError, match="empty"):
        metric_pair_accuracy(pairs, dup.iloc[:0])
