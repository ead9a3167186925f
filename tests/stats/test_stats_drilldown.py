"""Disagreements: the images humans and a metric rank most differently, by brute force."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from concord.stats import disagreements, join_sources


def _frames(seed=0):
    rng = np.random.default_rng(seed)
    ratings, scores = [], []
    for p in range(12):
        for m in ("a", "b", "c"):
            for r in ("x", "y", "z"):
                ratings.append({"prompt_id": f"p{p:02d}", "model": m, "sample": 0,
                                "rater": r, "criterion": "SC",
                                "value": float(rng.choice([0, 0.5, 1]))})
            scores.append({"prompt_id": f"p{p:02d}", "model": m, "sample": 0, "metric": "d",
                           "judge": "", "value": float(rng.random())})
    return pd.DataFrame(ratings), pd.DataFrame(scores)


def test_largest_rank_gaps_by_brute_force():
    ratings, scores = _frames()
    joined = join_sources(scores, ratings=ratings, higher_is_better={"d": False})
    got = disagreements(joined, n=5, higher_is_better={"d": False})
    human = ratings.groupby(["prompt_id", "model"])["value"].mean()
    metric = scores.set_index(["prompt_id", "model"])["value"].reindex(human.index)
    ref = pd.DataFrame({"human": human, "metric": metric}).reset_index()
    ref["human_rank"] = ref["human"].rank(ascending=False, pct=True)
    ref["metric_rank"] = (-ref["metric"]).rank(ascending=False, pct=True)  # lower is better
    ref["gap"] = (ref["human_rank"] - ref["metric_rank"]).abs()
    ref = ref.sort_values(["gap", "prompt_id", "model"], ascending=[False, True, True]).head(5)
    assert got["prompt_id"].tolist() == ref["prompt_id"].tolist()
    assert got["model"].tolist() == ref["model"].tolist()
    np.testing.assert_allclose(got["gap"], ref["gap"], atol=1e-12)
    np.testing.assert_allclose(got["metric_score"], ref["metric"], atol=0)  # own direction
    assert set(got["human_source"]) == {"ratings:SC"} and (got["n_raters"] == 3).all()
    assert got["gap"].is_monotonic_decreasing


def test_no_joined_images_give_an_empty_table():
    ratings, scores = _frames(1)
    joined = join_sources(scores.assign(prompt_id="other"), ratings=ratings)
    assert disagreements(joined).empty
    with pytest.raises(ValueError, match="missing column"):
        join_sources(scores.drop(columns="metric"), ratings=ratings)
