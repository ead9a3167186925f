"""AppTest: the researcher's agreement dashboard on a seeded and on an empty study."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from concord.services import metric_scores, ranking, report
from concord.store import items
from concord.store import raters as rater_store
from tests.app.conftest import APP
from tests.test_stats_cli import seed_study


def researcher_dashboard() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="admin_secret").input("letmein")
    at.button[0].click().run()
    return at.switch_page("pages/dashboard.py").run()


def pick_study(at: AppTest, name: str) -> AppTest:
    # The sidebar study picker (app.py) is keyed "study_pick".
    at.session_state["study_pick"] = name
    return at.run()


def frame_values(at: AppTest) -> list:
    return [frame.value for frame in at.dataframe]


def leaderboard(at: AppTest):
    return next(f for f in frame_values(at) if {"model", "mean", "ci_low"} <= set(f.columns))


def table7(at: AppTest):
    return next(f for f in frame_values(at) if f.index.name == "dimension")


def test_dashboard_shows_the_report_numbers(app_env, tmp_path):
    db = app_env["db"]
    seed_study(db, tmp_path)
    at = researcher_dashboard()
    pick_study(at, "dash")
    assert not at.exception
    doc = report.study_report(db, "dash")
    best = max((r for r in doc["human"] if r["criterion"] == "O"), key=lambda r: r["mean"])
    board = leaderboard(at)
    assert board["model"].iloc[0] == best["model"] == "alpha"
    assert abs(board["mean"].iloc[0] - best["mean"]) < 1e-12
    assert abs(board["ci_low"].iloc[0] - best["ci_low"]) < 1e-12
    wide = table7(at)
    assert list(wide.index) == ["all", "color", "count"]
    assert set(wide.columns) == {"gned", "vqascore"}
    rho = next(r["spearman"] for r in doc["human_vs_metric"] if r["metric"] == "vqascore"
               and r["human"] == "ratings:O" and r["dimension"] == "all"
               and r["level"] == "model")
    assert wide.loc["all", "vqascore"].startswith(f"{rho:.3f} [")
    assert any(set(f.columns) >= {"rater", "modal_share", "loo_spearman"}
               for f in frame_values(at))
    assert len(at.get("download_button")) == 5
    assert at.metric[0].value == f"{6 * 4 * 3 * 2:,}"


def test_dashboard_filters_and_empty_study(app_env, tmp_path):
    seed_study(app_env["db"], tmp_path)
    at = researcher_dashboard()
    # Study 'ui' (the fixture's) has images but no labels or scores yet.
    assert not at.exception
    assert any("invite raters" in i.value.lower() and "concord score" in i.value
               for i in at.info)
    pick_study(at, "dash")
    at.selectbox(key="dash_dimension").select("count").run()
    assert not at.exception
    board = leaderboard(at)
    assert board["n_prompts"].max() == 3
    at.radio(key="dash_level").set_value("item").run()
    assert not at.exception
    assert list(table7(at).index) == ["all", "count"]


def test_dashboard_of_a_ranking_study(app_env, tmp_path):
    db = app_env["db"]
    quality = {"alpha": 0, "beta": 1, "gamma": 2}  # alpha best
    for name in ("ann", "ben"):
        rater_id = rater_store.get_rater(db, name).id
        while (rank_set := ranking.next_set(db, "ui", rater_id)) is not None:
            by_model = {items.image(db, im.image_id).model: im.image_id
                        for im in rank_set.images}
            groups = [[by_model[m]] for m in sorted(quality, key=quality.get)]
            ranking.submit(db, "ui", rater_id, rank_set, groups)
    scores = tmp_path / "ui-scores.csv"
    scores.write_text("prompt_id,model,metric,value\n" + "".join(
        f"p{p},{m},vqascore,{1 - q / 3 + p / 100}\n" for p in range(3)
        for m, q in quality.items()))
    metric_scores.import_scores(db, "ui", "csv", scores)
    at = researcher_dashboard()
    assert not at.exception
    ranks = next(f for f in frame_values(at) if "mean_rank" in f.columns and "model" in f)
    assert ranks[ranks.dimension == "all"].sort_values("mean_rank")["model"].tolist() == [
        "alpha", "beta", "gamma"]
    assert at.selectbox(key="dash_human").options == ["rankings:overall"]
    assert table7(at).loc["all", "vqascore"].startswith("1.000")
