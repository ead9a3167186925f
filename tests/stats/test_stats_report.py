"""full_report: JSON-ready document, consistent with the component functions."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from concord.stats import (
    IMAGENHUB_O,
    agreement_table,
    full_report,
    model_scores,
    overall_scores,
)
from concord.stats.differences import model_differences


def _rankings(ratings):
    per_prompt = ratings[ratings["criterion"] == "SC"].groupby(["prompt_id", "model"])[
        "value"].mean().reset_index()
    per_prompt["rank"] = per_prompt.groupby("prompt_id")["value"].rank(ascending=False,
                                                                       method="min")
    per_prompt["position"] = per_prompt.groupby("prompt_id").cumcount()
    return per_prompt.assign(rater="x", criterion="overall", study="s").drop(columns="value")


def _scores(ratings):
    images = ratings.groupby(["study", "prompt_id", "model", "sample", "dimension"])[
        "value"].mean().reset_index()
    rng = np.random.default_rng(0)
    return images.assign(metric="vqascore", judge="", question_id="",
                         value=images["value"] + rng.normal(0, 0.2, len(images)))


def test_report_is_json_with_all_sections(make_ratings):
    ratings = make_ratings(1, prompts=10)
    doc = full_report(ratings, _rankings(ratings), _scores(ratings), n_boot=50, n_perm=50,
                      derived=[IMAGENHUB_O])
    text = json.dumps(doc, allow_nan=False)  # raises on NaN or numpy types
    assert json.loads(text) == doc
    assert set(doc) == {"meta", "human", "model_differences", "agreement", "rankings",
                        "human_vs_metric", "metric_comparisons", "human_vs_metric_per_model",
                        "rater_vs_rest", "raters", "disagreements", "pairs"}
    assert doc["meta"]["schema_version"] == 3
    assert doc["meta"]["criteria"] == ["PR", "SC"]
    assert doc["meta"]["derived"] == [{"name": "O", "method": "geometric_mean",
                                       "criteria": ["SC", "PR"], "dimensions": None}]
    assert doc["meta"]["n_ratings"] == len(ratings)
    assert doc["meta"]["metrics"] == ["vqascore"]
    assert {r["criterion"] for r in doc["human"]} == {"SC", "PR", "O"}
    assert all(r["study"] == "s" for r in doc["human"])
    assert {r["level"] for r in doc["human_vs_metric"]} == {"model", "item"}
    assert {r["human"] for r in doc["human_vs_metric"]} == {
        "ratings:SC", "ratings:PR", "ratings:O", "rankings:overall"}
    assert doc["rankings"]["position_bias"][0]["criterion"] == "overall"
    pooled = [r for r in doc["rater_vs_rest"]["pooled"] if r["who"] == "rater"]
    assert len(pooled) == 3 * 3  # raters × criteria (SC, PR, O)
    assert {r["rater"] for r in doc["raters"]["quality"]} == {"r0", "r1", "r2", "x"}


def test_report_numbers_equal_the_component_functions(make_ratings):
    ratings = make_ratings(2, prompts=10)
    doc = full_report(ratings, n_boot=40, seed=3, derived=[IMAGENHUB_O])
    both = pd.concat([ratings, overall_scores(ratings)], ignore_index=True)
    human = model_scores(both, n_boot=40, seed=3)
    got = pd.DataFrame(doc["human"]).drop(columns="study")
    pd.testing.assert_frame_equal(got, human, check_dtype=False, check_categorical=False)
    agree = agreement_table(both, by=("model", "criterion"), n_boot=40, seed=3)
    got = pd.DataFrame(doc["agreement"]["model"]).drop(columns="study")
    pd.testing.assert_frame_equal(got.fillna(np.nan), agree, check_dtype=False)
    diffs = model_differences(both, n_boot=40, n_perm=1000, seed=3)
    got = pd.DataFrame(doc["model_differences"]).drop(columns="study")
    pd.testing.assert_frame_equal(got, diffs, check_dtype=False)
    assert doc["rankings"] == {"models": [], "kendalls_w": [], "kendalls_w_prompts": [],
                               "position_bias": [], "rank_by_position": []}
    assert doc["human_vs_metric"] == []
    # Without a derived criterion (e.g. a Likert rubric) there is no O.
    plain = full_report(ratings, n_boot=40, seed=3)
    assert {r["criterion"] for r in plain["human"]} == {"SC", "PR"}
    assert plain["meta"]["derived"] == []


def test_report_turns_undefined_statistics_into_null(make_ratings):
    ratings = make_ratings(3).assign(value=0.0)  # one category everywhere (like Imagic)
    doc = full_report(ratings, n_boot=20)
    study = doc["agreement"]["study"][0]
    assert study["alpha_ordinal"] is None
    assert study["fleiss_kappa"] is None
    assert study["mean_spearman"] is None
    assert doc["human"][0]["std_rater_means"] == 0.0


def test_report_is_deterministic_and_splits_studies(make_ratings):
    a = make_ratings(4, prompts=8)
    b = make_ratings(5, prompts=8).assign(study="t")
    both = pd.concat([a, b], ignore_index=True)
    doc = full_report(both, n_boot=30, seed=1)
    assert doc == full_report(both, n_boot=30, seed=1)
    assert {r["study"] for r in doc["human"]} == {"s", "t"}
    alone = full_report(b, n_boot=30, seed=1)
    t_rows = [r for r in doc["human"] if r["study"] == "t"]
    assert t_rows == alone["human"]


def test_report_refuses_frames_without_required_columns(make_ratings):
    ratings = make_ratings()
    with pytest.raises(ValueError, match=r"full_report: missing column\(s\) \['rater'\]"):
        full_report(ratings.drop(columns="rater"))
    with pytest.raises(ValueError, match=r"full_report \(scores\): missing column\(s\) "
                                         r"\['metric'\]"):
        full_report(ratings, scores=ratings)
    with pytest.raises(TypeError, match="expected a pandas DataFrame, got list"):
        full_report([1, 2])


def test_report_handles_missing_dimensions_judges_and_failed_scores(make_ratings):
    ratings = make_ratings(1)
    scores = _scores(ratings).assign(judge=None, dimension=None)
    ratings["dimension"] = None
    ratings.loc[ratings["prompt_id"] == "p01", "dimension"] = "d1"
    scores.loc[3, "value"] = np.nan  # an evaluator error
    rankings = _rankings(ratings).assign(dimension=None)
    doc = full_report(ratings, rankings, scores, n_boot=20, n_perm=20)
    assert {r["dimension"] for r in doc["rankings"]["models"]} == {"all"}
    rows = [r for r in doc["human_vs_metric"] if r["dimension"] == "all"]
    assert {r["judge"] for r in rows} == {""}
    item = next(r for r in rows if r["level"] == "item" and r["human"] == "ratings:SC")
    assert item["n"] == 12 * 4 - 1
