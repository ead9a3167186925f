"""AppTest: the dashboard's claims — tied models are shown as tied (never one "Best"), which
models differ, metric against metric, pair differences and the Plan panel."""

from __future__ import annotations

import json

import pandas as pd

from concord.ui import dashboard_claims as claims
from tests.app.test_page_dashboard import (
    chart_specs,
    frame_values,
    pick_study,
    researcher_dashboard,
)
from tests.foundation_helpers import seed_study
from tests.helpers import study_report


def _board(rows):
    cols = ["model", "mean_rater_means", "mean_rater_means_ci_boot_low",
            "mean_rater_means_ci_boot_high", "n_raters", "n_images",
            "rank_mean_rater_means", "rank_mean_rater_means_ci_boot_low",
            "rank_mean_rater_means_ci_boot_high"]
    return pd.DataFrame(rows, columns=cols)


def test_headline_gives_best_only_to_a_model_the_data_put_first():
    clear = _board([("a", 0.9, 0.8, 1.0, 3, 6, 1, 1, 1), ("b", 0.5, 0.4, 0.6, 3, 6, 2, 2, 2)])
    assert claims.headline(clear, "O").startswith("Best on **O**: **a**")
    tied = _board([("a", 0.9, 0.7, 1.0, 3, 6, 1, 1, 2), ("b", 0.85, 0.7, 1.0, 3, 6, 2, 1, 2),
                   ("c", 0.1, 0.0, 0.2, 3, 6, 3, 3, 3)])
    line = claims.headline(tied, "O")
    assert "Best on" not in line and "Tied for best" in line and "**b**" in line
    shaky = _board([("a", 0.9, 0.7, 1.0, 3, 6, 1, 1, 2), ("b", 0.5, 0.4, 0.6, 3, 6, 2, 2, 2)])
    assert "Best on" not in claims.headline(shaky, "O")
    unknown = _board([("a", 0.9, None, None, 1, 1, 1, None, None),
                      ("b", 0.5, None, None, 1, 1, 2, None, None)])
    assert "no model is called best" in claims.headline(unknown, "O")
    equal = _board([("a", 0.7, 0.6, 0.8, 3, 6, 1, 1, 1), ("b", 0.7, 0.6, 0.8, 3, 6, 1, 1, 1)])
    assert "Tied for best" in claims.headline(equal, "O")


def _seeded_dashboard(app_env, tmp_path):
    """The researcher's dashboard on the seeded study, and that study's report."""
    seed_study(app_env["db"], tmp_path)
    at = researcher_dashboard()
    pick_study(at, "dash")
    return at, study_report(app_env["db"], "dash")


def test_a_tied_leaderboard_says_tied_and_shows_rank_intervals(app_env, tmp_path):
    at, doc = _seeded_dashboard(app_env, tmp_path)
    sc = {r["model"]: r for r in doc["human"] if r["criterion"] == "SC"}
    tied = sorted(m for m, r in sc.items() if r["rank_mean_rater_means_ci_boot_low"] == 1)
    assert len(tied) >= 2                       # the seeded study: alpha and beta on SC
    at.radio(key="dash_criterion").set_value("SC").run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "Tied for best on **SC**" in text and "Best on **SC**" not in text
    assert all(f"**{m}**" in text for m in tied)
    board = next(f for f in frame_values(at) if "rank (95% CI)" in f.columns)
    assert board.loc[board["model"] == "alpha", "rank (95% CI)"].iloc[0].startswith("1 [1")
    # Which models differ: the matrix of paired differences, both directions.
    titles = [json.dumps(s) for s in chart_specs(at)]
    assert any('"difference"' in t for t in titles)


def test_metric_comparison_pair_differences_and_plan_render(app_env, tmp_path):
    at, doc = _seeded_dashboard(app_env, tmp_path)
    metrics = next(f for f in frame_values(at) if {"metric", "value", "ci_boot_low"}
                   <= set(f.columns))
    assert set(metrics["metric"]) == {"vqascore", "gned"}
    at.radio(key="dash_mc_level").set_value("item").run()
    assert not at.exception
    picked = at.selectbox(key="dash_mc_stat")
    assert "pair_accuracy_within_prompt" in picked.options
    row = next(r for r in doc["metric_comparisons"] if r["human"] == "ratings:O"
               and r["level"] == "model" and r["statistic"] == "spearman"
               and r["dimension"] == "all")
    assert {row["metric_a"], row["metric_b"]} == {"gned", "vqascore"}
    # Plan tab: nothing is simulated until asked; then the power curves of 1, 3 and 5
    # raters per image.
    assert not any({"raters", "prompts", "power_diff"} <= set(f.columns)
                   for f in frame_values(at))
    at.toggle(key="dash_plan_on").set_value(True).run()
    assert not at.exception
    specs = chart_specs(at)
    power = [s for s in specs if "power" in json.dumps(s)]
    assert power, "no power chart"
    # Streamlit sends a chart's rows apart from its spec (as Arrow): read the table shown
    # under the chart, which holds the same records.
    assert "power" in json.dumps(power[0]["encoding"]["y"])
    table = next(f for f in frame_values(at) if {"raters", "prompts", "power_diff"}
                 <= set(f.columns))
    assert set(table["raters"]) == {1, 3, 5}
    assert table["power_diff"].between(0, 1).all()
    assert not at.exception
