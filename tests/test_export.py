"""Exports: tidy CSV / JSONL / Parquet rows, formula neutralising, ImagenHub TSVs, round trips."""

from __future__ import annotations

import csv
import io
import json
import math

import pandas as pd
import pyarrow.parquet as pq
import pytest

from concord import export
from concord.cli import main
from concord.importers.imagenhub_tsv import read_imagenhub_dir
from concord.services import labels, ranking, rating, studies
from concord.services.common import new_submission
from tests.foundation_helpers import invited, make_folder_study, shared_path

RATERS = ("=cmd()", "@bob", "carol")
NUMERIC = ("sample", "value", "rank", "position", "seconds")
PROMPTS = {"p0": '=HYPERLINK("http://evil","x")', "p1": "+SUM(1,1)", "p2": "-a plain dash"}


@pytest.fixture
def labelled(db, tmp_path):
    """Study 'ex': 3 prompts × 2 models, three raters who rated and ranked everything."""
    manifest = make_folder_study(tmp_path / "ex", prompts=3, protocol="both", k=3)
    rows = "".join(f'{k},"{v.replace(chr(34), chr(34) * 2)}",d{i % 2}\n'
                   for i, (k, v) in enumerate(PROMPTS.items()))
    (tmp_path / "ex" / "prompts.csv").write_text("prompt_id,prompt,dimension\n" + rows)
    studies.import_manifest(db, manifest)
    for n, name in enumerate(RATERS):
        rid = invited(db, "ex", name)
        while (item := rating.next_item(db, "ex", rid)) is not None:
            rating.submit(db, "ex", rid, item.image_id, {"SC": n % 3, "PR": 0.5},
                          submission=new_submission())
        while (rank_set := ranking.next_set(db, "ex", rid)) is not None:
            ranking.submit(db, "ex", rid, rank_set, [[im.image_id] for im in rank_set.images])
    carol = invited(db, "ex", "carol")
    first = rating.history(db, "ex", carol)[-1]["image_id"]
    rating.submit(db, "ex", carol, first, {"SC": 1, "PR": 1}, submission=new_submission(),
                  edit=True)
    return db, first


def _csv_records(data: bytes) -> list[dict]:
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
    return [_norm({k: export.unneutralise(v) for k, v in r.items()}) for r in rows]


def _norm(record: dict) -> dict:
    out = {}
    for key, value in record.items():
        if key in NUMERIC:
            value = None if value in ("", None) or (isinstance(value, float) and math.isnan(
                value)) else round(float(value), 6)
        out[key] = value
    return out


def test_csv_has_one_row_per_current_rating_and_ranked_image(labelled):
    db, _ = labelled
    data = labels.export_bytes(db, "ex", "csv")
    assert data.decode().splitlines()[0] == ",".join(export.COLUMNS)
    rows = _csv_records(data)
    kinds = [r["kind"] for r in rows]
    assert kinds.count("rating") == 3 * 6 * 2  # raters × images × criteria
    assert kinds.count("ranking") == 3 * 3 * 2  # raters × prompts × images
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 3 * 6 * 2 + 2


def test_csv_rating_rows(labelled):
    db, edited = labelled
    rows = [r for r in _csv_records(labels.export_bytes(db, "ex", "csv")) if r["kind"] == "rating"]
    first = rows[0]
    assert (first["study"], first["prompt_id"], first["prompt"]) == ("ex", "p0", PROMPTS["p0"])
    assert first["model"] in {"m1", "m2"}
    assert first["sample"] == 0
    assert first["criterion"] in {"SC", "PR"}
    assert first["rank"] is None
    assert first["time"].startswith("20")
    assert "T" in first["time"]
    carol = [r for r in rows if r["rater"] == "carol"]
    edited_model = db.execute("SELECT m.name FROM images i JOIN models m ON m.id = i.model_id"
                              " WHERE i.id = ?", [edited]).fetchone()[0]
    edited_key = db.execute("SELECT p.key FROM images i JOIN prompts p ON p.id = i.prompt_id"
                            " WHERE i.id = ?", [edited]).fetchone()[0]
    now = {(r["prompt_id"], r["model"], r["criterion"]): r for r in carol}
    assert now[(edited_key, edited_model, "SC")]["value"] == 1.0  # the edit, not the first value
    assert now[(edited_key, edited_model, "PR")]["value"] == 1.0
    others = [r for k, r in now.items() if k[:2] != (edited_key, edited_model)]
    assert {r["value"] for r in others if r["criterion"] == "SC"} == {2.0}
    assert all(r["seconds"] is not None and r["seconds"] >= 0 for r in others)


def test_csv_ranking_rows(labelled):
    db, _ = labelled
    rows = [r for r in _csv_records(labels.export_bytes(db, "ex", "csv"))
            if r["kind"] == "ranking"]
    bob = sorted((r for r in rows if r["rater"] == "@bob" and r["prompt_id"] == "p1"),
                 key=lambda r: r["rank"])
    assert [r["rank"] for r in bob] == [1.0, 2.0]
    assert [r["position"] for r in bob] == [0.0, 1.0]  # ranked in display order
    assert {r["criterion"] for r in rows} == {"overall"}
    assert all(r["value"] is None for r in rows)
    assert {r["model"] for r in bob} == {"m1", "m2"}


def test_csv_cells_that_look_like_formulas_are_neutralised(labelled):
    db, _ = labelled
    text = labels.export_bytes(db, "ex", "csv").decode()
    cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@")]
    assert "'=cmd()" in cells
    assert "'@bob" in cells
    assert "'" + PROMPTS["p0"] in cells
    assert "'+SUM(1,1)" in cells
    assert "'-a plain dash" in cells
    assert export.neutralise("fine") == "fine"
    assert export.neutralise(3) == 3


def test_jsonl_and_parquet_hold_the_same_rows(labelled, tmp_path):
    db, _ = labelled
    from_csv = _csv_records(labels.export_bytes(db, "ex", "csv"))
    lines = labels.export_bytes(db, "ex", "jsonl").decode().splitlines()
    from_jsonl = [_norm(json.loads(x)) for x in lines]
    target = tmp_path / "l.parquet"
    target.write_bytes(labels.export_bytes(db, "ex", "parquet"))
    table = pq.read_table(target)
    assert table.column_names == export.COLUMNS
    from_parquet = [_norm(r) for r in table.to_pylist()]
    assert from_jsonl == from_csv
    assert from_parquet == from_csv
    assert any(r["rater"] == "=cmd()" for r in from_jsonl)  # JSON is not neutralised


def test_empty_study_exports_a_header(db, tmp_path):
    studies.import_manifest(db, make_folder_study(tmp_path / "e", prompts=1))
    assert labels.export_bytes(db, "e", "csv").decode() == ",".join(export.COLUMNS) + "\n"
    assert labels.export_bytes(db, "e", "jsonl") == b""


def test_imagenhub_tsv_layout(labelled, tmp_path, capsys):
    db, _ = labelled
    db_path = db.conn.execute("PRAGMA database_list").fetchone()[2]
    out = tmp_path / "ih"
    assert main(["--db", db_path, "export", "--study", "ex", "--format", "imagenhub",
                 "-o", str(out)]) == 0
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.tsv"))
    assert files == sorted(f"{d}/{d}_{r}.tsv" for d in ("d0", "d1")
                           for r in ("_cmd__", "_bob", "carol"))
    text = (out / "d1" / "d1_carol.tsv").read_text()
    assert text == "uid\tm1\tm2\np1\t[2,0.5]\t[2,0.5]\n"
    assert "wrote 6 TSV file(s)" in capsys.readouterr().err


def test_imagenhub_cells_a_rater_left_out_are_empty_and_names_are_safe():
    frame = pd.DataFrame({
        "dimension": "Text-To-Image", "rater": "../../evil",
        "prompt_id": ["T/a.jpg", "T/a.jpg", "T/b.jpg", "T/b.jpg"],
        "model": ["m1", "m1", "m2", "m2"], "criterion": ["SC", "PR", "SC", "PR"],
        "value": [1.0, 0.5, 0.0, 2.0]})
    [(name, text)] = export.imagenhub_tables(frame).items()
    assert name == "Text-To-Image/Text-To-Image__.._evil.tsv"  # no separator: stays inside
    assert text == "uid\tm1\tm2\na.jpg\t[1,0.5]\t\nb.jpg\t\t[0,2]\n"


# --- round trips -------------------------------------------------------------------------

def test_csv_round_trip_into_a_new_study(labelled, tmp_path):
    db, _ = labelled
    path = tmp_path / "labels.csv"
    path.write_bytes(labels.export_bytes(db, "ex", "csv"))
    summary = labels.import_ratings(db, "copy", "csv", path)
    assert summary.created_study
    assert summary.added == 36
    cols = ["prompt_id", "model", "sample", "rater", "criterion", "value"]
    original = labels.ratings(db, "ex")[cols].sort_values(cols).reset_index(drop=True)
    copied = labels.ratings(db, "copy")[cols].sort_values(cols).reset_index(drop=True)
    assert original.equals(copied)
    assert set(copied["rater"]) == set(RATERS)
    again = labels.import_ratings(db, "copy", "csv", path)
    assert (again.added, again.changed, again.unchanged) == (0, 0, 36)


def _cells(root) -> set[tuple]:
    df = read_imagenhub_dir(root)
    return set(df[["task", "prompt_id", "model", "rater", "criterion", "value"]]
               .itertuples(index=False, name=None))


@pytest.mark.shared
def test_imagenhub_round_trip(db, tmp_path):
    src = shared_path("datasets", "imagenhub_human_ratings", "human_ratings")
    first = labels.import_ratings(db, "ih", "imagenhub", src)
    assert first.created_study
    assert first.added == first.rows
    out1 = tmp_path / "out1"
    written = export.write_imagenhub(labels.ratings(db, "ih"), out1)
    originals = sorted(p.relative_to(src) for p in src.glob("*/*.tsv"))
    assert sorted(p.relative_to(out1) for p in written) == originals
    assert _cells(out1) == _cells(src)  # every value identical to the original cells
    raw = (src / "Text-To-Image" / "Text-To-Image_rater2.tsv").read_text()
    assert "[0.5, 1]" in raw or ", " in raw  # the originals vary their spacing …
    assert ", " not in (out1 / "Text-To-Image" / "Text-To-Image_rater2.tsv").read_text()
    labels.import_ratings(db, "ih2", "imagenhub", out1)
    out2 = tmp_path / "out2"
    export.write_imagenhub(labels.ratings(db, "ih2"), out2)
    for rel in originals:  # … ours are canonical, so export → import → export is stable
        assert (out2 / rel).read_bytes() == (out1 / rel).read_bytes()
    again = labels.import_ratings(db, "ih", "imagenhub", src)
    assert (again.added, again.changed) == (0, 0)
