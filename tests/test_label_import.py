"""Pair votes and rankings collected elsewhere: import-pairs, import-rankings and the
round trip of Concord's own export through import-ratings --format csv."""

from __future__ import annotations

import json
import random

import pytest

from concord.cli import main
from concord.services.imports.ratings import import_ratings
from concord.services.labelling import ranking
from concord.stats.pairs.bradley_terry import bradley_terry
from concord.stats.pairs.frame import check_pairs
from concord.store import frames
from concord.store import raters as rater_store
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.foundation_helpers import snapshot
from tests.pair_helpers import STRENGTH, seed_pair_study

pytestmark = pytest.mark.both_engines

ARENA = """model_a,model_b,winner,judge,tstamp,prompt
flux,sdxl,model_a,u1,1700000000.5,a red cube
sdxl,dalle,tie (bothbad),u2,1700000100,a dog
flux,dalle,model_b,u1,1700000200,
dalle,flux,TIE,u3,,
"""


def run(db_path, *args) -> int:
    return main(["--db", str(db_path), *map(str, args)])


def stats(capsys, db_path, study: str) -> dict:
    assert run(db_path, "stats", "--study", study, "--json", "--n-boot", 60, "--n-perm",
               20) == 0
    return _without_study(json.loads(capsys.readouterr().out))


def _without_study(doc):
    """The report without the study's name (rows carry it)."""
    if isinstance(doc, dict):
        return {k: _without_study(v) for k, v in doc.items() if k != "study"}
    if isinstance(doc, list):
        return [_without_study(v) for v in doc]
    return doc


def pairs_of(db, study: str):
    return frames.pairs_frame(db, study_store.get_study(db, study).id)


def test_arena_votes_make_a_votes_only_study(tmp_path, database_at, capsys):
    path = tmp_path / "battles.csv"
    path.write_text(ARENA)
    db_path = database_at("x")
    assert run(db_path, "import-pairs", "--study", "arena", path) == 0
    out = capsys.readouterr().out
    assert "(new votes-only study): 4 votes read: 4 added" in out
    db = open_db(db_path)
    study = study_store.get_study(db, "arena")
    assert study.protocol == "pair" and study.root is None
    frame = pairs_of(db, "arena").sort_values("created_at")
    check_pairs(frame)
    # model_a is shown on the left (arena screens); a/b outcomes become screen sides
    got = list(zip(frame.left_model, frame.right_model, frame.outcome, frame.rater,
                   strict=True))
    assert got == [("flux", "sdxl", "left", "u1"), ("sdxl", "dalle", "both_bad", "u2"),
                   ("flux", "dalle", "right", "u1"), ("dalle", "flux", "tie", "u3")]
    assert frame.created_at.iloc[0] == "2023-11-14T22:13:20.500000+00:00"
    assert frame.prompt.iloc[0] == "a red cube"
    assert frame.prompt_id.nunique() == 4  # no prompt_id: every vote is an item of its own
    # importing the same file again, or the log with one more vote, adds only what is new
    assert run(db_path, "import-pairs", "--study", "arena", path) == 0
    assert "0 added, 0 changed (new revision), 4 unchanged" in capsys.readouterr().out
    path.write_text(ARENA + "flux,sdxl,b,u4,1700000300,a cat\n")
    assert run(db_path, "import-pairs", "--study", "arena", path) == 0
    assert "1 added, 0 changed (new revision), 4 unchanged" in capsys.readouterr().out
    assert len(pairs_of(db, "arena")) == 5
    db.close()


def test_jsonl_votes_with_prompts_placement_and_revisions(tmp_path, database_at, capsys):
    path = tmp_path / "votes.jsonl"
    rows = [{"prompt_id": 1, "model_a": "x", "model_b": "y", "outcome": "a", "rater": "r1",
             "shown_left": "b", "time": "2025-01-02T03:04:05"},
            {"prompt_id": 1, "model_a": "x", "model_b": "y", "outcome": "b", "rater": "r2",
             "shown_left": "y", "dimension": "count", "seconds": 4.5},
            {"prompt_id": "2", "model_a": "y", "model_b": "z", "outcome": "both bad",
             "rater": "r1", "criterion": "quality"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    db_path = database_at("x")
    assert run(db_path, "import-pairs", "--study", "s", path) == 0
    db = open_db(db_path)
    frame = pairs_of(db, "s").sort_values(["prompt_id", "rater"])
    got = list(zip(frame.prompt_id, frame.left_model, frame.right_model, frame.outcome,
                   frame.criterion, frame.dimension.fillna("-"), strict=True))
    assert got == [("1", "y", "x", "right", "overall", "count"),   # x won, shown right
                   ("1", "y", "x", "left", "overall", "count"),    # y won, shown left
                   ("2", "y", "z", "both_bad", "quality", "-")]
    assert frame.created_at.iloc[0] == "2025-01-02T03:04:05.000000+00:00"
    # another outcome for r1 becomes a new revision; the history keeps both
    rows[0]["outcome"] = "tie"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert run(db_path, "import-pairs", "--study", "s", path) == 0
    assert "0 added, 1 changed (new revision), 2 unchanged" in capsys.readouterr().out
    now = pairs_of(db, "s")
    assert now.loc[now.rater == "r1", "outcome"].tolist() == ["tie", "both_bad"]
    revisions = db.execute("SELECT COUNT(*) FROM pair_judgments").fetchone()[0]
    assert revisions == 4
    db.close()


# GenAI-Bench's votes (GenAI-Arena's FastChat vote types, the models by screen side),
# with its image columns as paths: extra columns are left alone.
GENAI_BENCH = """prompt,left_model,left_image,right_model,right_image,vote_type,judge,tstamp
a red cube,flux,l0.png,sdxl,r0.png,leftvote,u1,1717000000
a dog,sdxl,l1.png,dalle,r1.png,rightvote,u2,1717000100
a cat,dalle,l2.png,flux,r2.png,tievote,u1,1717000200
a cup,flux,l3.png,dalle,r3.png,bothbad_vote,u3,1717000300
"""


def test_genai_arena_vote_types_by_screen_side(tmp_path, database_at, capsys):
    y_db = database_at("y")
    path = tmp_path / "genai_bench.csv"
    path.write_text(GENAI_BENCH)
    db_path = database_at("x")
    assert run(db_path, "import-pairs", "--study", "gb", path) == 0
    assert "4 votes read: 4 added" in capsys.readouterr().out
    db = open_db(db_path)
    frame = pairs_of(db, "gb").sort_values("created_at")
    check_pairs(frame)
    got = list(zip(frame.left_model, frame.right_model, frame.outcome, frame.prompt,
                   strict=True))
    assert got == [("flux", "sdxl", "left", "a red cube"), ("sdxl", "dalle", "right", "a dog"),
                   ("dalle", "flux", "tie", "a cat"), ("flux", "dalle", "both_bad", "a cup")]
    db.close()
    wins = stats(capsys, db_path, "gb")["pairs"]
    assert wins  # the pair section is computed from them
    path.write_text(GENAI_BENCH.replace("tievote", "drawvote"))
    assert run(y_db, "import-pairs", "--study", "gb", path) == 1
    err = capsys.readouterr().err
    assert "row 4, field 'vote_type': 'drawvote' is not an outcome" in err  # its own column


# Arena battles as published (FastChat's clean_battle JSON): one array, often one line,
# with nested fields the import does not read.
BATTLES = [
    {"question_id": "q1", "model_a": "flux", "model_b": "sdxl", "winner": "model_a",
     "judge": "u1", "turn": 1, "anony": True, "language": "English",
     "conv_metadata": {"sum_user_tokens": 12}, "category_tag": {"c": {"x": False}}},
    {"question_id": "q2", "model_a": "sdxl", "model_b": "dalle", "winner": "tie (bothbad)",
     "judge": "u2", "dedup_tag": {"high_freq": True}},
    {"model_a": "flux", "model_b": "dalle", "winner": "model_b", "judge": "u1"},
    {"model_a": "flux", "model_b": "dalle", "winner": "model_a", "judge": "u1"},
]


def test_a_json_array_of_battles_reads_like_its_json_lines(tmp_path, database_at, capsys):
    array, lines = tmp_path / "battles.json", tmp_path / "battles.jsonl"
    array.write_text(json.dumps(BATTLES))  # one line: rows are the objects, not lines
    lines.write_text("\n".join(json.dumps(b) for b in BATTLES) + "\n")
    frames_of = []
    for n, path in enumerate((array, lines)):
        target = database_at(str(n))
        assert run(target, "import-pairs", "--study", "arena", path) == 0
        assert "4 votes read: 4 added" in capsys.readouterr().out
        db = open_db(target)
        frame = pairs_of(db, "arena")
        frames_of.append(sorted(zip(frame.left_model, frame.right_model, frame.outcome,
                                    frame.rater, strict=True)))
        db.close()
    assert frames_of[0] == frames_of[1]
    assert ("flux", "dalle", "right", "u1") in frames_of[0]  # both votes without ids kept
    assert ("flux", "dalle", "left", "u1") in frames_of[0]
    named = tmp_path / "lines.json"  # JSON Lines saved as .json: read as JSON Lines
    named.write_text(lines.read_text())
    assert run(database_at("2"), "import-pairs", "--study", "arena", named) == 0


@pytest.mark.parametrize(("text", "says"), [
    ('[{"model_a": "x", "model_b": "y", "winner": "a"}, 5]', "row 2: expected a JSON object"),
    ('[{"model_a": "x", "model_b": "x", "winner": "a"}]', "row 1, field 'model_b'"),
    ('[{"model_a": "x", "model_b": "y", "winner": "a"}, {"model_a":',
     "malformed JSON: Expecting value (column 62) (line 1 of the file, at object 2)"),
    ('[{"model_a": "x", "model_a": "y"}]', "model_a"),
    ('"votes"', "row 1: expected a JSON object, got str"),  # not an array: JSON Lines
    ("[" * 100 + "]" * 100, "nested more than 64 levels deep (line 1 of the file, at object 1)"),
])
def test_a_bad_json_array_is_one_line_per_problem_and_nothing_is_written(
        tmp_path, database_at, capsys, text, says):
    target = database_at("x")
    path = tmp_path / "battles.json"
    path.write_text(text)
    assert run(target, "import-pairs", "--study", "arena", path) == 1
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and "nothing was imported" in err
    db = open_db(target)
    assert db.execute("SELECT COUNT(*) FROM studies").fetchone()[0] == 0
    db.close()


def test_rankings_from_a_json_array(tmp_path, database_at, capsys):
    target = database_at("x")
    path = tmp_path / "rankings.json"
    path.write_text(json.dumps([
        {"prompt_id": "p1", "rater": "e1", "ranking": ["flux", ["sdxl", "dalle"], "sd15"]},
        {"prompt_id": "p1", "rater": "e2", "ranking": "sdxl > flux > dalle = sd15"}]))
    assert run(target, "import-rankings", "--study", "ex", path) == 0
    assert "2 rankings read: 2 added" in capsys.readouterr().out


@pytest.mark.parametrize(("line", "field", "says"), [
    ("x,x,a,r", "model_b", "judged against itself"),
    ("x,y,maybe,r", "outcome", "is not an outcome"),
    ("x\x00,y,a,r", "model_a", "U+0000"),
    ("x\u2028,y,a,r", "model_a", "U+2028"),
    (",y,a,r", "model_a", "empty value"),
    ('"x\ny",z,a,r', "model_a", "U+000A"),
])
def test_a_bad_vote_names_file_row_and_field_and_nothing_is_written(
        tmp_path, database_at, capsys, line, field, says):
    path = tmp_path / "v.csv"
    path.write_text("model_a,model_b,outcome,rater\nx,y,a,r\n" + line + "\n")
    db_path = database_at("x")
    db = open_db(db_path)
    before = snapshot(db)
    assert run(db_path, "import-pairs", "--study", "s", path) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}, row 3, field '{field}'" in err and says in err
    assert "nothing was imported" in err and snapshot(db) == before
    db.close()


@pytest.mark.parametrize(("text", "says"), [
    ('{"model_a": "x", "model_a": "y", "model_b": "z", "outcome": "a"}', "twice"),
    ("[" * 10_000 + "]" * 10_000, "nested more than"),
    ('{"model_a": "x", "model_b": "y", "outcome": "a", "sample": ' + "9" * 5000 + "}",
     "4,300 digits"),
    ('{"model_a": "x", "model_b": "y", "outcome": "a", "seconds": 1e400}', "finite"),
    ('{"model_a": "x", "model_b": "y", "outcome": "a", "sample": 100000000000000000000}',
     "2,147,483,647"),
    ('{"model_a": "x", "model_b": "y", "outcome": "a", "time": 1e30}', "years 1 to 9999"),
    ('{"model_a": "x", "model_b": ["y"], "outcome": "a"}', "expected text"),
    ('"just a string"', "expected a JSON object"),
])
def test_hostile_json_lines_are_refused_with_their_line(tmp_path, database_at, capsys, text,
                                                        says):
    path = tmp_path / "v.jsonl"
    path.write_text('{"model_a": "x", "model_b": "y", "outcome": "a"}\n' + text + "\n")
    db_path = database_at("x")
    assert run(db_path, "import-pairs", "--study", "s", path) == 1
    err = capsys.readouterr().err
    assert f"{path}, row 2" in err and says in err and "Traceback" not in err
    db = open_db(db_path)
    assert db.execute("SELECT COUNT(*) FROM studies").fetchone()[0] == 0
    db.close()


def test_a_repeated_vote_is_refused_with_both_rows(tmp_path, database_at, capsys):
    target = database_at("x")
    path = tmp_path / "v.csv"
    path.write_text("prompt_id,model_a,model_b,outcome,rater\np1,x,y,a,r\np1,q,y,a,r\n"
                    "p1,y,x,b,r\n")
    assert run(target, "import-pairs", "--study", "s", path) == 1
    err = capsys.readouterr().err
    assert "row 4, field 'criterion': second vote of 'r' on 'y' vs 'x' for 'p1' (first on" \
           " line 2)" in err


def test_odd_files_are_refused_before_anything_is_read(tmp_path, database_at, capsys):
    import os

    target = database_at("x")

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    header = tmp_path / "header.csv"
    header.write_text("a,b,c\n1,2,3\n")
    binary = tmp_path / "zip.csv"
    binary.write_bytes(b"PK\x03\x04\xff\xfe\x00garbage")
    for path, says in ((fifo, "not a regular file"), (empty, "empty file"),
                       (header, "missing columns"), (binary, "not UTF-8")):
        assert run(target, "import-pairs", "--study", "s", path) == 1
        assert says in capsys.readouterr().err


def test_rankings_as_lists_with_ties_and_as_ranks_per_model(tmp_path, database_at, capsys):
    lists = tmp_path / "r.jsonl"
    lists.write_text(json.dumps({"prompt_id": "p1", "rater": "r1",
                                 "ranking": ["a", ["b", "c"], "d"]}) + "\n" +
                     json.dumps({"prompt_id": "p1", "rater": "r2",
                                 "ranking": "b > a > c = d"}) + "\n")
    per_model = tmp_path / "r.csv"
    per_model.write_text("prompt_id,rater,model,rank,position\np1,r3,a,1,2\np1,r3,b,1,0\n"
                         "p1,r3,c,7,1\np1,r3,d,9,3\n")
    db_path = database_at("x")
    assert run(db_path, "import-rankings", "--study", "k", lists) == 0
    assert run(db_path, "import-rankings", "--study", "k", per_model) == 0
    db = open_db(db_path)
    assert study_store.get_study(db, "k").protocol == "rank"
    frame = frames.rankings_frame(db, study_store.get_study(db, "k").id)
    ranks = {(r.rater, r.model): r.rank for r in frame.itertuples()}
    assert ranks == {("r1", "a"): 1, ("r1", "b"): 2.5, ("r1", "c"): 2.5, ("r1", "d"): 4,
                     ("r2", "b"): 1, ("r2", "a"): 2, ("r2", "c"): 3.5, ("r2", "d"): 3.5,
                     ("r3", "a"): 1.5, ("r3", "b"): 1.5, ("r3", "c"): 3, ("r3", "d"): 4}
    shown = frame[frame.rater == "r3"].sort_values("position").model.tolist()
    assert shown == ["b", "c", "a", "d"]
    order = db.execute("SELECT display_order FROM current_rankings WHERE rater_id = (SELECT id"
                       " FROM raters WHERE name = 'r3')").fetchone()[0]
    assert len(json.loads(order)) == 4
    assert run(db_path, "import-rankings", "--study", "k", per_model) == 0
    assert "1 rankings read: 0 added, 0 changed (new revision), 1 unchanged" in \
        capsys.readouterr().out
    db.close()


@pytest.mark.parametrize(("body", "field", "says"), [
    ("p1,r,a,1\np1,r,a,2\n", "model", "'a' is ranked twice"),
    ("p1,r,a,1\n", "model", "needs 2 to 64 images, this one has 1"),
    ("p1,r,a,first\np1,r,b,2\n", "rank", "expected a number"),
])
def test_bad_rankings_are_refused(tmp_path, database_at, capsys, body, field, says):
    target = database_at("x")
    path = tmp_path / "r.csv"
    path.write_text("prompt_id,rater,model,rank\n" + body)
    assert run(target, "import-rankings", "--study", "k", path) == 1
    err = capsys.readouterr().err
    assert f"field '{field}'" in err and says in err


def test_a_ranking_list_that_names_a_model_twice_is_refused(tmp_path, database_at, capsys):
    target = database_at("x")
    path = tmp_path / "r.csv"
    path.write_text("prompt_id,rater,ranking\np1,r,a > b = a\n")
    assert run(target, "import-rankings", "--study", "k", path) == 1
    assert "row 2, field 'ranking': model(s) ['a'] ranked twice" in capsys.readouterr().err


def _mixed_study(tmp_path, database_at):
    """A screen study with rankings and pair judgments (the helpers' BT strengths)."""
    db_path = database_at("screens")
    db = open_db(db_path)
    seed_pair_study(db, tmp_path, "mix", protocol="rank", scores=False,
                    extra="pairs:\n  pairs_per_prompt: 2\n")
    rnd = random.Random(1)
    for rater in ("ann", "ben", "cat"):
        rid = rater_store.get_rater(db, rater).id
        while (rs := ranking.next_set(db, "mix", rid)) is not None:
            noisy = {im.image_id: rnd.uniform(0.2, 1.8) for im in rs.images}
            order = sorted(noisy, key=noisy.get, reverse=True)
            ranking.submit(db, "mix", rid, rs, [[i] for i in order])
    return db, db_path


def test_concords_own_export_reads_back_to_the_same_statistics(tmp_path, database_at, capsys):
    db, db_path = _mixed_study(tmp_path, database_at)
    want = stats(capsys, db_path, "mix")
    assert want["pairs"]["bradley_terry"] and want["rankings"]["models"]
    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"mix.{fmt}"
        assert run(db_path, "export", "--study", "mix", "--format", fmt, "-o", out) == 0
        capsys.readouterr()
        if fmt == "csv":  # one command, every kind of label
            assert run(db_path, "import-ratings", "--study", "back-csv", "--format", "csv",
                       out) == 0
        else:
            assert run(db_path, "import-pairs", "--study", "back-jsonl", out) == 0
            assert run(db_path, "import-rankings", "--study", "back-jsonl", out) == 0
        said = capsys.readouterr().out
        assert "votes read" in said and "rankings read" in said
        got = stats(capsys, db_path, f"back-{fmt}")
        assert got["pairs"] == want["pairs"] and got["rankings"] == want["rankings"], fmt
    db.close()


def test_imported_votes_give_the_statistics_of_their_frame(tmp_path, database_at, capsys):
    rnd = random.Random(5)
    models = list(STRENGTH)
    lines = ["prompt_id,model_a,model_b,outcome,rater"]
    for p in range(12):
        for r in ("r1", "r2", "r3"):
            a, b = rnd.sample(models, 2)
            win = "a" if rnd.random() < STRENGTH[a] / (STRENGTH[a] + STRENGTH[b]) else "b"
            lines.append(f"p{p},{a},{b},{'tie' if rnd.random() < 0.1 else win},{r}")
    path = tmp_path / "v.csv"
    path.write_text("\n".join(lines) + "\n")
    db_path = database_at("x")
    assert run(db_path, "import-pairs", "--study", "v", path) == 0
    capsys.readouterr()
    doc = stats(capsys, db_path, "v")
    db = open_db(db_path)
    expect = bradley_terry(pairs_of(db, "v"), n_boot=60, seed=0)
    got = [r for r in doc["pairs"]["bradley_terry"] if r["tie_model"] == "davidson"]
    assert [r["model"] for r in got] == expect["model"].tolist()
    assert [r["score"] for r in got] == pytest.approx(expect["score"].tolist(), abs=1e-9)
    db.close()


def test_votes_into_a_study_with_images_must_name_its_pairs(tmp_path, database_at, capsys):
    db_path = database_at("x")
    db = open_db(db_path)
    seed_pair_study(db, tmp_path, "duel", prompts=2, scores=False,
                    extra="pairs:\n  pairs_per_prompt: 1\n")
    scheduled = db.execute(
        "SELECT p.key, ma.name, mb.name FROM pairs pr JOIN prompts p ON p.id = pr.prompt_id"
        " JOIN images ia ON ia.id = pr.image_a JOIN models ma ON ma.id = ia.model_id"
        " JOIN images ib ON ib.id = pr.image_b JOIN models mb ON mb.id = ib.model_id"
        " ORDER BY pr.id LIMIT 1").fetchone()
    other = next(m for m in STRENGTH if m not in scheduled[1:])
    path = tmp_path / "v.csv"
    path.write_text(f"prompt_id,model_a,model_b,outcome,rater\n{scheduled[0]},{scheduled[1]},"
                    f"{other},a,zoe\np9,alpha,beta,a,zoe\n")
    before = snapshot(db)
    assert run(db_path, "import-pairs", "--study", "duel", path) == 1
    err = capsys.readouterr().err
    assert "row 3, field 'prompt_id': no image of 'alpha' for 'p9'" in err
    path.write_text(f"prompt_id,model_a,model_b,outcome,rater\n{scheduled[0]},{scheduled[1]},"
                    f"{other},a,zoe\n")
    assert run(db_path, "import-pairs", "--study", "duel", path) == 1
    assert "is not a pair of study 'duel'" in capsys.readouterr().err
    assert snapshot(db) == before
    path.write_text(f"prompt_id,model_a,model_b,outcome,rater\n{scheduled[0]},{scheduled[1]},"
                    f"{scheduled[2]},b,zoe\n")
    assert run(db_path, "import-pairs", "--study", "duel", path) == 0
    zoe = pairs_of(db, "duel").query("rater == 'zoe'")
    assert len(zoe) == 1
    db.close()


def test_a_failed_write_leaves_nothing_visible(tmp_path, database_at, monkeypatch):
    from concord.store.imports import label_writes

    target = database_at("x")

    path = tmp_path / "v.csv"
    path.write_text(ARENA)
    db = open_db(target)

    def broken(*args, **kw):
        raise RuntimeError("disk full")

    monkeypatch.setattr(label_writes, "write_votes", broken)
    with pytest.raises(RuntimeError):
        import_ratings(db, "arena", "pairs", path)
    assert db.execute("SELECT COUNT(*) FROM studies").fetchone()[0] == 0
    for table in ("pairs", "pair_judgments", "images", "prompts", "import_batches"):
        assert db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table
    db.close()


def test_pending_votes_and_rankings_are_invisible_until_published(tmp_path, database_at):
    from concord.store.imports import batches

    target = database_at("x")

    db = open_db(target)
    path = tmp_path / "v.csv"
    path.write_text(ARENA)
    import_ratings(db, "arena", "pairs", path)
    batch_id, sid = db.execute("SELECT id, study_id FROM import_batches").fetchone()
    db.execute("UPDATE import_batches SET state = 'pending' WHERE id = ?", [batch_id])
    assert frames.pairs_frame(db, sid).empty
    db.execute("UPDATE import_batches SET state = 'published' WHERE id = ?", [batch_id])
    assert len(frames.pairs_frame(db, sid)) == 4
    db.execute("UPDATE import_batches SET state = 'pending' WHERE id = ?", [batch_id])
    batches.discard(db, batch_id)
    assert db.execute("SELECT COUNT(*) FROM pair_judgments").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM pairs").fetchone()[0] == 0
    db.close()
