"""The Pairs frame: its encoding, and pairs derived from rankings (one BT scale for both)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from concord.stats.pairs.frame import check_pairs, judgments, pairs_from_rankings
from tests.stats.pairs_helpers import pairs_frame, plackett_luce_rankings


def test_check_pairs_refuses_a_non_frame():
    with pytest.raises(TypeError, match="list"):
        check_pairs([("p1", "r1", "x", "y", "left")])


def test_both_bad_option_is_checked_and_exclude_may_leave_nothing():
    df = pairs_frame([("p1", "r1", "x", "y", "both_bad"), ("p2", "r1", "y", "x", "both_bad")])
    with pytest.raises(ValueError, match=r"both_bad must be one of .* got 'drop'"):
        judgments(df, both_bad="drop", where="t")
    with pytest.raises(ValueError, match="every judgment is 'both_bad'"):
        judgments(df, both_bad="exclude", where="t")


def test_judgments_encode_credit_and_both_bad():
    df = pairs_frame([("p2", "r", "b", "a", "left"), ("p1", "r", "a", "c", "right"),
                      ("p1", "r", "c", "b", "tie"), ("p1", "r", "a", "b", "both_bad")])
    j = judgments(df, where="t")
    assert j.models.tolist() == ["a", "b", "c"]
    assert j.left.tolist() == [1, 0, 2, 0] and j.right.tolist() == [0, 2, 1, 1]
    assert j.credit.tolist() == [1.0, 0.0, 0.5, 0.5]
    assert j.both_bad.tolist() == [False, False, False, True]
    assert j.prompts.tolist() == ["p1", "p2"] and j.prompt.tolist() == [1, 0, 0, 0]
    assert len(judgments(df, both_bad="exclude", where="t").credit) == 3


def ranking(rows, **extra):
    df = pd.DataFrame(rows, columns=["prompt_id", "rater", "model", "rank", "position"])
    return df.assign(criterion="overall", **extra)


def test_pairs_from_rankings_hand_case():
    # One rater ranked x=1, y=2, z=2 (a tie), shown in slots z, x, y.
    df = ranking([("p", "r", "x", 1, 1), ("p", "r", "y", 2, 2), ("p", "r", "z", 2, 0)])
    out = pairs_from_rankings(df)
    got = set(zip(out["left_model"], out["right_model"], out["outcome"], strict=True))
    # Left = the earlier slot: z (slot 0) before x and y, x (slot 1) before y.
    assert got == {("z", "x", "right"), ("z", "y", "tie"), ("x", "y", "left")}
    assert (out["criterion"] == "overall").all()
    check_pairs(out)


def test_pairs_from_rankings_without_positions_orders_by_name_and_keeps_columns():
    df = ranking([("p", "r", "y", 1, 0), ("p", "r", "x", 2, 1)]).drop(columns="position")
    df = df.assign(study="s", dimension="d", image_id=[7, 8])
    out = pairs_from_rankings(df)
    assert out[["left_model", "right_model", "outcome"]].values.tolist() == [["x", "y", "right"]]
    assert out[["study", "dimension", "left_image_id", "right_image_id"]].values.tolist() == [
        ["s", "d", 8, 7]]


def test_pairs_from_rankings_counts_every_pair_of_every_ranking():
    df = plackett_luce_rankings(np.zeros(5), prompts=7, raters=3)
    out = pairs_from_rankings(df)
    assert len(out) == 7 * 3 * 10
    assert not out.duplicated(["prompt_id", "rater", "left_model", "right_model"]).any()
    # Each derived pair agrees with the ranks it came from.
    ranks = df.set_index(["prompt_id", "rater", "model"])["rank"]
    for row in out.sample(20, random_state=0).itertuples():
        rl = ranks[(row.prompt_id, row.rater, row.left_model)]
        rr = ranks[(row.prompt_id, row.rater, row.right_model)]
        assert row.outcome == ("left" if rl < rr else "right")


def test_pairs_from_rankings_criteria():
    df = pd.concat([ranking([("p", "r", "x", 1, 0), ("p", "r", "y", 2, 1)]),
                    ranking([("p", "r", "x", 2, 0), ("p", "r", "y", 1, 1)]).assign(
                        criterion="SC")])
    with pytest.raises(ValueError, match=r"several criteria \['SC', 'overall'\]"):
        pairs_from_rankings(df)
    assert pairs_from_rankings(df, criterion="SC")["outcome"].tolist() == ["right"]
    with pytest.raises(ValueError, match=r"criterion must be one of .* got 'PR'"):
        pairs_from_rankings(df, criterion="PR")


@pytest.mark.parametrize(("change", "message"), [
    ({"rank": [1, 0]}, "rank 0 in row 1 is not a number >= 1"),
    ({"rank": [1, "first"]}, "non-numeric value 'first'"),
    ({"model": ["x", "x"]}, "rows share a key"),
    ({"position": [0, None]}, "column 'position' is empty in row 1"),
])
def test_pairs_from_rankings_bad_input(change, message):
    df = ranking([("p", "r", "x", 1, 0), ("p", "r", "y", 2, 1)])
    for column, values in change.items():
        df[column] = values
    with pytest.raises(ValueError, match=message):
        pairs_from_rankings(df)


@pytest.mark.parametrize("column", ["prompt_id", "rater", "criterion", "model", "rank"])
def test_pairs_from_rankings_names_a_missing_column(column):
    df = ranking([("p", "r", "x", 1, 0), ("p", "r", "y", 2, 1)])
    with pytest.raises(ValueError, match=rf"missing column\(s\) \['{column}'\]"):
        pairs_from_rankings(df.drop(columns=column))
    with pytest.raises(ValueError, match="empty"):
        pairs_from_rankings(df.iloc[:0])
