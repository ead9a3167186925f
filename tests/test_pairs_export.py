"""Pair judgments in the label exports: `kind = pair` rows in CSV, JSONL and Parquet."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from concord import export
from concord.cli import main
from concord.services import exclusions
from concord.services.exports import labels
from concord.services.imports.ratings import import_ratings
from concord.store import frames
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.pair_helpers import seed_pair_study

pytestmark = pytest.mark.both_engines


def _current(db):
    return frames.pairs_frame(db, study_store.get_study(db, "duel").id)


def test_every_current_judgment_is_one_pair_row(database_at, tmp_path):
    db = open_db(database_at("x"))
    seed_pair_study(db, tmp_path, prompts=2, scores=False, gold="p0,alpha,pair,beta\n",
                    extra="pairs:\n  pairs_per_prompt: 2\n")
    current = _current(db)
    csv = pd.read_csv(io.BytesIO(labels.export_bytes(db, "duel", "csv")))
    assert csv.columns.tolist() == export.COLUMNS
    rows = csv[csv["kind"] == "pair"]
    assert len(rows) == len(current) == 5 * 3  # (2 prompts × 2 pairs + 1 gold) × 3 raters
    got = sorted(zip(rows.rater, rows.left_model, rows.right_model, rows.outcome,
                     strict=True))
    want = sorted(zip(current.rater, current.left_model, current.right_model,
                      current.outcome, strict=True))
    assert got == want
    assert rows["model"].isna().all() and rows["value"].isna().all()
    assert set(rows["criterion"]) == {"overall"} and (rows["seconds"] >= 0).all()
    jsonl = [json.loads(line) for line in labels.export_bytes(db, "duel", "jsonl").splitlines()]
    pair_rows = [r for r in jsonl if r["kind"] == "pair"]
    assert len(pair_rows) == 15 and {r["outcome"] for r in pair_rows} <= {
        "left", "right", "tie", "both_bad"}
    parquet = pd.read_parquet(io.BytesIO(labels.export_bytes(db, "duel", "parquet")))
    assert (parquet["kind"] == "pair").sum() == len(current)
    db.close()


def test_excluded_raters_are_left_out_unless_asked(database_at, tmp_path, capsysbinary):
    db_path = database_at("x")
    db = open_db(db_path)
    seed_pair_study(db, tmp_path, prompts=1, scores=False)
    exclusions.exclude_rater(db, "duel", "ben", "test")
    assert main(["--db", str(db_path), "export", "--study", "duel"]) == 0
    rows = pd.read_csv(io.BytesIO(capsysbinary.readouterr().out))
    assert set(rows["rater"]) == {"ann", "cat"} and len(rows) == 2 * 6
    assert main(["--db", str(db_path), "export", "--study", "duel",
                 "--include-excluded"]) == 0
    rows = pd.read_csv(io.BytesIO(capsysbinary.readouterr().out))
    assert set(rows["rater"]) == {"ann", "ben", "cat"} and len(rows) == 3 * 6
    db.close()


def test_an_export_with_pair_rows_imports_its_ratings_and_its_judgments(database_at,
                                                                         tmp_path):
    db = open_db(database_at("x"))
    seed_pair_study(db, tmp_path, prompts=1, scores=False)
    path = tmp_path / "labels.csv"
    path.write_bytes(labels.export_bytes(db, "duel", "csv"))
    back = open_db(database_at("back"))
    done = import_ratings(back, "back", "csv", path)  # pair rows are judgments
    assert done.rows == 0 and done.labels.written["pair"].added == len(_current(db)) == 18
    with path.open("a") as f:  # one rating among the pair rows: both are imported
        f.write('"duel","rating","p0","a photo",alpha,0,"ann","likert",4,,,,,,,,,,\n')
    done = import_ratings(back, "again", "csv", path, rubric=["likert-5"])
    assert done.added == 1 and done.labels.written["pair"].added == 18
    assert labels.ratings(back, "again")[["model", "criterion", "value"]].values.tolist() == [
        ["alpha", "likert", 4.0]]
    back.close()
    db.close()
