"""AppTest: the researcher's agreement dashboard on seeded, ranking and one-rater studies."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from concord.services.labelling import ranking
from concord.services.metrics import scores as metric_scores
from concord.store import items
from concord.store import raters as rater_store
from tests.app.conftest import APP
from tests.foundation_helpers import seed_study
from tests.helpers import study_report

pytestmark = pytest.mark.both_engines


def researcher_dashboard() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="admin_secret").input("letmein-test-secret-7Qx9")
    at.button[0].click().run()
    return at.switch_page("pages/dashboard.py").run()


def pick_study(at: AppTest, name: str) -> AppTest:
    # The sidebar study picker (app.py) is keyed "study_pick".
    at.session_state["study_pick"] = name
    return at.run()


def frame_values(at: AppTest) -> list:
    return [frame.value for frame in at.dataframe]


def leaderboard(at: AppTest):
    return next(f for f in frame_values(at)
                if {"model", "mean_rater_means", "mean_image_means"} <= set(f.columns))


def table7(at: AppTest):
    return next(f for f in frame_values(at) if f.index.name == "dimension")


def chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def metric_value(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_dashboard_shows_the_report_numbers(app_env, tmp_path):
    db = app_env["db"]
    seed_study(db, tmp_path)
    at = researcher_dashboard()
    pick_study(at, "dash")
    assert not at.exception
    doc = study_report(db, "dash")
    best = max((r for r in doc["human"] if r["criterion"] == "O"),
               key=lambda r: r["mean_rater_means"])
    board = leaderboard(at)
    assert board["model"].iloc[0] == best["model"] == "alpha"
    assert abs(board["mean_rater_means"].iloc[0] - best["mean_rater_means"]) < 1e-12
    assert abs(board["mean_image_means"].iloc[0] - best["mean_image_means"]) < 1e-12
    assert abs(board["mean_rater_means_ci_boot_low"].iloc[0]
               - best["mean_rater_means_ci_boot_low"]) < 1e-12
    wide = table7(at)
    assert list(wide.index) == ["all", "color", "count"]
    assert set(wide.columns) == {"gned", "vqascore"}
    rho = next(r["spearman"] for r in doc["human_vs_metric"] if r["metric"] == "vqascore"
               and r["human"] == "ratings:O" and r["dimension"] == "all"
               and r["level"] == "model")
    assert wide.loc["all", "vqascore"].startswith(f"{rho:.3f} [")
    assert any({"rater", "modal_share", "rest_spearman"} <= set(f.columns)
               for f in frame_values(at))
    assert any({"statistic", "mean_r", "fisher_z", "tanh_mean_r"} <= set(f.columns)
               for f in frame_values(at))
    assert len(at.get("download_button")) == 5
    assert metric_value(at, "Rating values") == f"{6 * 4 * 3 * 2:,}"


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
    # The other model score is one choice away and changes the model-level numbers' label.
    at.selectbox(key="dash_model_score").select("mean_rater_means").run()
    assert not at.exception
    at.radio(key="dash_level").set_value("model").run()
    assert any("mean of rater means" in c.value for c in at.caption)


def test_disagreements_let_the_researcher_pick_the_human_source(app_env, tmp_path):
    seed_study(app_env["db"], tmp_path)
    at = researcher_dashboard()
    pick_study(at, "dash")
    picker = at.selectbox(key="dash_worst_source")
    assert picker.options == ["ratings:O", "ratings:PR", "ratings:SC"]
    picker.select("ratings:PR").run()
    assert not at.exception
    assert any("humans (ratings:PR)" in c.value for c in at.caption)


def _rank_all(db, quality: dict[str, int], raters=("ann", "ben")) -> None:
    for name in raters:
        rater_id = rater_store.get_rater(db, name).id
        while (rank_set := ranking.next_set(db, "ui", rater_id)) is not None:
            by_model = {items.image(db, im.image_id).model: im.image_id
                        for im in rank_set.images}
            groups = [[by_model[m]] for m in sorted(quality, key=quality.get)]
            ranking.submit(db, "ui", rater_id, rank_set, groups)


def test_dashboard_of_a_ranking_study_draws_the_scatter_and_counts_rankings(app_env,
                                                                            tmp_path):
    db = app_env["db"]
    quality = {"alpha": 0, "beta": 1, "gamma": 2}  # alpha best
    _rank_all(db, quality)
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
    # The scatter of a ranking source renders (mean rank, 1 = best on top).
    titles = [str(s.get("encoding", {}).get("y", {}).get("title"))
              for spec in chart_specs(at) for s in [spec, *spec.get("layer", [])]]
    assert any("mean rank, overall (1 = best)" in t for t in titles)
    # 3 prompts × 2 raters: 6 rankings of 3 images each, on the dashboard and on Progress.
    assert metric_value(at, "Rankings") == "6"
    progress = at.switch_page("pages/progress.py").run()
    assert not progress.exception
    assert metric_value(progress, "Rankings") == "6"


def test_agreement_with_one_rater_says_why(app_env, tmp_path):
    db = app_env["db"]
    path = tmp_path / "one.csv"
    path.write_text("prompt_id,model,rater,criterion,value\n" + "".join(
        f"p{p},{m},ann,{c},{v}\n" for p in range(3)
        for m, v in (("alpha", 1), ("beta", 0.5), ("gamma", 0)) for c in ("SC", "PR")))
    from concord.services.imports.ratings import import_ratings
    import_ratings(db, "ui", "csv", path)
    at = researcher_dashboard()
    assert not at.exception
    assert any("at least two raters" in i.value and "1 rater (ann)" in i.value
               for i in at.info)


def test_excluding_a_rater_recomputes_every_number_and_is_reversible(app_env, tmp_path):
    db = app_env["db"]
    seed_study(db, tmp_path)
    at = researcher_dashboard()
    pick_study(at, "dash")
    assert metric_value(at, "Raters who rated") == "3"
    at.selectbox(key="dash_exclude_rater").select("cat")
    at.text_input(key="dash_exclude_reason").input("failed attention checks")
    at.button(key="FormSubmitter:dash_exclude_form-Exclude").click().run()
    assert not at.exception
    assert metric_value(at, "Raters who rated") == "2"
    assert metric_value(at, "Rating values") == f"{6 * 4 * 2 * 2:,}"
    doc = study_report(db, "dash", n_boot=10, n_perm=10)
    assert doc["meta"]["excluded_raters"] == ["cat"]
    assert doc["raters"]["excluded"][0]["reason"] == "failed attention checks"
    audit = db.execute("SELECT action, detail FROM audit_log ORDER BY id DESC").fetchone()
    assert audit[0] == "exclude_rater" and "cat" in audit[1]
    at.selectbox(key="dash_include_rater").select("cat")
    at.button(key="dash_include").click().run()
    assert not at.exception
    assert metric_value(at, "Raters who rated") == "3"
