"""Adjudication service: most disagreed items, answers side by side, adjudicated values
stored apart from the raw labels, audit log, export."""

from __future__ import annotations

import pytest

from concord.errors import ConcordError, NotFoundError
from concord.services import adjudication, studies
from concord.services.exports import labels
from concord.services.labelling import ranking, rating
from concord.services.labelling.common import new_submission
from tests.foundation_helpers import invited, make_folder_study, snapshot
from tests.helpers import study_report, target_of
from tests.pair_helpers import seed_pair_study

pytestmark = pytest.mark.both_engines

# Per rater: SC of the images in serving order; image 0 gets 0 / 1 / 1 (split).
SC = {"ann": 0, "ben": 1, "cat": 1}


@pytest.fixture
def rated(db, tmp_path):
    studies.import_manifest(db, make_folder_study(tmp_path / "adj", prompts=2,
                                                  protocol="both", k=3))
    for n, name in enumerate(SC):
        rid = invited(db, "adj", name)
        first = True
        while (item := rating.next_item(db, "adj", rid)) is not None:
            sc = SC[name] if first else 1  # only each rater's first image disagrees
            rating.submit(db, "adj", rid, item.image_id, {"SC": sc, "PR": 1},
                          submission=new_submission())
            first = False
        while (rank_set := ranking.next_set(db, "adj", rid)) is not None:
            groups = [[im.image_id] for im in rank_set.images]
            ranking.submit(db, "adj", rid, rank_set, groups if n % 2 else groups[::-1])
    return db


def test_scores_queue_lists_the_split_image_first_with_every_answer(rated):
    items = adjudication.queue(rated, "adj", "score")
    top = items[0]
    assert top["criterion"] == "SC" and top["range"] == 1 and top["n_raters"] == 3
    assert [a["rater"] for a in top["answers"]] == ["ann", "ben", "cat"]
    assert sorted(a["answer"] for a in top["answers"]) == ["0", "1", "1"]
    assert top["paths"][0].endswith(".png")
    assert {0, 0.5, 1} <= set(top["options"])  # the rubric's SC scale
    assert top["adjudicated"] is None
    assert all(i["range"] <= top["range"] for i in items)
    assert adjudication.queue(rated, "adj", "score", criterion="PR", limit=1)[0]["range"] == 0


def test_rank_queue_measures_one_minus_kendall_w(rated):
    items = adjudication.queue(rated, "adj", "rank")
    assert items and items[0]["kendall_w"] < 1
    assert items[0]["disagreement"] == pytest.approx(1 - items[0]["kendall_w"])
    assert len(items[0]["answers"]) == 3 and " > " in items[0]["answers"][0]["answer"]


def test_adjudicating_keeps_raw_labels_and_statistics(rated):
    before = snapshot(rated)
    stats_before = study_report(rated, "adj", n_boot=10, n_perm=10)["agreement"]
    top = adjudication.queue(rated, "adj", "score")[0]
    stored = adjudication.set_value(rated, "adj", "score", top["item_id"], "SC", "1",
                                    note="two of three", actor="lead")
    assert stored == 1.0
    after = snapshot(rated)
    changed = {t for t in before if before[t] != after[t]}
    assert changed == {"audit_log"}  # ratings, rankings, pairs untouched
    assert study_report(rated, "adj", n_boot=10, n_perm=10)["agreement"] \
        == stats_before
    log = rated.execute("SELECT actor, action, detail FROM audit_log ORDER BY id DESC"
                        " LIMIT 1").fetchone()
    assert log[:2] == ("lead", "adjudicate") and '"value":1.0' in log[2]
    assert adjudication.queue(rated, "adj", "score")[0]["adjudicated"] == 1.0
    frame = adjudication.adjudications_frame(rated, "adj")
    assert frame[["unit", "criterion", "value", "note"]].values.tolist() == [
        ["image", "SC", 1.0, "two of three"]]
    adjudication.clear(rated, "adj", "score", top["item_id"], "SC", actor="lead")
    assert adjudication.adjudications_frame(rated, "adj").empty
    assert rated.execute("SELECT COUNT(*) FROM adjudications").fetchone()[0] == 2


def test_adjudicated_ranking_names_each_model_once(rated):
    item = adjudication.queue(rated, "adj", "rank")[0]
    crit = item["criterion"]
    with pytest.raises(ConcordError, match="each model of the set once"):
        adjudication.set_value(rated, "adj", "rank", item["item_id"], crit, ["m1", "m1"])
    adjudication.set_value(rated, "adj", "rank", item["item_id"], crit, "m2, m1")
    frame = adjudication.adjudications_frame(rated, "adj")
    assert frame["ranking"].tolist() == ["m2 > m1"]


def test_a_ranking_is_set_as_list_prints_it(rated):
    item = adjudication.queue(rated, "adj", "rank")[0]
    printed = item["answers"][0]["answer"]  # 'm1 > m2', as `adjudicate list` shows it
    assert " > " in printed
    stored = adjudication.set_value(rated, "adj", "rank", item["item_id"], item["criterion"],
                                    printed)
    assert stored == printed.split(" > ")
    with pytest.raises(ConcordError, match=r"strict order.*'m1 = m2' ties models"):
        adjudication.set_value(rated, "adj", "rank", item["item_id"], item["criterion"],
                               "m1 = m2")


@pytest.mark.parametrize(("view", "item", "crit", "value", "error", "match"), [
    ("score", 0, "SC", 0.7, ConcordError, "not on the scale"),
    ("score", 0, "SC", "high", ConcordError, "must be a number"),
    ("score", 0, "XX", 1, ConcordError, "not on this image's rubric"),
    ("score", 10**6, "SC", 1, NotFoundError, "no image with id"),
    ("vote", 0, "SC", 1, ConcordError, "unknown view"),
])
def test_bad_adjudications_are_refused_and_store_nothing(rated, view, item, crit, value,
                                                         error, match):
    item_id = item or adjudication.queue(rated, "adj", "score")[0]["item_id"]
    with pytest.raises(error, match=match):
        adjudication.set_value(rated, "adj", view, item_id, crit, value)
    assert rated.execute("SELECT COUNT(*) FROM adjudications").fetchone()[0] == 0


def test_pairs_queue_and_adjudication_by_model_name(db, tmp_path):
    seed_pair_study(db, tmp_path, prompts=3, scores=False)
    items = adjudication.queue(db, "duel", "pair")
    top = items[0]
    assert top["disagreement"] >= items[-1]["disagreement"]
    assert len(top["answers"]) == 3 and len(top["paths"]) == 2
    judged = labels.pair_judgments(db, "duel")
    judged = judged[judged["pair_id"] == top["item_id"]]
    names = set(judged["left_model"]) | set(judged["right_model"])
    chosen = sorted(names)[1]
    assert adjudication.set_value(db, "duel", "pair", top["item_id"], top["criterion"],
                                  chosen) in ("a", "b")
    frame = adjudication.adjudications_frame(db, "duel")
    assert frame["outcome"].tolist() == [chosen]
    with pytest.raises(ConcordError, match="one of"):
        adjudication.set_value(db, "duel", "pair", top["item_id"], top["criterion"], "nobody")


def test_cli_lists_and_sets_adjudicated_values(rated, capsys):
    from concord.cli import main

    db_file = target_of(rated)
    assert main(["--db", db_file, "adjudicate", "list", "--study", "adj", "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "ann: 0; ben: 1; cat: 1" in out
    item = adjudication.queue(rated, "adj", "score", limit=1)[0]["item_id"]
    assert main(["--db", db_file, "adjudicate", "set", "--study", "adj", "--item", str(item),
                 "--criterion", "SC", "--value", "1", "--note", "majority"]) == 0
    assert adjudication.adjudications_frame(rated, "adj")["note"].tolist() == ["majority"]
    assert main(["--db", db_file, "adjudicate", "set", "--study", "adj", "--item", str(item),
                 "--criterion", "SC", "--value", "7"]) == 1
    assert "not on the scale" in capsys.readouterr().err
    assert main(["--db", db_file, "adjudicate", "set", "--study", "adj", "--item", str(item),
                 "--criterion", "SC", "--clear"]) == 0
    assert adjudication.adjudications_frame(rated, "adj").empty
