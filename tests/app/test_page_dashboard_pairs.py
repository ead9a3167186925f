"""AppTest: the dashboard's Pairs tab shows the report's pair statistics."""

from __future__ import annotations

from tests.app.test_page_dashboard import (
    chart_specs,
    frame_values,
    metric_value,
    pick_study,
    researcher_dashboard,
)
from tests.foundation_helpers import seed_study
from tests.helpers import study_report
from tests.pair_helpers import seed_pair_study


def test_pairs_tab_shows_bradley_terry_win_rates_and_the_win_matrix(app_env, tmp_path):
    db = app_env["db"]
    seed_pair_study(db, tmp_path, extra="pairs:\n  pairs_per_prompt: 3\n",
                    gold="p0,alpha,pair,delta\n")
    at = researcher_dashboard()
    pick_study(at, "duel")
    assert not at.exception
    assert metric_value(at, "Pair judgments") == f"{8 * 3 * 3:,}"
    doc = study_report(db, "duel")
    shown = frame_values(at)
    board = next(f for f in shown if {"score", "score_ci_low", "n_comparisons"} <= set(f.columns))
    expect = [r for r in doc["pairs"]["bradley_terry"]
              if r["source"] == "pairs" and r["tie_model"] == "davidson"]
    assert board["model"].tolist() == [r["model"] for r in expect]
    assert board["score"].tolist() == [r["score"] for r in expect]
    rates = next(f for f in shown if "win_rate" in f.columns and "wins" in f.columns
                 and "losses" in f.columns)
    assert rates["model"].iloc[0] == "alpha"
    assert any("alpha_nominal" in f.columns and "both_bad" in f.columns for f in shown)
    titles = {s.get("layer", [{}])[0].get("encoding", {}).get("color", {}).get("title")
              for s in chart_specs(at)}
    assert "win rate" in titles
    at.radio(key="dash_pair_ties").set_value("half").run()
    assert not at.exception
    half = [r["score"] for r in doc["pairs"]["bradley_terry"]
            if r["source"] == "pairs" and r["tie_model"] == "half"]
    board = next(f for f in frame_values(at) if {"score", "n_comparisons"} <= set(f.columns))
    assert board["score"].tolist() == half
    # The differences of the chosen judgments and tie model, from the same refits.
    diffs = next(f for f in frame_values(at) if "score_diff_ci_boot_low" in f.columns)
    expect = [r for r in doc["pairs"]["bradley_terry_differences"]
              if r["source"] == "pairs" and r["tie_model"] == "half"]
    assert diffs["score_diff"].tolist() == [r["score_diff"] for r in expect]
    assert any("win_rate_a_ci_boot_low" in f.columns for f in frame_values(at))


def test_pairs_tab_says_why_it_is_empty(app_env, tmp_path):
    seed_study(app_env["db"], tmp_path, scores=False)  # ratings only
    at = researcher_dashboard()
    pick_study(at, "dash")
    assert not at.exception
    assert any("No pair judgments yet" in i.value for i in at.info)


def test_imported_votes_and_rankings_on_the_dashboard(app_env, tmp_path):
    """A votes-only study (arena votes without prompts or images) and a rankings-only one:
    the dashboard shows their pair statistics as for labels from the screens."""
    from concord.services.imports.ratings import import_ratings

    db = app_env["db"]
    votes = tmp_path / "v.csv"
    votes.write_text("model_a,model_b,winner,judge,tstamp\n" + "".join(
        f"m{i % 3},m{(i + 1) % 3},{'model_a' if i % 4 else 'model_b'},u{i % 7},{1.7e9 + i}\n"
        for i in range(60)))
    import_ratings(db, "votes", "pairs", votes)
    ranks = tmp_path / "k.csv"
    ranks.write_text("prompt_id,rater,ranking\n" + "".join(
        f"p{i},r{i % 3},{'a > b = c' if i % 2 else 'c > a > b'}\n" for i in range(12)))
    import_ratings(db, "ranks", "rankings", ranks)
    at = researcher_dashboard()
    for study, source in (("votes", "pairs"), ("ranks", "rankings")):
        pick_study(at, study)
        assert not at.exception
        doc = study_report(db, study)
        expect = [r["model"] for r in doc["pairs"]["bradley_terry"]
                  if r["source"] == source and r["tie_model"] == "davidson"]
        board = next(f for f in frame_values(at)
                     if {"score", "score_ci_low", "n_comparisons"} <= set(f.columns))
        assert board["model"].tolist() == expect and len(expect) == 3
        online = [f for f in frame_values(at) if "elo_online" in f.columns]
        assert bool(online) == (study == "votes")  # online Elo: human votes only
