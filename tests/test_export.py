"""Exports: tidy CSV / JSONL / Parquet rows, formula neutralising, ImagenHub TSVs, round trips."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from concord import atomic, export
from concord.cli import main
from concord.errors import ConcordError
from concord.importers.imagenhub_tsv import read_imagenhub_dir
from concord.services import studies
from concord.services.exports import labels
from concord.services.imports.ratings import import_ratings
from concord.services.labelling import ranking, rating
from concord.services.labelling.common import new_submission
from tests.foundation_helpers import ROOT, invited, make_folder_study, shared_path
from tests.helpers import target_of

pytestmark = pytest.mark.both_engines

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
        elif key in ("left_model", "right_model", "outcome", "comment") and value == "":
            value = None  # pair columns of rating/ranking rows: CSV has no null
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
    db_path = target_of(db)
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


def test_imagenhub_tsv_guards_formula_names_and_reads_them_back(tmp_path):
    frame = pd.DataFrame({
        "dimension": "Text-To-Image", "rater": "rater1",
        "prompt_id": ["T/-p1"] * 4 + ["T/=1+1"] * 4,
        "model": ['=HYPERLINK("http://x","y")'] * 2 + ["@sum"] * 2 + ["@sum"] * 2 +
                 ['=HYPERLINK("http://x","y")'] * 2,
        "criterion": ["SC", "PR"] * 4, "value": [1.0, 0.5, 0.0, 2.0, 1, 1, 2, 2]})
    [(_, text)] = export.imagenhub_tables(frame).items()
    assert text == ("uid\t'=HYPERLINK(\"http://x\",\"y\")\t'@sum\n'-p1\t[1,0.5]\t[0,2]\n"
                    "'=1+1\t[2,2]\t[1,1]\n")
    root = tmp_path / "out"
    export.write_imagenhub(frame, root)
    back = read_imagenhub_dir(root)
    assert set(back["model"]) == set(frame["model"])
    assert set(back["prompt_id"]) == {"-p1", "=1+1"}


def test_imagenhub_tsv_refuses_a_name_with_a_tab():
    frame = pd.DataFrame({"dimension": "T", "rater": "r", "prompt_id": ["T/a", "T/a"],
                          "model": ["m\t1"] * 2, "criterion": ["SC", "PR"],
                          "value": [1.0, 1.0]})
    with pytest.raises(ConcordError, match="tab or line break"):
        export.imagenhub_tables(frame)


# --- round trips -------------------------------------------------------------------------

def test_csv_round_trip_into_a_new_study(labelled, tmp_path):
    db, _ = labelled
    path = tmp_path / "labels.csv"
    path.write_bytes(labels.export_bytes(db, "ex", "csv"))
    summary = import_ratings(db, "copy", "csv", path)
    assert summary.created_study
    assert summary.added == 36
    cols = ["prompt_id", "model", "sample", "rater", "criterion", "value"]
    original = labels.ratings(db, "ex")[cols].sort_values(cols).reset_index(drop=True)
    copied = labels.ratings(db, "copy")[cols].sort_values(cols).reset_index(drop=True)
    assert original.equals(copied)
    assert set(copied["rater"]) == set(RATERS)
    again = import_ratings(db, "copy", "csv", path)
    assert (again.added, again.changed, again.unchanged) == (0, 0, 36)


def _cells(root) -> set[tuple]:
    df = read_imagenhub_dir(root)
    return set(df[["task", "prompt_id", "model", "rater", "criterion", "value"]]
               .itertuples(index=False, name=None))


@pytest.mark.shared
def test_imagenhub_round_trip(db, tmp_path):
    src = shared_path("datasets", "imagenhub_human_ratings", "human_ratings")
    first = import_ratings(db, "ih", "imagenhub", src)
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
    import_ratings(db, "ih2", "imagenhub", out1)
    out2 = tmp_path / "out2"
    export.write_imagenhub(labels.ratings(db, "ih2"), out2)
    for rel in originals:  # … ours are canonical, so export → import → export is stable
        assert (out2 / rel).read_bytes() == (out1 / rel).read_bytes()
    again = import_ratings(db, "ih", "imagenhub", src)
    assert (again.added, again.changed) == (0, 0)


# --- atomic outputs ------------------------------------------------------------------------

# Runs the CLI with every write under SLOW_DIR stalled half-way (after SLOW_AFTER whole
# writes), so the test can kill -9 it mid-write whatever way the export writes its files.
_STALLING_CLI = r"""
import builtins, io, os, sys, time
slow_dir, allowed = os.environ["SLOW_DIR"], [int(os.environ["SLOW_AFTER"])]
real_open = io.open

class Stalling:
    def __init__(self, handle):
        self._handle = handle
    def write(self, data):
        if allowed[0] > 0:
            allowed[0] -= 1
            return self._handle.write(data)
        self._handle.write(data[: len(data) // 2])
        self._handle.flush()
        os.fsync(self._handle.fileno())
        print("stalled", flush=True)
        time.sleep(600)
    def __getattr__(self, name):
        return getattr(self._handle, name)
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return self._handle.__exit__(*exc)

def stalling_open(file, mode="r", *args, **kwargs):
    handle = real_open(file, mode, *args, **kwargs)
    writing = any(c in mode for c in "wxa")
    if writing and os.path.abspath(os.fspath(file)).startswith(slow_dir):
        return Stalling(handle)
    return handle

builtins.open = io.open = stalling_open
from concord.cli import main
from concord.errors import ConcordError
sys.exit(main())
"""


def _db_path(db) -> str:
    return target_of(db)


def _kill_mid_write(argv: list[str], slow_dir: Path, after: int) -> None:
    """Run the CLI, wait until a write under ``slow_dir`` is half done, then SIGKILL it."""
    env = {**os.environ, "SLOW_DIR": str(slow_dir), "SLOW_AFTER": str(after)}
    proc = subprocess.Popen([sys.executable, "-c", _STALLING_CLI, *argv], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        line = proc.stdout.readline() if ready else ""
        assert line.strip() == "stalled", f"export never wrote: {proc.stderr.read()}"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _visible(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def _edit_a_rating(db) -> None:
    """Carol changes a rating: the next export differs from the last one."""
    carol = invited(db, "ex", "carol")
    image = rating.history(db, "ex", carol)[0]["image_id"]
    rating.submit(db, "ex", carol, image, {"SC": 0, "PR": 0}, submission=new_submission(),
                  edit=True)


def test_a_csv_export_killed_mid_write_leaves_the_previous_file(labelled, tmp_path):
    db, _ = labelled
    out = tmp_path / "exports"
    out.mkdir()
    target = out / "labels.csv"
    assert main(["--db", _db_path(db), "export", "--study", "ex", "-o", str(target)]) == 0
    previous = target.read_bytes()
    _edit_a_rating(db)
    _kill_mid_write(["--db", _db_path(db), "export", "--study", "ex", "-o", str(target)],
                    out, after=0)
    assert target.read_bytes() == previous
    assert _visible(out) == ["labels.csv"]
    assert main(["--db", _db_path(db), "export", "--study", "ex", "-o", str(target)]) == 0
    assert target.read_bytes() != previous


def test_an_imagenhub_export_killed_mid_write_leaves_the_previous_folder(labelled, tmp_path):
    db, _ = labelled
    exports = tmp_path / "exports"
    target = exports / "tsv"
    argv = ["--db", _db_path(db), "export", "--study", "ex", "--format", "imagenhub",
            "-o", str(target)]
    assert main(argv) == 0
    previous = _files(target)
    assert len(previous) == 6
    _edit_a_rating(db)
    _kill_mid_write(argv, exports, after=1)
    assert _files(target) == previous
    assert _visible(exports) == ["tsv"]
    assert main(argv) == 0
    assert sorted(_files(target)) == sorted(previous)
    assert _files(target) != previous


def test_an_imagenhub_export_replaces_the_whole_previous_export(labelled, tmp_path):
    db, _ = labelled
    target = tmp_path / "tsv"
    (target / "Old_Task").mkdir(parents=True)
    (target / "Old_Task" / "Old_Task_rater9.tsv").write_text("uid\tm\nx\t[1,1]\n")
    export.write_imagenhub(labels.ratings(db, "ex"), target)
    assert sorted(_files(target)) == sorted(f"{d}/{d}_{r}.tsv" for d in ("d0", "d1")
                                            for r in ("_cmd__", "_bob", "carol"))


@pytest.mark.parametrize("stranger", ["notes.txt", "d0/readme.md"])
def test_an_imagenhub_export_refuses_a_folder_holding_other_files(labelled, tmp_path, stranger):
    db, _ = labelled
    target = tmp_path / "home"
    (target / stranger).parent.mkdir(parents=True, exist_ok=True)
    (target / stranger).write_text("mine")
    with pytest.raises(ConcordError, match="not part of an ImagenHub export"):
        export.write_imagenhub(labels.ratings(db, "ex"), target)
    assert (target / stranger).read_text() == "mine"


def test_an_export_to_a_full_device_names_the_path(labelled, capsys):
    db, _ = labelled
    assert main(["--db", _db_path(db), "export", "--study", "ex", "-o", "/dev/full"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "error: cannot write /dev/full: No space left on device"


def test_an_export_into_a_folder_path_is_refused(labelled, tmp_path, capsys):
    db, _ = labelled
    assert main(["--db", _db_path(db), "export", "--study", "ex", "-o", str(tmp_path)]) == 1
    assert f"cannot write {tmp_path}: it is a folder" in capsys.readouterr().err


def test_a_csv_export_keeps_the_permissions_of_the_file_it_replaces(labelled, tmp_path):
    db, _ = labelled
    target = tmp_path / "labels.csv"
    target.write_text("old")
    target.chmod(0o640)
    assert main(["--db", _db_path(db), "export", "--study", "ex", "-o", str(target)]) == 0
    assert target.stat().st_mode & 0o777 == 0o640
    assert target.read_text().startswith("study,kind")


@pytest.mark.parametrize("exchange", [True, False], ids=["rename-exchange", "two-renames"])
def test_a_folder_swap_leaves_exactly_the_new_files(tmp_path, monkeypatch, exchange):
    if not exchange:  # a file system without renameat2(RENAME_EXCHANGE)
        monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
    target = tmp_path / "out"
    atomic.replace_dir(target, {"a/x.tsv": b"1", "a/y.tsv": b"2"})
    atomic.replace_dir(target, {"b/z.tsv": b"3"})
    assert _files(target) == {"b/z.tsv": b"3"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary left
