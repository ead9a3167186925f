"""``python -m concord stats`` and ``concord.services.report.study`` on small seeded studies."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from concord.cli import main
from concord.services import studies
from concord.services.exports import labels
from concord.services.metrics import scores as metric_scores
from concord.services.report import study as report
from concord.stats.benchmarks.stored import benchmark_tables, image_scores
from concord.store import frames, rating_columns
from concord.store import ratings as rating_store
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.foundation_helpers import RATERS, seed_study
from tests.helpers import ROOT, edit_settings, make_folder_study

pytestmark = pytest.mark.both_engines


def run_cli(db_path, *args) -> int:
    return main(["--db", str(db_path), "stats", *args])


def json_doc(capsys, db_path, *args) -> dict:
    assert run_cli(db_path, "--json", "--n-boot", "200", "--n-perm", "200", *args) == 0
    return json.loads(capsys.readouterr().out)


def test_json_numbers_equal_scipy_and_statsmodels(seeded, capsys):
    db, db_path = seeded
    doc = json_doc(capsys, db_path, "--study", "dash")
    ratings = labels.ratings(db, "dash")
    # Leaderboard cell: mean of per-rater means, population std across raters.
    sc = ratings[(ratings.model == "beta") & (ratings.criterion == "SC")]
    per_rater = sc.groupby("rater")["value"].mean()
    row = next(r for r in doc["human"] if r["model"] == "beta" and r["criterion"] == "SC")
    assert row["mean_rater_means"] == pytest.approx(per_rater.mean(), abs=1e-12)
    assert row["std_rater_means"] == pytest.approx(per_rater.std(ddof=0), abs=1e-12)
    assert (row["mean_rater_means_ci_boot_low"] <= row["mean_rater_means"]
            <= row["mean_rater_means_ci_boot_high"])
    per_image = sc.groupby("image_id")["value"].mean()
    assert row["mean_image_means"] == pytest.approx(per_image.mean(), abs=1e-12)
    # Study agreement: Fleiss' kappa from statsmodels on the items × raters table.
    wide = ratings[ratings.criterion == "SC"].pivot_table(
        index="image_id", columns="rater", values="value")
    table, _ = aggregate_raters(wide.to_numpy())
    agree = next(r for r in doc["agreement"]["study"] if r["criterion"] == "SC")
    assert agree["fleiss_kappa"] == pytest.approx(fleiss_kappa(table, method="fleiss"))
    # Item-level human vs metric: scipy on image means of SC against vqascore.
    scores = metric_scores.scores(db, "dash").query("metric == 'vqascore'")
    human = ratings[ratings.criterion == "SC"].groupby("image_id")["value"].mean()
    metric = scores.set_index("image_id")["value"].reindex(human.index)
    cell = next(r for r in doc["human_vs_metric"] if r["metric"] == "vqascore"
                and r["human"] == "ratings:SC" and r["dimension"] == "all"
                and r["level"] == "item")
    rho, p = sps.spearmanr(human, metric)
    assert cell["spearman"] == pytest.approx(rho, abs=1e-12)
    assert cell["spearman_p_analytic"] == pytest.approx(p, rel=1e-9)
    assert cell["spearman_p_perm"] is None and cell["spearman_ci_boot_low"] is None
    assert cell["kendall_tau_b"] == pytest.approx(sps.kendalltau(human, metric)[0], abs=1e-12)
    assert cell["pearson"] == pytest.approx(sps.pearsonr(human, metric)[0], abs=1e-12)
    assert cell["n"] == 24


def test_json_sections_directions_and_strict_json(seeded, capsys):
    _, db_path = seeded
    doc = json_doc(capsys, db_path, "--study", "dash", "--by-dimension")
    assert set(doc) == {"meta", "human", "model_differences", "agreement", "rankings",
                        "human_vs_metric", "metric_comparisons", "human_vs_metric_per_model",
                        "rater_vs_rest", "raters", "disagreements", "benchmarks",
                        "by_dimension", "pairs", "checklist"}
    assert doc["checklist"] == {"conditions": [], "overrides": []}
    assert doc["meta"]["rubric"] == "imagenhub-text-to-image" and doc["meta"]["criteria"] == [
        "PR", "SC"]
    assert doc["meta"]["study"] == "dash" and doc["meta"]["lower_is_better"] == ["gned"]
    model = {(r["metric"], r["human"]): r["spearman"] for r in doc["human_vs_metric"]
             if r["level"] == "model" and r["dimension"] == "all"}
    # GNED is a distance: it is flipped, so a good metric correlates positively.
    assert model[("gned", "ratings:O")] > 0.5 and model[("vqascore", "ratings:O")] > 0.5
    assert {r["dimension"] for r in doc["by_dimension"]["human"]} == {"color", "count"}
    means = {(r["metric"], r["model"]) for r in doc["benchmarks"]["metric_means"]}
    assert ("vqascore", "alpha") in means
    assert doc["benchmarks"]["problems"][0]["benchmark"] == "gned"  # CSV has no recall


def test_dimension_filter_equals_by_dimension_rows(seeded, capsys):
    _, db_path = seeded
    whole = json_doc(capsys, db_path, "--study", "dash", "--by-dimension")
    color = json_doc(capsys, db_path, "--study", "dash", "--dimension", "color")
    assert color["meta"]["dimension"] == "color" and color["meta"]["n_prompts"] == 3
    by_dim = [{k: v for k, v in r.items() if k != "dimension"}
              for r in whole["by_dimension"]["human"] if r["dimension"] == "color"]
    assert by_dim == color["human"]
    assert {r["dimension"] for r in color["human_vs_metric"]} == {"all", "color"}


def test_tables_and_metric_filter(seeded, capsys):
    _, db_path = seeded
    assert run_cli(db_path, "--study", "dash", "--metric", "vqascore", "--n-boot", "100",
                   "--n-perm", "100") == 0
    out = capsys.readouterr().out
    for heading in ("== Leaderboard (human scores)", "== Agreement (study)",
                    "== Human vs metric", "== Metric means per model"):
        assert heading in out
    assert "gned" not in out.split("== Human vs metric")[1]
    assert "[" in out.split("== Leaderboard")[1].splitlines()[2]  # a CI cell


def test_ratings_only_and_scores_only_studies(database_at, tmp_path, capsys):
    db_path = database_at("split")
    db = open_db(db_path)
    seed_study(db, tmp_path, "ronly", scores=False)
    seed_study(db, tmp_path, "sonly", ratings=False)
    db.close()
    ronly = json_doc(capsys, db_path, "--study", "ronly")
    assert ronly["human"] and ronly["human_vs_metric"] == []
    assert ronly["benchmarks"]["metric_means"] == []
    sonly = json_doc(capsys, db_path, "--study", "sonly")
    assert sonly["human"] == [] and sonly["agreement"]["study"] == []
    assert len(sonly["benchmarks"]["metric_means"]) == 8
    assert run_cli(db_path, "--study", "sonly", "--n-boot", "50") == 0
    assert "Metric means per model" in capsys.readouterr().out


def test_errors_are_one_line(seeded, capsys):
    _, db_path = seeded
    assert run_cli(db_path, "--study", "nope") == 1
    err = capsys.readouterr().err.strip()
    assert err == "error: no study named 'nope' (studies: dash)"
    assert run_cli(db_path, "--study", "dash", "--metric", "clip") == 1
    assert "has no metric 'clip' (metrics: gned, vqascore)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run_cli(db_path, "--study", "dash", "--n-boot", "0")


def test_drilldown_rater_quality_and_fast_frames(seeded):
    db, _ = seeded
    dash = study_store.get_study(db, "dash")
    worst = report.disagreements(db, dash, "vqascore", n=5)
    assert len(worst) == 5 and worst[0]["gap"] >= worst[-1]["gap"]
    assert Path(worst[0]["path"]).is_file() and worst[0]["human_source"] == "ratings:O"
    by_pr = report.disagreements(db, dash, "vqascore", n=5, source="ratings:PR")
    assert {r["human_source"] for r in by_pr} == {"ratings:PR"}
    quality = report.rater_quality(db, dash)
    assert {(r["rater"], r["criterion"]) for r in quality} == {
        (r, c) for r in RATERS for c in ("SC", "PR", "O")}
    rated = [r for r in quality if r["criterion"] != "O"]
    assert all(0 < r["modal_share"] <= 1 and r["median_seconds"] > 2 for r in rated)
    assert all(r["rest_spearman"] is not None for r in quality)
    # An edit makes a new revision and an undo (NULL values) hides the rating.
    study = study_store.get_study(db, "dash")
    before = frames.ratings_frame(db, study.id)
    first = before.iloc[0]
    rater_id = db.execute("SELECT id FROM raters WHERE name = ?", [first.rater]).fetchone()[0]
    rating_store.insert_rating(db, study.id, int(first.image_id), rater_id, {"SC": 0.5},
                               submission="edit-1", action="edit", seconds=None)
    rating_store.insert_rating(db, study.id, int(first.image_id), rater_id, {"PR": None},
                               submission="undo-1", action="undo", seconds=None)
    after = frames.ratings_frame(db, study.id)
    assert len(after) == len(before) - 1
    mine = after[(after.image_id == first.image_id) & (after.rater == first.rater)]
    assert mine[["criterion", "value"]].values.tolist() == [["SC", 0.5]]
    lean = frames.ratings_frame(db, study.id, categorical=True, times=False)
    assert "created_at" not in lean and lean["model"].dtype == "category"
    assert np.array_equal(lean["value"].to_numpy(), after["value"].to_numpy())


def test_ratings_frame_exact_values_and_chunks(seeded, monkeypatch):
    db, _ = seeded
    study = study_store.get_study(db, "dash")
    image_id = int(frames.ratings_frame(db, study.id)["image_id"].iloc[-1])
    rater_id = db.execute("INSERT INTO raters (name, created_at) VALUES ('odd', 'x')"
                          " RETURNING id").fetchone()[0]
    # SQLite prints REALs with 15 digits; the frame must still hold the stored doubles.
    rating_store.insert_rating(db, study.id, image_id, rater_id, {"SC": 0.1 + 0.2},
                               submission="odd-1", action="rate", seconds=1 / 3)
    whole = frames.ratings_frame(db, study.id)
    odd = whole[whole.rater == "odd"].iloc[0]
    assert odd["value"] == 0.1 + 0.2 and abs(odd["seconds"] - 1 / 3) < 1e-14
    monkeypatch.setattr(rating_columns, "_CHUNK_IDS", 7)  # many id chunks, some of them empty
    chunked = frames.ratings_frame(db, study.id)
    assert whole.equals(chunked)
    empty = study_store.get_study(db, "dash").id + 100
    assert frames.ratings_frame(db, empty).empty


def test_subprocess_help_and_json(seeded):
    _, db_path = seeded
    help_text = subprocess.run([sys.executable, "-m", "concord", "stats", "--help"],
                               cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "Krippendorff" in help_text and "--dimension" in help_text
    proc = subprocess.run([sys.executable, "-m", "concord", "--db", str(db_path), "stats",
                           "--study", "dash", "--json", "--n-boot", "50", "--n-perm", "50"],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    doc = json.loads(proc.stdout)
    assert doc["meta"]["n_ratings"] == 6 * 4 * 3 * 2 and "NaN" not in proc.stdout


# ------------------------------------------------ benchmarks of stored scores (no database)

def stored_rows(rows: list[dict]) -> pd.DataFrame:
    """Rows shaped like ``frames.scores_frame``; unspecified columns get defaults."""
    base = {"study": "b", "sample": 0, "judge": "", "question_id": "", "error": None,
            "dimension": None, "variant": None, "atom_count": None, "paraphrase_group": None,
            "benchmark": None, "prompt_meta": "{}", "skill": None, "answer": None,
            "details": "{}"}
    out = pd.DataFrame([{**base, **r} for r in rows])
    out["image_id"] = pd.factorize(out["prompt_id"] + "|" + out["model"] + "|"
                                   + out["sample"].astype(str))[0]
    return out


def test_stored_benchmarks_paircomp_geneval2_tiif_gned_consistency():
    rows = []
    for model, base in (("m1", 0.8), ("m2", 0.4)):
        for pair, cat in ((0, "Color"), (1, "Counting")):
            for cap in (0, 1):
                for sample in (0, 1):
                    rows.append({"prompt_id": f"pc{pair}-{cap}", "model": model,
                                 "sample": sample, "metric": "paircomp", "dimension": cat,
                                 "value": base - 0.1 * cap + 0.05 * sample,
                                 "prompt_meta": json.dumps({"pair": pair, "caption": cap})})
        for p, atoms in ((0, 3), (1, 4)):
            rows.append({"prompt_id": f"g{p}", "model": model, "metric": "soft-tifa",
                         "value": base})
            rows += [{"prompt_id": f"g{p}", "model": model, "metric": "soft-tifa",
                      "question_id": str(q), "value": base / (q + 1), "skill": skill,
                      "atom_count": atoms}
                     for q, skill in enumerate(("object", "count"))]
            rows += [{"prompt_id": f"t{p}/short", "model": model, "metric": "tiif",
                      "judge": "qwen", "question_id": str(q), "value": 0.9,
                      "dimension": "text", "variant": "short",
                      "details": json.dumps({"correct": bool((q + p) % 2) or model == "m1"})}
                     for q in range(2)]
            rows.append({"prompt_id": f"o{p}", "model": model, "metric": "gned",
                         "variant": "long", "value": 1 - base,
                         "details": json.dumps({"recall": base})})
            for k in range(3):
                rows.append({"prompt_id": f"c{p}-{k}", "model": model, "metric": "vqascore",
                             "value": base + 0.01 * k * (p + 1), "paraphrase_group": f"s{p}",
                             "dimension": ("abstract", "realistic")[p]})
    tables = benchmark_tables(stored_rows(rows))
    pc = tables["paircomp"].set_index(["model", "category"])
    assert pc.loc[("m1", "Color"), "arithmetic"] == pytest.approx(0.8 - 0.05 + 0.025)
    assert pc.loc[("m2", "Average"), "n_categories"] == 2
    totals = tables["geneval2_totals"].set_index(["model", "method"])["score"]
    assert totals[("m1", "soft_tifa_am")] == pytest.approx(100 * (0.8 + 0.4) / 2)
    assert totals[("m1", "soft_tifa_gm")] == pytest.approx(100 * np.sqrt(0.8 * 0.4))
    assert set(tables["geneval2_by_skill"]["skill"]) == {"object", "count"}
    assert set(tables["geneval2_by_atomicity"]["atom_count"]) == {3, 4}
    acc = tables["tiif_accuracy"].set_index("model")["accuracy"]
    assert (acc["m1"], acc["m2"]) == (1.0, 0.5)
    summary = tables["tiif_summary"]
    overall = summary[(summary.group == "Overall") & (summary.model == "m2")]["score"]
    assert overall.iloc[0] == 0.5 and set(summary["judge"]) == {"qwen"}
    gned = tables["gned"].set_index("model")
    assert gned.loc["m1", "gned"] == pytest.approx(0.2) and gned.loc["m1", "recall"] == 0.8
    cons = tables["consistency"].set_index("model")
    assert cons.loc["m1", "S_a"] == pytest.approx(np.std([0.8, 0.81, 0.82], ddof=1))
    assert cons.loc["m1", "S_final"] == pytest.approx(
        np.std([0.8, 0.82, 0.84], ddof=1) - np.std([0.8, 0.81, 0.82], ddof=1))
    assert "problems" not in tables
    means = tables["metric_means"].set_index(["metric", "model"])["mean"]
    assert means[("tiif", "m1")] == pytest.approx(0.9)  # image value = mean of questions


def test_stored_benchmarks_report_problems_and_image_scores():
    rows = [{"prompt_id": "p0", "model": "m", "sample": s, "metric": "paircomp",
             "dimension": "Color", "value": 0.5,
             "prompt_meta": json.dumps({"pair": 0, "caption": 0})} for s in (0, 1)]
    rows += [{"prompt_id": "q", "model": "m", "metric": "tiif", "value": 0.5},
             {"prompt_id": "q", "model": "m", "metric": "tiif", "question_id": "0",
              "value": 0.9, "details": json.dumps({"correct": True})}]
    frame = stored_rows(rows)
    tables = benchmark_tables(frame)
    problems = tables["problems"].set_index("benchmark")["message"]
    assert "each pair needs 4 images" in problems["paircomp"]
    assert "no dimension or no short/long variant" in problems["tiif"]
    images = image_scores(frame)
    # The image row (accuracy 0.5) wins over the question's P(yes) 0.9.
    assert images.loc[images.metric == "tiif", "value"].tolist() == [0.5]
    assert benchmark_tables(frame.iloc[:0]) == {}


# ------------------------------------------------ quality, exclusion, gold, rubric combine

def raters_cli(db_path, *args) -> int:
    return main(["--db", str(db_path), "raters", *args])


def test_excluding_a_rater_recomputes_stats_and_exports_and_is_audited(seeded, capsys,
                                                                        tmp_path):
    db, db_path = seeded
    before = json_doc(capsys, db_path, "--study", "dash")
    assert raters_cli(db_path, "exclude", "--study", "dash", "--reason", "speeder",
                      "cat") == 0
    assert "excluded 'cat'" in capsys.readouterr().out
    after = json_doc(capsys, db_path, "--study", "dash")
    assert (before["meta"]["n_raters"], after["meta"]["n_raters"]) == (3, 2)
    assert after["meta"]["excluded_raters"] == ["cat"]
    assert after["raters"]["excluded"][0]["reason"] == "speeder"
    assert "cat" not in {r["rater"] for r in after["raters"]["quality"]}
    ratings = labels.ratings(db, "dash", include_excluded=True)
    kept = ratings[ratings.rater != "cat"]
    beta = kept[(kept.model == "beta") & (kept.criterion == "SC")]
    row = next(r for r in after["human"] if r["model"] == "beta" and r["criterion"] == "SC")
    assert row["mean_rater_means"] == pytest.approx(
        beta.groupby("rater")["value"].mean().mean(), abs=1e-12)
    # Exports leave the rater out unless asked for explicitly.
    csv_text = labels.export_bytes(db, "dash", "csv").decode()
    assert '"cat"' not in csv_text and '"ann"' in csv_text
    assert '"cat"' in labels.export_bytes(db, "dash", "csv", include_excluded=True).decode()
    out = tmp_path / "all.csv"
    assert main(["--db", str(db_path), "export", "--study", "dash", "--include-excluded",
                 "-o", str(out)]) == 0
    assert '"cat"' in out.read_text()
    assert raters_cli(db_path, "excluded", "--study", "dash") == 0
    assert "speeder" in capsys.readouterr().out
    actions = [r[0] for r in db.execute("SELECT action FROM audit_log ORDER BY id")]
    assert actions[-1] == "exclude_rater"
    assert raters_cli(db_path, "include", "--study", "dash", "cat") == 0
    assert "included 'cat'" in capsys.readouterr().out
    again = json_doc(capsys, db_path, "--study", "dash")
    assert again["human"] == before["human"] and again["meta"]["excluded_raters"] == []
    assert db.execute("SELECT action FROM audit_log ORDER BY id DESC").fetchone()[0] == (
        "include_rater")


def test_exclusion_errors_are_one_line(seeded, capsys):
    _, db_path = seeded
    assert raters_cli(db_path, "exclude", "--study", "dash", "--reason", "x", "zed") == 1
    assert capsys.readouterr().err.strip() == "error: no rater named 'zed'"
    assert raters_cli(db_path, "include", "--study", "dash", "ann") == 1
    assert "'ann' is not excluded from study 'dash'" in capsys.readouterr().err
    assert raters_cli(db_path, "exclude", "--study", "dash", "--reason", " ", "ann") == 1
    assert "give a reason" in capsys.readouterr().err
    assert raters_cli(db_path, "exclude", "--study", "dash", "--reason", "r", "ann") == 0
    assert raters_cli(db_path, "exclude", "--study", "dash", "--reason", "r", "ann") == 1
    assert "already excluded" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        raters_cli(db_path, "exclude", "--study", "dash", "ann")  # --reason is required


def test_gold_rows_count_only_for_rater_quality(seeded, capsys):
    db, db_path = seeded
    study = study_store.get_study(db, "dash")
    image = int(frames.ratings_frame(db, study.id)["image_id"].iloc[0])
    db.execute("INSERT INTO gold (image_id, unit, criterion, expected, tolerance)"
               " VALUES (?, 'image', 'SC', 1, 0)", [image])
    db.conn.commit()
    doc = json_doc(capsys, db_path, "--study", "dash")
    assert doc["meta"]["n_gold_ratings"] == 3 * 2 and doc["meta"]["n_ratings"] == 144 - 6
    assert sum(r["n_ratings"] for r in doc["human"] if r["criterion"] == "SC") == 72 - 3
    gold = {r["rater"]: r for r in doc["raters"]["gold"]}
    ratings = labels.ratings(db, "dash")
    on_gold = ratings[(ratings.image_id == image) & (ratings.criterion == "SC")]
    for r in on_gold.itertuples():
        assert gold[r.rater]["n_correct"] == int(r.value == 1.0)
        assert gold[r.rater]["unit"] == "image"


def test_ranking_gold_is_left_out_of_ranking_statistics(database_at, tmp_path, capsys):
    from concord.services.labelling import ranking
    from concord.store import items
    from concord.store import raters as rater_store

    db_path = database_at("rank")
    db = open_db(db_path)
    manifest = make_folder_study(tmp_path / "rk", prompts=4, models=("a", "b", "c"),
                                 protocol="rank", k=2)
    studies.import_manifest(db, manifest)
    studies.invite(db, "rk", ["ann", "ben"], "http://x")
    for name, order in (("ann", ("a", "b", "c")), ("ben", ("b", "a", "c"))):
        rater_id = rater_store.get_rater(db, name).id
        while (rank_set := ranking.next_set(db, "rk", rater_id)) is not None:
            by_model = {items.image(db, im.image_id).model: im.image_id
                        for im in rank_set.images}
            ranking.submit(db, "rk", rater_id, rank_set, [[by_model[m]] for m in order])
    gold_image = db.execute("SELECT i.id FROM images i JOIN prompts p ON p.id = i.prompt_id"
                            " JOIN models m ON m.id = i.model_id WHERE p.key = 'p0'"
                            " AND m.name = 'a'").fetchone()[0]
    db.execute("INSERT INTO gold (image_id, unit, criterion, expected, tolerance)"
               " VALUES (?, 'prompt', 'overall', 1, 0)", [gold_image])
    db.conn.commit()
    doc = json_doc(capsys, db_path, "--study", "rk")
    assert doc["meta"]["n_gold_rankings"] == 2 and doc["meta"]["n_rankings"] == 6
    assert doc["meta"]["n_ranked_prompts"] == 3 and doc["meta"]["n_ranked_images"] == 18
    assert all(r["n_prompts"] == 3 for r in doc["rankings"]["models"]
               if r["dimension"] == "all")
    gold = {r["rater"]: r["accuracy"] for r in doc["raters"]["gold"]}
    assert gold == {"ann": 1.0, "ben": 0.0}  # ben put the known best image second
    db.close()


def test_quality_settings_of_the_study_set_the_flags(seeded, capsys):
    db, db_path = seeded
    edit_settings(db, "dash", lambda s: s.update(quality={"min_seconds_rating": 5,
                                                          "max_fast_share": 0.1}))
    doc = json_doc(capsys, db_path, "--study", "dash")
    assert doc["meta"]["quality"]["min_seconds_rating"] == 5
    fast = {r["rater"] for r in doc["raters"]["flags"] if r["flag"] == "too_fast"}
    assert fast == {"ann", "ben", "cat"}  # seconds are uniform in [2, 9]: ~40% under 5 s
    assert doc["raters"]["too_fast"] and all(r["seconds"] < 5 for r in doc["raters"]["too_fast"])
    edit_settings(db, "dash", lambda s: s.update(quality={"max_fast_share": 2}))
    assert run_cli(db_path, "--study", "dash", "--json") == 1
    assert "study 'dash': quality settings: max_fast_share must be a share in [0, 1]" in (
        capsys.readouterr().err)


def test_a_study_without_a_combine_has_no_o_and_per_dimension_rubrics(seeded, capsys,
                                                                       monkeypatch):
    db, db_path = seeded
    db.execute("UPDATE studies SET rubric = NULL WHERE name = 'dash'")
    db.conn.commit()
    doc = json_doc(capsys, db_path, "--study", "dash")
    assert doc["meta"]["rubric"] is None and doc["meta"]["derived"] == []
    assert {r["criterion"] for r in doc["human"]} == {"SC", "PR"}
    assert doc["meta"]["criteria"] == ["PR", "SC"]
    # Per-dimension rubrics: only 'color' has a combine here.
    from concord.rubrics import Combine
    from concord.services.labelling import common

    real = common.rubric

    def fake(rubric_id):
        rub = real("imagenhub-general")
        return rub if rubric_id == "with-o" else dataclasses.replace(rub, combine=None)
    monkeypatch.setattr(common, "rubric", fake)
    study = study_store.get_study(db, "dash")
    specs = report.derived_criteria(
        dataclasses.replace(study, rubric="no-o",
                            settings={"rubrics": {"color": "with-o", "count": "no-o"}}),
        ["color", "count"])
    assert [(s.name, s.dimensions) for s in specs] == [("O", ("color",))]
    assert isinstance(real("imagenhub-general").combine, Combine)


def test_model_score_option_and_disagreement_and_rater_sections(seeded, capsys):
    _, db_path = seeded
    doc = json_doc(capsys, db_path, "--study", "dash", "--model-score", "rater-means",
                   "--n-disagreements", "3")
    model_rows = [r for r in doc["human_vs_metric"] if r["level"] == "model"]
    assert {r["human_model_score"] for r in model_rows} == {"mean_rater_means"}
    assert doc["meta"]["model_score"] == "mean_rater_means"
    per = {(r["metric"], r["human_source"]) for r in doc["disagreements"]}
    assert len(doc["disagreements"]) == 3 * len(per)
    assert all(r["path"] and r["prompt"] for r in doc["disagreements"])
    combined = doc["human_vs_metric_per_model"]["combined"]
    assert {r["statistic"] for r in combined} == {"spearman", "kendall_tau_b", "pearson"}
    who = {(r["who"], r["name"]) for r in doc["rater_vs_rest"]["pooled"]}
    assert {("rater", "ann"), ("metric", "vqascore"), ("metric", "gned")} <= who
    assert run_cli(db_path, "--study", "dash", "--n-boot", "20", "--n-perm", "20") == 0
    out = capsys.readouterr().out
    for heading in ("== Rater quality", "combined over models", "== Disagreements"):
        assert heading in out


@pytest.mark.parametrize("command", ["raters exclude", "raters include", "raters excluded"])
def test_exclusion_commands_have_help_and_docs(capsys, command):
    with pytest.raises(SystemExit) as info:
        main([*command.split(), "--help"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m concord {command}")
    assert f"concord {command}" in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def test_tables_print_the_claims(seeded, capsys):
    _, db_path = seeded
    assert run_cli(db_path, "--study", "dash", "--n-boot", "50", "--n-perm", "50") == 0
    out = capsys.readouterr().out
    assert "rank [95% CI]" in out
    assert "== Which models differ (all prompts; paired over prompts)" in out
    assert "== Metric against metric (all prompts)" in out
    assert "p Williams" in out
