"""Revision history export: every revision (edits, undos) with rater, times, action,
submission and seconds; pending import batches stay out; file type by suffix."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from concord.cli import main
from concord.services import adjudication, studies
from concord.services.exports import labels
from concord.services.exports import tables as export_tables
from concord.services.labelling import ranking, rating
from concord.store.imports import batches
from tests.foundation_helpers import invited, make_folder_study, study_id
from tests.helpers import target_of

pytestmark = pytest.mark.both_engines


@pytest.fixture
def edited(db, tmp_path):
    studies.import_manifest(db, make_folder_study(tmp_path / "h", prompts=2, protocol="both",
                                                  k=1))
    rid = invited(db, "h", "ann")
    first = rating.next_item(db, "h", rid).image_id
    rating.submit(db, "h", rid, first, {"SC": 0, "PR": 1}, submission="s-rate")
    rating.submit(db, "h", rid, first, {"SC": 1, "PR": 1}, submission="s-edit", edit=True)
    second = rating.next_item(db, "h", rid).image_id
    rating.submit(db, "h", rid, second, {"SC": 0.5, "PR": 0}, submission="s-second")
    rating.undo_last(db, "h", rid)
    rank_set = ranking.next_set(db, "h", rid)
    ranking.submit(db, "h", rid, rank_set, [[im.image_id] for im in rank_set.images])
    ranking.undo_last(db, "h", rid)
    return db


def test_every_revision_is_exported_with_its_action(edited):
    frame = export_tables.history_frame(edited, "h")
    ratings = frame[frame["kind"] == "rating"]
    # rate (2 criteria) + edit (2) + rate (2) + undo (2)
    assert ratings["action"].tolist() == ["rate"] * 2 + ["edit"] * 2 + ["rate"] * 2 + \
        ["undo"] * 2
    assert ratings["submission"].tolist()[:4] == ["s-rate", "s-rate", "s-edit", "s-edit"]
    undo = ratings[ratings["action"] == "undo"]
    assert undo["value"].isna().all() and undo["seconds"].isna().all()
    assert ratings[ratings["submission"] == "s-rate"]["seconds"].notna().all()
    assert set(ratings["rater"]) == {"ann"} and ratings["time"].is_monotonic_increasing
    assert ratings["revision"].tolist()[:4] == [1, 1, 2, 2]
    ranks = frame[frame["kind"] == "ranking"]
    assert ranks["action"].tolist() == ["rank", "rank", "undo"]
    assert ranks["rank"].tolist()[:2] == [1.0, 2.0] and math.isnan(ranks["rank"].iloc[2])
    # the current labels are what the history ends in
    current = labels.ratings(edited, "h")
    assert current[["criterion", "value"]].values.tolist() == [["PR", 1.0], ["SC", 1.0]]


def test_ratings_of_a_pending_import_batch_are_left_out(edited):
    before = len(export_tables.history_frame(edited, "h"))
    batch = batches.begin(edited, study_id=study_id(edited, "h"), new=None, source="x.csv")
    row = edited.execute("SELECT image_id, rater_id FROM ratings LIMIT 1").fetchone()
    edited.execute(
        "INSERT INTO ratings (study_id, image_id, rater_id, criterion, value, revision,"
        " submission, action, created_at, batch) VALUES (?, ?, ?, 'SC', 0, 99, 'pending',"
        " 'import', '2030-01-01', ?)", [study_id(edited, "h"), *row, batch.id])
    assert len(export_tables.history_frame(edited, "h")) == before
    batches.discard(edited, batch.id)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_cli_writes_the_history_by_suffix(edited, tmp_path, suffix):
    out = tmp_path / f"history{suffix}"
    assert main(["--db", target_of(edited), "export", "--study", "h", "--format", "history",
                 "-o", str(out)]) == 0
    if suffix == ".csv":
        back = pd.read_csv(out)
    elif suffix == ".jsonl":
        back = pd.DataFrame([json.loads(line) for line in out.read_text().splitlines()])
    else:
        back = pd.read_parquet(out)
    assert back["action"].tolist() == export_tables.history_frame(edited, "h")["action"].tolist()
    assert back["value"].isna().sum() == 2 + 3  # rating undo (2) + ranking rows (3)


def test_cli_refuses_an_unknown_suffix_and_exports_adjudications(edited, tmp_path, capsys):
    db_file = target_of(edited)
    assert main(["--db", db_file, "export", "--study", "h", "--format", "history",
                 "-o", str(tmp_path / "h.txt")]) == 1
    assert "end it in .csv, .jsonl or .parquet" in capsys.readouterr().err
    assert not (tmp_path / "h.txt").exists()
    image = export_tables.history_frame(edited, "h")
    item = adjudication.queue(edited, "h", "score", min_raters=1)[0]
    adjudication.set_value(edited, "h", "score", item["item_id"], item["criterion"], 0)
    assert main(["--db", db_file, "export", "--study", "h", "--format", "adjudications",
                 "--as", "jsonl"]) == 0
    [row] = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert row["unit"] == "image" and row["value"] == 0 and row["prompt_id"] in set(
        image["prompt_id"])
