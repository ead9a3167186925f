"""Pair statistics end to end: judgments stored through the service, then
`python -m concord stats --json` against the statistics functions called directly."""

from __future__ import annotations

import json
import random

import pytest

from concord.cli import main
from concord.services import exclusions
from concord.services.labelling import ranking
from concord.stats.pairs.agreement import metric_pair_accuracy, pair_agreement
from concord.stats.pairs.bradley_terry import bradley_terry
from concord.stats.pairs.elo import elo_online, elo_ratings
from concord.stats.pairs.frame import pairs_from_rankings
from concord.stats.pairs.pairwise import pair_position_bias, win_rates
from concord.store import frames
from concord.store import raters as rater_store
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.helpers import edit_settings
from tests.pair_helpers import STRENGTH, seed_pair_study

N_BOOT = 150
GOLD = "p0,alpha,pair,delta\np1,gamma,pair,beta\n"


def stats_json(capsys, db_path, study: str) -> dict:
    assert main(["--db", str(db_path), "stats", "--study", study, "--json", "--n-boot",
                 str(N_BOOT), "--n-perm", "50"]) == 0
    out = capsys.readouterr().out
    return json.loads(out)  # strict JSON: NaN would not parse back as null


pytestmark = pytest.mark.both_engines


@pytest.fixture
def duel(database_at, tmp_path):
    db_path = database_at("pairs")
    db = open_db(db_path)
    seed_pair_study(db, tmp_path, extra="pairs:\n  pairs_per_prompt: 3\n", gold=GOLD)
    yield db, db_path
    db.close()


def _rows(doc: dict, section: str, **match) -> list[dict]:
    return [r for r in doc["pairs"][section] if all(r.get(k) == v for k, v in match.items())]


def _data(db, study="duel"):
    df = frames.pairs_frame(db, study_store.get_study(db, study).id)
    return df[df["gold_model"].isna()].reset_index(drop=True), df[df["gold_model"].notna()]


def test_report_numbers_are_the_statistics_of_the_stored_judgments(duel, capsys):
    db, db_path = duel
    doc = stats_json(capsys, db_path, "duel")
    data, gold = _data(db)
    assert doc["meta"]["n_pair_judgments"] == len(data) == 8 * 3 * 3
    assert doc["meta"]["n_gold_pair_judgments"] == len(gold) == 2 * 3
    assert doc["meta"]["n_models"] == 4 and doc["meta"]["n_raters"] == 3
    for tie_model in ("davidson", "half"):
        expect = bradley_terry(data, tie_model=tie_model, n_boot=N_BOOT, seed=0)
        got = _rows(doc, "bradley_terry", source="pairs", tie_model=tie_model)
        assert [r["model"] for r in got] == expect["model"].tolist()
        for r, e in zip(got, expect.itertuples(), strict=True):
            assert r["score"] == pytest.approx(e.score, abs=1e-9)
            assert r["score_ci_low"] == pytest.approx(e.score_ci_low, abs=1e-9)
            assert r["n_judgments"] == len(data) and r["study"] == "duel"
    assert [r["model"] for r in _rows(doc, "bradley_terry", tie_model="half")] == \
        ["alpha", "beta", "gamma", "delta"]  # the simulated order of strength
    wins = win_rates(data, n_boot=N_BOOT, seed=0).set_index("model")
    for r in doc["pairs"]["win_rates"]:
        assert r["win_rate"] == pytest.approx(wins.loc[r["model"], "win_rate"], abs=1e-12)
        assert r["win_rate_ci_high"] == pytest.approx(wins.loc[r["model"],
                                                               "win_rate_ci_high"], abs=1e-12)
    elo = elo_ratings(data, k=4, n_perm=100, seed=0).set_index("model")["elo"]
    assert {r["model"]: r["elo_perm_mean"] for r in doc["pairs"]["elo_perm_mean"]} == \
        pytest.approx(elo.to_dict())
    online = elo_online(data, k=4, n_boot=N_BOOT, seed=0).set_index("model")
    for r in doc["pairs"]["elo_online"]:  # the votes in the order they were stored
        assert r["elo_online"] == pytest.approx(online.loc[r["model"], "elo"], abs=1e-9)
        assert r["elo_online_ci_low"] == pytest.approx(online.loc[r["model"], "elo_ci_low"],
                                                       abs=1e-9)
    assert doc["meta"]["pairs"] == {"both_bad": "tie", "elo_k": 4.0, "elo_orders": 100,
                                    "bt_prior": 0.0, "scale": 400.0, "odds": 10.0,
                                    "initial": 1000.0, "bootstrap": "prompt"}
    (bias,) = doc["pairs"]["position_bias"]
    assert bias["p_value"] == pytest.approx(pair_position_bias(data)["p_value"][0])
    assert len(doc["pairs"]["position_bias_raters"]) == 3
    alpha = pair_agreement(data, by=["study"])["alpha_nominal"][0]
    assert _rows(doc, "agreement", both_bad="tie")[0]["alpha_nominal"] == pytest.approx(alpha)


def test_metric_pair_accuracy_uses_the_image_scores(duel, capsys):
    db, db_path = duel
    doc = stats_json(capsys, db_path, "duel")
    data, _ = _data(db)
    scores = frames.scores_frame(db, study_store.get_study(db, "duel").id)
    expect = metric_pair_accuracy(data, scores[["image_id", "value"]], n_boot=N_BOOT)
    (row,) = _rows(doc, "metric_accuracy", source="pairs")
    assert (row["metric"], row["judge"]) == ("vqascore", "")
    assert row["accuracy"] == pytest.approx(expect["accuracy"], abs=1e-12)
    assert row["n_pairs"] == expect["n_pairs"] > 0
    assert row["accuracy"] > 0.6  # the scores follow the simulated strengths


def test_gold_pairs_count_only_for_rater_quality(duel, capsys):
    db, db_path = duel
    doc = stats_json(capsys, db_path, "duel")
    _, gold = _data(db)
    gold_rows = [r for r in doc["raters"]["gold"] if r["unit"] == "pair"]
    assert {r["rater"] for r in gold_rows} == {"ann", "ben", "cat"}
    for r in gold_rows:
        mine = gold[gold["rater"] == r["rater"]]
        picked = [row.left_model if row.outcome == "left" else row.right_model
                  if row.outcome == "right" else None for row in mine.itertuples()]
        right = sum(p == g for p, g in zip(picked, mine["gold_model"], strict=True))
        assert (r["n_gold"], r["n_correct"]) == (2, right)
    failing = {r["rater"] for r in gold_rows if r["accuracy"] < 0.75}
    flagged = {r["rater"] for r in doc["raters"]["flags"] if r["flag"] == "gold_failures"}
    assert flagged == failing


def test_excluded_raters_are_left_out(duel, capsys):
    db, db_path = duel
    exclusions.exclude_rater(db, "duel", "cat", "clicked at random")
    doc = stats_json(capsys, db_path, "duel")
    data, _ = _data(db)
    kept = data[data["rater"] != "cat"]
    assert doc["meta"]["n_pair_judgments"] == len(kept) and doc["meta"]["n_raters"] == 2
    assert {r["rater"] for r in doc["pairs"]["position_bias_raters"]} == {"ann", "ben"}
    expect = bradley_terry(kept, n_boot=N_BOOT, seed=0)
    got = _rows(doc, "bradley_terry", tie_model="davidson")
    assert [r["score"] for r in got] == pytest.approx(expect["score"].tolist(), abs=1e-9)


def test_rankings_and_pairs_of_one_study_are_on_one_scale(database_at, tmp_path, capsys):
    db_path = database_at("both")
    db = open_db(db_path)
    seed_pair_study(db, tmp_path, "mix", protocol="rank", scores=False,
                    extra="pairs:\n  pairs_per_prompt: 2\n")
    rnd = random.Random(1)
    for rater in ("ann", "ben", "cat"):
        rid = rater_store.get_rater(db, rater).id
        while (rs := ranking.next_set(db, "mix", rid)) is not None:
            # wide noise: every group of models must sometimes lose (a finite BT fit)
            noisy = {im.image_id: STRENGTH[_model(db, im.image_id)] * rnd.uniform(0.2, 1.8)
                     for im in rs.images}
            ranking.submit(db, "mix", rid, rs, [[i] for i in sorted(noisy, key=noisy.get,
                                                                    reverse=True)])
    doc = stats_json(capsys, db_path, "mix")
    rankings = frames.rankings_frame(db, study_store.get_study(db, "mix").id)
    expect = bradley_terry(pairs_from_rankings(rankings), n_boot=N_BOOT, seed=0)
    got = _rows(doc, "bradley_terry", source="rankings", tie_model="davidson")
    assert [r["model"] for r in got] == expect["model"].tolist() == list(STRENGTH)
    assert [r["score"] for r in got] == pytest.approx(expect["score"].tolist(), abs=1e-9)
    half = _rows(doc, "bradley_terry", source="rankings", tie_model="half")
    assert [r["score"] for r in half] == [r["score"] for r in got]  # no tie: plain BT
    assert got[0]["n_judgments"] == 8 * 3 * 6  # 8 prompts × 3 raters × C(4, 2)
    from_pairs = _rows(doc, "bradley_terry", source="pairs", tie_model="davidson")
    both = [r["score"] for r in from_pairs] + [r["score"] for r in got]
    assert sum(r["score"] for r in got) / 4 == pytest.approx(1000)  # one anchor: the mean
    assert sum(r["score"] for r in from_pairs) / 4 == pytest.approx(1000) and len(both) == 8
    db.close()


def _model(db, image_id: int) -> str:
    return db.execute("SELECT m.name FROM images i JOIN models m ON m.id = i.model_id"
                      " WHERE i.id = ?", [image_id]).fetchone()[0]


def test_what_cannot_be_computed_is_reported_not_raised(database_at, tmp_path, capsys):
    db_path = database_at("one")
    db = open_db(db_path)
    seed_pair_study(db, tmp_path, "sweep", scores=False, raters=("ann",), prompts=2)
    db.execute("UPDATE pair_judgments SET outcome = CASE WHEN left_image IN (SELECT i.id FROM"
               " images i JOIN models m ON m.id = i.model_id WHERE m.name = 'alpha') THEN"
               " 'left' WHEN right_image IN (SELECT i.id FROM images i JOIN models m ON"
               " m.id = i.model_id WHERE m.name = 'alpha') THEN 'right' ELSE outcome END")
    db.conn.commit()
    doc = stats_json(capsys, db_path, "sweep")
    problems = doc["pairs"]["problems"]
    assert {p["section"] for p in problems} >= {"bradley_terry"}
    assert any("alpha" in p["message"] for p in problems)
    assert doc["pairs"]["win_rates"][0]["model"] == "alpha"
    assert doc["pairs"]["win_rates"][0]["win_rate"] == 1.0
    assert main(["--db", str(db_path), "stats", "--study", "sweep", "--n-boot", "20"]) == 0
    text = capsys.readouterr().out
    assert "Pairs: win rates" in text and "Pairs: not computed" in text
    db.close()


def test_pair_score_conventions_from_the_cli_and_the_study(duel, capsys):
    db, db_path = duel
    data, _ = _data(db)
    assert main(["--db", str(db_path), "stats", "--study", "duel", "--json", "--n-boot",
                 str(N_BOOT), "--n-perm", "50", "--bt-prior", "0.5", "--elo-scale", "173.72",
                 "--elo-base", "2.718281828459045", "--elo-initial", "1500",
                 "--pair-bootstrap", "vote"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["meta"]["pairs"]["bt_prior"] == 0.5 and doc["meta"]["pairs"]["bootstrap"] == "vote"
    expect = bradley_terry(data, tie_model="half", prior=0.5, n_boot=N_BOOT, seed=0,
                           base=1500, scale=173.72, odds=2.718281828459045)
    got = _rows(doc, "bradley_terry", source="pairs", tie_model="half")
    assert [r["score"] for r in got] == pytest.approx(expect["score"].tolist(), abs=1e-9)
    assert sum(r["score"] for r in got) / len(got) == pytest.approx(1500)
    online = elo_online(data, k=4, initial=1500, scale=173.72, base=2.718281828459045)
    assert {r["model"]: r["elo_online"] for r in doc["pairs"]["elo_online"]} == \
        pytest.approx(online.set_index("model")["elo"].to_dict())
    # the study's own settings are the defaults; a bad one is one line
    edit_settings(db, "duel", lambda s: s.setdefault("pair_scores", {}).update(bt_prior=2))
    assert main(["--db", str(db_path), "stats", "--study", "duel", "--json", "--n-boot",
                 "20", "--n-perm", "20"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["pairs"]["bt_prior"] == 2
    assert main(["--db", str(db_path), "stats", "--study", "duel", "--elo-base", "1"]) == 1
    assert "odds must not be 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse refuses it with the usage
        main(["--db", str(db_path), "stats", "--study", "duel", "--bt-prior", "-1"])
    assert "expected a number >= 0" in capsys.readouterr().err
