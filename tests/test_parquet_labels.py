"""import-pairs and import-rankings from Parquet, as the Hub publishes datasets (GenAI-Bench's
human votes: images in struct<bytes, path> columns beside the labels)."""

from __future__ import annotations

import datetime as dt
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from concord.cli import main
from concord.importers import parquet_rows
from concord.store import frames
from concord.store import studies as study_store
from concord.store.db import open_db

pytestmark = pytest.mark.both_engines

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
VOTES = [("a red cube", "flux", "sdxl", "leftvote", "u1"),
         ("a dog", "sdxl", "dalle", "rightvote", "u2"),
         ("a cat", "dalle", "flux", "tievote", "u1"),
         ("a cup", "flux", "dalle", "bothbad_vote", "u3")]


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (9, 9, 9)).save(out, format="PNG")
    return out.getvalue()


def genai_bench(path, votes=VOTES, **extra) -> None:
    """A shard shaped like GenAI-Bench's image_generation votes."""
    png = {"bytes": _png(), "path": "x.png"}
    start = dt.datetime(2024, 5, 1, 12, 0, 0)
    columns = {
        "prompt": pa.array([v[0] for v in votes]),
        "left_model": pa.array([v[1] for v in votes]),
        "left_image": pa.array([png] * len(votes), type=IMAGE),
        "right_model": pa.array([v[2] for v in votes]),
        "right_image": pa.array([png] * len(votes), type=IMAGE),
        "vote_type": pa.array([v[3] for v in votes]),
        "judge": pa.array([v[4] for v in votes]),
        "tstamp": pa.array([start + dt.timedelta(minutes=i) for i in range(len(votes))],
                           type=pa.timestamp("us")),
        **extra,
    }
    pq.write_table(pa.table(columns), path, row_group_size=2)


def run(db_path, *args) -> int:
    return main(["--db", str(db_path), *map(str, args)])


def test_genai_bench_votes_import_without_reading_the_images(tmp_path, database_at, capsys,
                                                             monkeypatch):
    target = database_at("x")
    path = tmp_path / "train-00000-of-00001.parquet"
    genai_bench(path)
    read = []
    original = pq.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        read.append(kwargs.get("columns"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    assert run(target, "import-pairs", "--study", "gb", path) == 0
    assert "4 votes read: 4 added" in capsys.readouterr().out
    assert read and all("left_image" not in cols and "right_image" not in cols
                        for cols in read)
    db = open_db(target)
    frame = frames.pairs_frame(db, study_store.get_study(db, "gb").id).sort_values(
        "created_at")
    got = list(zip(frame.left_model, frame.right_model, frame.outcome, frame.rater,
                   frame.prompt, strict=True))
    assert got == [("flux", "sdxl", "left", "u1", "a red cube"),
                   ("sdxl", "dalle", "right", "u2", "a dog"),
                   ("dalle", "flux", "tie", "u1", "a cat"),
                   ("flux", "dalle", "both_bad", "u3", "a cup")]
    assert frame.created_at.iloc[0] == "2024-05-01T12:00:00.000000+00:00"  # no zone: UTC
    db.close()


def test_a_bad_row_is_named_by_its_row_and_column(tmp_path, database_at, capsys):
    target = database_at("x")
    path = tmp_path / "votes.parquet"
    genai_bench(path, [*VOTES[:3], ("a cup", "flux", "flux", "leftvote", "u3")])
    assert run(target, "import-pairs", "--study", "gb", path) == 1
    err = capsys.readouterr().err
    assert "votes.parquet, row 4, field 'right_model': a model judged against itself" in err
    assert "nothing was imported" in err


@pytest.mark.parametrize(("make", "says"), [
    (lambda p: p.write_text("prompt,left_model\n"), "not a readable Parquet file"),
    (lambda p: p.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1"), "not a readable Parquet file"),
    (lambda p: pq.write_table(pa.table({"left_model": ["a"], "vote_type": ["leftvote"]}), p),
     "missing columns"),
    (lambda p: pq.write_table(pa.Table.from_arrays(
        [pa.array(["a"]), pa.array(["b"]), pa.array(["c"])],
        names=["model_a", "model_b", "model_b"]), p), "column(s) ['model_b'] appear twice"),
])
def test_a_file_that_cannot_be_read_is_one_line(tmp_path, database_at, capsys, make, says):
    target = database_at("x")
    path = tmp_path / "votes.parquet"
    make(path)
    assert run(target, "import-pairs", "--study", "gb", path) == 1
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and err.count("\n") == 1


def test_rankings_as_lists_from_parquet(tmp_path, database_at, capsys):
    target = database_at("x")
    path = tmp_path / "rankings.parquet"
    pq.write_table(pa.table({
        "prompt_id": ["p1", "p1", "p2"],
        "rater": ["e1", "e2", "e1"],
        "ranking": ["flux > sdxl = dalle > sd15", "sdxl > flux > dalle > sd15",
                    "dalle > flux"]}), path)
    assert run(target, "import-rankings", "--study", "ex", path) == 0
    assert "3 rankings read: 3 added" in capsys.readouterr().out


def test_plain_columns_and_values():
    assert parquet_rows._plain(pa.list_(pa.list_(pa.string())))
    assert parquet_rows._plain(pa.dictionary(pa.int8(), pa.string()))
    assert not parquet_rows._plain(IMAGE) and not parquet_rows._plain(pa.binary())
    assert not parquet_rows._plain(pa.list_(pa.binary()))
    stamp = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert parquet_rows._value([stamp, [dt.date(2024, 1, 2)]]) == [
        "2024-01-02T03:04:05+00:00", ["2024-01-02"]]


@pytest.mark.parametrize("suffix", [".parquet", ".json"])
def test_a_fifo_or_a_symlink_loop_is_refused_before_anything_is_read(tmp_path, database_at,
                                                                     capsys, suffix):
    import os

    target = database_at("x")

    fifo = tmp_path / f"pipe{suffix}"
    os.mkfifo(fifo)  # opening it to sniff or read would wait for a writer for ever
    loop = tmp_path / f"loop{suffix}"
    loop.symlink_to(loop)
    for path in (fifo, loop):
        assert run(target, "import-pairs", "--study", "s", path) == 1
        err = capsys.readouterr().err
        assert str(path) in err and "Traceback" not in err and err.count("\n") == 1


def test_a_huge_integer_and_an_empty_array(tmp_path, database_at, capsys):
    target = database_at("x")
    huge = tmp_path / "huge.json"
    huge.write_text('[{"model_a": "x", "model_b": "y", "winner": "a", "tstamp": '
                    + "9" * 5000 + "}]")
    assert run(target, "import-pairs", "--study", "s", huge) == 1
    err = capsys.readouterr().err
    assert "huge.json" in err and "digits" in err and "Traceback" not in err
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert run(target, "import-pairs", "--study", "s", empty) == 1
    assert "empty.json" in capsys.readouterr().err
    db = open_db(target)
    assert db.execute("SELECT COUNT(*) FROM studies").fetchone()[0] == 0
    db.close()


def test_ranks_per_model_written_by_pandas(tmp_path, database_at, capsys):
    """Another tool's file: a categorical model column, zone-aware times, pandas' index."""
    import pandas as pd

    target = database_at("x")

    path = tmp_path / "ranks.parquet"
    pd.DataFrame({"prompt_id": ["p1"] * 4 + ["p2"] * 4, "rater": ["e1"] * 8,
                  "model": pd.Categorical(["a", "b", "c", "d"] * 2),
                  "rank": [1, 2, 2, 4, 4, 3, 2, 1],
                  "time": pd.to_datetime(["2024-01-01T10:00:00+02:00"] * 8)},
                 index=range(100, 108)).to_parquet(path)
    assert run(target, "import-rankings", "--study", "ex", path) == 0
    assert "2 rankings read: 2 added" in capsys.readouterr().out
    db = open_db(target)
    frame = frames.rankings_frame(db, study_store.get_study(db, "ex").id)
    p1 = frame[frame.prompt_id == "p1"].sort_values("model")
    assert p1["rank"].tolist() == [1, 2.5, 2.5, 4]  # 1, 2, 2, 4 as the screen stores ties
    db.close()
