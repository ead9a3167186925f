"""Agreement per checklist condition, checked against the ``krippendorff`` package and a
brute-force count of agreeing rater pairs."""

from __future__ import annotations

from itertools import combinations

import krippendorff
import numpy as np
import pandas as pd
import pytest

from concord.stats.checklist import (
    CONDITION_COLUMNS,
    condition_agreement,
    overrides,
    percent_agreement,
)


def _ticks(seed: int = 4, images: int = 30, raters: int = 5) -> pd.DataFrame:
    """Random ticks of two SC conditions and one PR condition; some raters skip images."""
    rng = np.random.default_rng(seed)
    rows = []
    for image in range(images):
        truth = rng.random(3) < 0.5
        for rater in range(raters):
            if rng.random() < 0.25:
                continue  # this rater never saw the image
            for (criterion, condition), true in zip(
                    [("SC", "subject"), ("SC", "attributes"), ("PR", "clean")], truth,
                    strict=True):
                ticked = int(true if rng.random() < 0.8 else not true)
                rows.append({"image_id": image, "rater": f"r{rater}", "criterion": criterion,
                             "condition": condition, "ticked": ticked,
                             "derived": 1.0, "final": 1.0 if rng.random() < 0.9 else 2.0})
    return pd.DataFrame(rows)


def _reliability(part: pd.DataFrame) -> np.ndarray:
    return part.pivot(index="rater", columns="image_id", values="ticked").to_numpy(float)


def _brute_percent(matrix: np.ndarray) -> float:
    shares = []
    for column in matrix.T:
        values = column[~np.isnan(column)]
        pairs = list(combinations(values, 2))
        if pairs:
            shares.append(sum(a == b for a, b in pairs) / len(pairs))
    return float(np.mean(shares))


def test_alpha_and_percent_agreement_per_condition_match_references():
    ticks = _ticks()
    out = condition_agreement(ticks)
    assert list(out.columns) == CONDITION_COLUMNS
    assert list(zip(out.criterion, out.condition, strict=True)) == [
        ("SC", "subject"), ("SC", "attributes"), ("PR", "clean")]
    for row in out.itertuples():
        part = ticks[ticks.condition == row.condition]
        matrix = _reliability(part)
        expected = krippendorff.alpha(reliability_data=matrix,
                                      level_of_measurement="nominal")
        assert row.alpha_nominal == pytest.approx(expected, abs=1e-12)
        assert row.percent_agreement == pytest.approx(_brute_percent(matrix), abs=1e-12)
        assert row.share_ticked == pytest.approx(part.ticked.mean())
        assert row.n_raters == 5 and row.n_ratings == len(part)
    assert 0.2 < out.alpha_nominal.min() < out.alpha_nominal.max() < 0.8


def test_perfect_and_undefined_agreement():
    same = pd.DataFrame({"image_id": [1, 1, 2, 2], "rater": ["a", "b", "a", "b"],
                         "criterion": "SC", "condition": "c", "ticked": [1, 1, 0, 0]})
    row = condition_agreement(same).iloc[0]
    assert row.percent_agreement == 1.0 and row.alpha_nominal == 1.0 and row.n_images == 2
    alone = same[same.rater == "a"]
    row = condition_agreement(alone).iloc[0]
    assert np.isnan(row.percent_agreement) and np.isnan(row.alpha_nominal)
    assert row.n_images == 0
    assert np.isnan(percent_agreement(np.array([[1.0, np.nan]])))


def test_overrides_count_each_rating_once():
    ticks = _ticks()
    out = overrides(ticks).set_index("criterion")
    one = ticks.drop_duplicates(["image_id", "rater", "criterion"])
    for criterion in ("SC", "PR"):
        part = one[one.criterion == criterion]
        assert out.loc[criterion, "n_ratings"] == len(part)
        assert out.loc[criterion, "n_overrides"] == int((part.final != part.derived).sum())


def test_a_frame_without_the_columns_is_refused_by_name():
    with pytest.raises(ValueError, match="ticked"):
        condition_agreement(pd.DataFrame({"image_id": [1], "rater": ["a"],
                                          "criterion": ["SC"], "condition": ["c"]}))
