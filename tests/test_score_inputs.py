"""Score files (`merge-scores` JSONL), the scores CSV and `adjudicate set --item` under
hostile input: one clear problem naming the file, line and field; nothing imported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from concord.cli import main
from concord.store import open_db
from tests.foundation_helpers import folder_study_db, snapshot

RUN = {"type": "run", "run_id": "r1", "study": "s", "metric": "clip", "judge": "",
       "started_at": "2025-01-01T00:00:00"}
SCORE = {"type": "score", "prompt_id": "p0", "model": "m1", "metric": "clip", "value": 0.5,
         "run_id": "r1"}
DEEP = "[" * 10_000 + "]" * 10_000


@pytest.fixture
def dbp(tmp_path) -> Path:
    return folder_study_db(tmp_path, prompts=2)


def _refused(capsys, dbp: Path, *argv: str) -> str:
    db = open_db(dbp)
    before = snapshot(db)
    db.close()
    code = main(["--db", str(dbp), *argv])
    err = capsys.readouterr().err
    assert code == 1, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert "(nothing was imported)" in err
    assert snapshot(open_db(dbp)) == before
    return err


def _jsonl(tmp_path: Path, score_line: str, end_line: str | None = None) -> Path:
    path = tmp_path / "scores.jsonl"
    lines = [json.dumps(RUN), score_line] + ([end_line] if end_line else [])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _score(**changes) -> str:
    return json.dumps({**SCORE, **changes})


@pytest.mark.parametrize(("line", "field", "says"), [
    ('{"type": "score", "prompt_id": "p0", "prompt_id": "p1", "model": "m1", "metric": "clip",'
     ' "value": 0.5}', None, "key 'prompt_id' twice"),
    (_score(prompt_id="p\x000"), "prompt_id", "U+0000"),
    (_score(model="m\n1"), "model", "U+000A"),
    (_score(model="m\u20281"), "model", "U+2028"),
    (json.dumps({**SCORE, "model": "m\u20291"}, ensure_ascii=False), "model", "U+2029"),
    (_score(question_id="q\t1"), "question_id", "U+0009"),
    (_score(judge="j" * 5000), "judge", "longer than 1,000 characters"),
    (_score(run_id="r\x1b1"), "run_id", "U+001B"),
    (_score(details="DEEP").replace('"DEEP"', DEEP), None, "nested more than"),
    (_score(value="V").replace('"V"', "9" * 5000), None, "more than 4,300 digits"),
    (_score(value="V").replace('"V"', "1e400"), "value", "finite number"),
    (_score(value="V").replace('"V"', "1" + "0" * 400), "value", "finite number"),
    (_score(value="V").replace('"V"', "NaN"), "value", "finite number"),
    (_score(sample=10**20), "sample", "from 0 to 2,147,483,647"),
    (_score(sample=-1), "sample", "from 0 to"),
    (_score(sample=1.5), "sample", "whole number"),
    (_score(sample=None), "sample", "whole number"),
    (_score(prompt_id=10**30), "prompt_id", "expected a non-empty string"),
])
def test_a_hostile_score_line_is_named_and_nothing_is_merged(capsys, dbp, tmp_path, line,
                                                             field, says):
    path = _jsonl(tmp_path, line)
    err = _refused(capsys, dbp, "merge-scores", "--study", "s", str(path))
    where = f"{path}, row 2" + (f", field '{field}'" if field else "")
    assert where in err
    assert says in err


@pytest.mark.parametrize(("end", "field"), [
    ({"n_scored": 10**30}, "n_scored"),
    ({"n_errors": -1}, "n_errors"),
    ({"n_scored": {"a": 1}}, "n_scored"),
    ({"finished_at": "2025\n01"}, "finished_at"),
])
def test_a_hostile_end_line_is_named(capsys, dbp, tmp_path, end, field):
    line = json.dumps({"type": "end", "run_id": "r1", "status": "done", **end})
    path = _jsonl(tmp_path, _score(), line)
    assert f"{path}, row 3, field '{field}'" in _refused(capsys, dbp, "merge-scores",
                                                         "--study", "s", str(path))


@pytest.mark.parametrize(("run", "field"), [
    ({"host": {"name": "gpu1"}}, "host"),
    ({"shard": "1/2\n"}, "shard"),
    ({"run_id": "r1\u2028"}, "run_id"),
])
def test_a_hostile_run_line_is_named(capsys, dbp, tmp_path, run, field):
    path = tmp_path / "scores.jsonl"
    path.write_text(json.dumps({**RUN, **run}) + "\n" + _score() + "\n", encoding="utf-8")
    assert f"{path}, row 1, field '{field}'" in _refused(capsys, dbp, "merge-scores",
                                                         "--study", "s", str(path))


def test_a_good_score_file_still_merges(capsys, dbp, tmp_path):
    path = _jsonl(tmp_path, _score(sample=0, details={"a": [1, {"b": None}]}),
                  json.dumps({"type": "end", "run_id": "r1", "status": "done",
                              "n_scored": 1, "n_errors": 0}))
    assert main(["--db", str(dbp), "merge-scores", "--study", "s", str(path)]) == 0, \
        capsys.readouterr().err


@pytest.mark.parametrize(("cells", "field", "says"), [
    ("p0,m1,clip,0.5,-1", "sample", "from 0 to 2,147,483,647"),
    ("p0,m1,clip,0.5,100000000000000000000", "sample", "from 0 to"),
    ("p0,m1,clip,0.5,1.5", "sample", "whole number"),
    ('p0,"m\n1",clip,0.5,0', "model", "U+000A"),  # a CSV row is named by its last line
    ("p0,m\u20281,clip,0.5,0", "model", "U+2028"),
    ("p\x000,m1,clip,0.5,0", "prompt_id", "U+0000"),
    ("p0,m1,clip,1e400,0", "value", "finite number"),
    ("p0,m1,clip,0.5,0,q\x1b", "question_id", "U+001B"),
])
def test_a_hostile_scores_csv_row_is_named(capsys, dbp, tmp_path, cells, field, says):
    path = tmp_path / "scores.csv"
    body = cells + ("," if cells.count(",") == 4 else "") + ",\n"
    path.write_text("prompt_id,model,metric,value,sample,question_id,judge\n" + body,
                    encoding="utf-8")
    err = _refused(capsys, dbp, "import-scores", "--study", "s", "--format", "csv", str(path))
    assert f"{path}, row {2 + cells.count(chr(10))}, field '{field}'" in err
    assert says in err


@pytest.mark.parametrize("item", ["100000000000000000000", "-1", "1e3"])
def test_adjudicate_set_refuses_an_item_id_out_of_range(capsys, dbp, item):
    with pytest.raises(SystemExit) as info:
        main(["--db", str(dbp), "adjudicate", "set", "--study", "s", "--item", item,
              "--criterion", "SC", "--value", "1"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --item: expected a whole number" in err
    assert "Traceback" not in err
