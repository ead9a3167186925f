"""Free-text comments per item (study setting ``comments``): kept with the label revision,
exported beside it, imported from Label Studio TextArea results; and Label Studio's
Pairwise and Ranker results as pair votes and rankings."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from concord.cli import main
from concord.errors import RatingError
from concord.services import studies
from concord.services.exports import labels
from concord.services.labelling import pairs, ranking, rating
from concord.services.labelling.common import new_submission
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.foundation_helpers import invited, make_folder_study

pytestmark = pytest.mark.both_engines


def _study(db, tmp_path, mode: str, protocol: str = "both"):
    extra = f"comments: {mode}\n" if mode != "off" else ""
    studies.import_manifest(db, make_folder_study(tmp_path / "c", prompts=2, k=2,
                                                  protocol=protocol, extra=extra))
    return invited(db, "c", "ann")


def _export(db) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(labels.export_bytes(db, "c", "csv")))


def test_a_comment_is_kept_with_its_revision_and_exported(db, tmp_path):
    rid = _study(db, tmp_path, "optional")
    item = rating.next_item(db, "c", rid)
    rating.submit(db, "c", rid, item.image_id, {"SC": 1, "PR": 0.5},
                  submission=new_submission(), comment="  the dog has five legs \n")
    other = rating.next_item(db, "c", rid)
    rating.submit(db, "c", rid, other.image_id, {"SC": 0, "PR": 0}, submission=new_submission())
    rows = _export(db)
    commented = rows[rows["comment"].notna()]
    assert commented["comment"].unique().tolist() == ["the dog has five legs"]
    assert len(commented) == 2  # both criteria rows of that image
    # an edit with another comment: the export shows the new one, the history keeps both
    rating.submit(db, "c", rid, item.image_id, {"SC": 0.5, "PR": 0.5},
                  submission=new_submission(), edit=True, comment="on second look, four")
    assert _export(db)["comment"].dropna().unique().tolist() == ["on second look, four"]
    kept = [r[0] for r in db.execute("SELECT text FROM comments ORDER BY id")]
    assert kept == ["the dog has five legs", "on second look, four"]


def test_rankings_and_pairs_take_comments(db, tmp_path):
    studies.import_manifest(db, make_folder_study(
        tmp_path / "c", prompts=1, models=("m1", "m2", "m3"), protocol="rank", k=2,
        extra="comments: optional\npairs:\n  pairs_per_prompt: 1\n"))
    rid = invited(db, "c", "bo")
    rank_set = ranking.next_set(db, "c", rid)
    ranking.submit(db, "c", rid, rank_set, [[im.image_id] for im in rank_set.images],
                   comment="hard call")
    pair = pairs.next_pair(db, "c", rid)
    pairs.submit(db, "c", rid, pair, "left", comment="left is sharper")
    rows = _export(db)
    bo = rows[(rows["rater"] == "bo")]
    assert set(bo.loc[bo["kind"] == "ranking", "comment"]) == {"hard call"}
    assert bo.loc[bo["kind"] == "pair", "comment"].tolist() == ["left is sharper"]


@pytest.mark.parametrize(("mode", "text", "says"), [
    ("off", "hello", "takes no comments"),
    ("required", "   ", "write a comment"),
    ("optional", "x" * 10_001, "at most 10,000"),
    ("optional", "a\x00b", r"U\+0000"),
    ("optional", "a\u2028b", r"U\+2028"),
])
def test_comment_rules(db, tmp_path, mode, text, says):
    rid = _study(db, tmp_path, mode)
    item = rating.next_item(db, "c", rid)
    with pytest.raises(RatingError, match=says):
        rating.submit(db, "c", rid, item.image_id, {"SC": 1, "PR": 1},
                      submission=new_submission(), comment=text)
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 0


def test_a_bad_comments_setting_is_refused_at_import(db, tmp_path):
    with pytest.raises(Exception, match="comments"):
        studies.import_manifest(db, make_folder_study(tmp_path / "c", extra="comments: yes\n"))


TASKS = [
    {"id": 11, "data": {"prompt_id": "p1", "model_a": "flux", "model_b": "sdxl",
                        "prompt": "a cat"},
     "annotations": [
         {"completed_by": {"email": "ann@x.org"}, "lead_time": 3.5,
          "created_at": "2024-03-01T10:00:00Z",
          "result": [{"from_name": "better", "type": "pairwise",
                      "value": {"selected": "right"}},
                     {"from_name": "note", "type": "textarea", "value": {"text": ["blurry"]}}]},
         {"completed_by": 7, "was_cancelled": True, "result": []}]},
    {"id": 12, "data": {"prompt_id": "p2", "items": [{"id": "i1", "model": "flux"},
                                                     {"id": "i2", "model": "sdxl"},
                                                     {"id": "i3", "model": "dalle"}]},
     "annotations": [
         {"completed_by": {"email": "ann@x.org"},
          "result": [{"from_name": "rank", "type": "ranker",
                      "value": {"ranker": {"rank": ["i2", "i1", "i3"]}}}]},
         {"completed_by": {"email": "bo@x.org"},
          "result": [{"from_name": "rank", "type": "ranker",
                      "value": {"ranker": {"best": ["i1", "i3"], "worst": ["i2"]}}}]}]},
    {"id": 13, "data": {"prompt_id": "p1", "model": "flux"},
     "annotations": [{"completed_by": {"email": "ann@x.org"},
                      "result": [{"from_name": "likert", "type": "choices",
                                  "value": {"choices": ["4"]}},
                                 {"from_name": "why", "type": "textarea",
                                  "value": {"text": ["crisp", "nice colours"]}}]}]},
]


def test_label_studio_pairwise_ranker_and_textarea(tmp_path, capsys):
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(TASKS))
    db_path = tmp_path / "x.db"
    assert main(["--db", str(db_path), "import-ratings", "--study", "ls", "--format",
                 "label-studio", "--rubric", "likert-5", str(path)]) == 0
    said = capsys.readouterr().out
    assert "1 votes read: 1 added" in said and "2 rankings read: 2 added" in said
    assert "2 comment(s) read: 2 kept" in said
    db = open_db(db_path)
    rows = pd.read_csv(io.BytesIO(labels.export_bytes(db, "ls", "csv")))
    pair = rows[rows["kind"] == "pair"].iloc[0]
    assert (pair.left_model, pair.right_model, pair.outcome, pair.comment, pair.seconds) == (
        "flux", "sdxl", "right", "blurry", 3.5)
    ranks = rows[rows["kind"] == "ranking"]
    got = {(r.rater, r.model): r["rank"] for _, r in ranks.iterrows()}
    assert got == {("ann@x.org", "sdxl"): 1, ("ann@x.org", "flux"): 2,
                   ("ann@x.org", "dalle"): 3, ("bo@x.org", "flux"): 1.5,
                   ("bo@x.org", "dalle"): 1.5, ("bo@x.org", "sdxl"): 3}
    rated = rows[rows["kind"] == "rating"].iloc[0]
    assert (rated.value, rated.comment) == (4, "crisp\nnice colours")
    assert study_store.get_study(db, "ls").rubric == "likert-5"
    db.close()


@pytest.mark.parametrize(("edit", "field", "says"), [
    (lambda t: t[0]["annotations"][0]["result"][0]["value"].update(selected="up"),
     "[0].annotations[0].result[0].value.selected", "'left' or 'right'"),
    (lambda t: t[0]["data"].pop("model_b"), "[0].data.model_b", "empty value"),
    (lambda t: t[0]["data"].update(model_b="flux"), "[0].data.model_b", "against itself"),
    (lambda t: t[1]["annotations"][0]["result"][0]["value"]["ranker"].update(rank=["i9"]),
     "[1].annotations[0].result[0].value.ranker.rank", "ids of data.items"),
    (lambda t: t[1]["annotations"][1]["result"][0]["value"]["ranker"].update(_=["i2"]),
     "[1].annotations[1].result[0].value.ranker._", "left unranked"),
    (lambda t: t[1]["data"].pop("items"), "[1].data.items", "ranked items"),
    (lambda t: t[2]["annotations"][0]["result"][1]["value"].update(text=[7]),
     "[2].annotations[0].result[1].value.text", "list of texts"),
])
def test_bad_label_studio_labels_name_task_and_field(tmp_path, capsys, edit, field, says):
    tasks = json.loads(json.dumps(TASKS))
    edit(tasks)
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(tasks))
    assert main(["--db", str(tmp_path / "x.db"), "import-ratings", "--study", "ls",
                 "--format", "label-studio", "--rubric", "likert-5", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"field '{field}'" in err and says in err, err
    db = open_db(tmp_path / "x.db")
    assert db.execute("SELECT COUNT(*) FROM studies").fetchone()[0] == 0
    db.close()
