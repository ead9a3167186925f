"""Derived criteria from a rubric's combine: per rater and image, scoped by dimension."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from concord.stats import Derived, derive, full_report, with_derived


def _ratings(rows):
    return pd.DataFrame(rows, columns=["prompt_id", "model", "rater", "criterion", "value",
                                       "dimension"])


ROWS = [("p1", "m", "a", "A", 0.25, "x"), ("p1", "m", "a", "B", 1.0, "x"),
        ("p1", "m", "a", "C", 4.0, "x"), ("p2", "m", "a", "A", 1.0, "y"),
        ("p2", "m", "a", "B", 0.5, "y"), ("p2", "m", "b", "A", 1.0, "y")]


def test_geometric_and_arithmetic_means_over_any_number_of_criteria():
    df = _ratings(ROWS)
    geo = derive(df, Derived("G", "geometric_mean", ("A", "B", "C")))
    assert geo[["prompt_id", "rater", "criterion"]].values.tolist() == [["p1", "a", "G"]]
    assert geo["value"].iloc[0] == pytest.approx((0.25 * 1.0 * 4.0) ** (1 / 3))
    two = derive(df, Derived("O", "geometric_mean", ("A", "B")))
    assert two["value"].tolist() == [math.sqrt(0.25), math.sqrt(0.5)]  # exact sqrt for two
    mean = derive(df, Derived("M", "arithmetic_mean", ("A", "B")))
    assert mean["value"].tolist() == [0.625, 0.75]
    assert set(two["rater"]) == {"a"}  # rater b has no B: no derived value


def test_spec_validation_names_the_problem():
    with pytest.raises(ValueError, match=r"Derived\.method must be one of"):
        Derived("O", "median", ("A", "B"))
    with pytest.raises(ValueError, match="criteria must be distinct and not empty"):
        Derived("O", "geometric_mean", ("A", "A"))
    with pytest.raises(ValueError, match="the name is one of its own criteria"):
        Derived("A", "geometric_mean", ("A", "B"))


def test_per_dimension_specs_and_the_default_for_the_rest():
    df = _ratings(ROWS)
    specs = [Derived("O", "arithmetic_mean", ("A", "B"), ("x",)),
             Derived("O", "geometric_mean", ("A", "B"))]
    out = with_derived(df, specs)
    derived = out[out["criterion"] == "O"].set_index("prompt_id")["value"]
    assert derived["p1"] == pytest.approx(0.625)          # dimension x: arithmetic
    assert derived["p2"] == pytest.approx(math.sqrt(0.5))  # the rest: geometric
    only_x = with_derived(df, [Derived("O", "geometric_mean", ("A", "B"), ("x",))])
    assert only_x[only_x["criterion"] == "O"]["prompt_id"].tolist() == ["p1"]


def test_a_study_without_combine_reports_its_own_criteria_and_no_o():
    rows = [{"prompt_id": f"p{p}", "model": f"m{m}", "rater": f"r{r}", "criterion": "likert",
             "value": float(1 + (p + m + r) % 5)} for p in range(6) for m in range(3)
            for r in range(3)]
    doc = full_report(pd.DataFrame(rows), n_boot=10)
    assert doc["meta"]["criteria"] == ["likert"] and doc["meta"]["derived"] == []
    assert {r["criterion"] for r in doc["human"]} == {"likert"}
    skipped = with_derived(pd.DataFrame(rows), [Derived("O", "geometric_mean", ("SC", "PR"))])
    assert set(skipped["criterion"]) == {"likert"}
