"""Label Studio JSON: export (tasks, annotations, labeling config), import through the
staged ratings import, round trip, and one clear error per kind of bad input."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from concord.cli import main
from concord.errors import InputError
from concord.importers import label_studio as reader
from concord.services import studies
from concord.services.exports import label_studio, labels
from concord.services.imports.ratings import import_ratings
from concord.services.labelling import rating
from concord.services.labelling.common import new_submission
from tests.foundation_helpers import invited, make_folder_study, unchanged
from tests.helpers import target_of

pytestmark = pytest.mark.both_engines

KEY = ["prompt_id", "model", "sample", "rater", "criterion"]
VALUES = {"ann": (0, 0.5), "ben": (1, 1), "cat": (0.5, 0)}


@pytest.fixture
def rated(db, tmp_path):
    studies.import_manifest(db, make_folder_study(tmp_path / "ls", prompts=3, k=3))
    for name, (sc, pr) in VALUES.items():
        rid = invited(db, "ls", name)
        while (item := rating.next_item(db, "ls", rid)) is not None:
            rating.submit(db, "ls", rid, item.image_id, {"SC": sc, "PR": pr},
                          submission=new_submission())
    return db


def _labels(db, study: str) -> pd.DataFrame:
    frame = labels.ratings(db, study)[[*KEY, "value", "seconds"]]
    return frame.sort_values(KEY).reset_index(drop=True)


def test_export_has_one_task_per_image_with_an_annotation_per_rater(rated, tmp_path):
    found = label_studio.tasks(rated, "ls", image_root="/data/local-files/?d=")
    assert len(found) == 6
    task = found[0]
    assert set(task["data"]) == {"image", "prompt", "prompt_id", "model", "sample",
                                 "dimension"}
    assert task["data"]["image"].startswith("/data/local-files/?d=")
    assert task["data"]["prompt"] == "a photo of object 0"
    assert [a["completed_by"]["email"] for a in task["annotations"]] == ["ann", "ben", "cat"]
    result = {r["from_name"]: r for r in task["annotations"][0]["result"]}
    assert result["SC"] == {"from_name": "SC", "to_name": "image", "type": "choices",
                            "value": {"choices": ["0"]}}
    assert result["PR"]["value"] == {"choices": ["0.5"]}


def test_round_trip_into_a_new_study_reproduces_the_labels(rated, tmp_path):
    out = tmp_path / "tasks.json"
    assert label_studio.export_file(rated, "ls", out) == 6
    summary = import_ratings(rated, "copy", "label-studio", out)
    assert summary.created_study and summary.added == 36
    original, copy = _labels(rated, "ls"), _labels(rated, "copy")
    pd.testing.assert_frame_equal(original[[*KEY, "value"]], copy[[*KEY, "value"]])
    assert copy["seconds"].to_numpy() == pytest.approx(original["seconds"].to_numpy())
    # importing the same file into the original study changes nothing
    again = import_ratings(rated, "ls", "label-studio", out)
    assert again.added == 0 and again.changed == 0 and again.unchanged == 36


def test_whole_number_scales_use_the_rating_control(db, tmp_path):
    rows = ["prompt_id,model,rater,criterion,value"]
    rows += [f"p{i},m{j},r{r},likert,{1 + (i + j + r) % 5}" for i in range(3)
             for j in range(2) for r in range(2)]
    (tmp_path / "likert.csv").write_text("\n".join(rows) + "\n")
    import_ratings(db, "lk", "csv", tmp_path / "likert.csv", criteria=["likert=1..5"])
    found = label_studio.tasks(db, "lk")
    first = found[0]["annotations"][0]["result"][0]
    assert first["type"] == "rating" and isinstance(first["value"]["rating"], int)
    out = tmp_path / "lk.json"
    label_studio.export_file(db, "lk", out)
    import_ratings(db, "lk2", "label-studio", out, criteria=["likert=1..5"])
    pd.testing.assert_frame_equal(_labels(db, "lk")[[*KEY, "value"]],
                                  _labels(db, "lk2")[[*KEY, "value"]])
    config = ET.fromstring(label_studio.study_config(db, "lk"))
    [stars] = config.iter("Rating")
    assert stars.get("name") == "likert" and stars.get("maxRating") == "5"


def test_labeling_config_names_every_criterion_and_scale_value(rated):
    config = ET.fromstring(label_studio.study_config(rated, "ls"))
    assert config.find("Image").get("value") == "$image"
    assert config.find("Text").get("value") == "$prompt"
    choices = {c.get("name"): [x.get("value") for x in c] for c in config.iter("Choices")}
    task = label_studio.tasks(rated, "ls")[0]
    for result in task["annotations"][0]["result"]:
        assert result["value"]["choices"][0] in choices[result["from_name"]]
        assert all(c.get("toName") == "image" for c in config.iter("Choices"))


def _task(**over) -> dict:
    task = {"id": 7, "data": {"image": "x.png", "prompt": "p", "prompt_id": "p0",
                              "model": "m1", "sample": 0},
            "annotations": [{"completed_by": {"id": 1, "email": "ann"}, "lead_time": 3.5,
                             "result": [{"from_name": "SC", "to_name": "image",
                                         "type": "choices", "value": {"choices": ["1"]}}]}]}
    for path, value in over.items():
        *parents, last = path.split("__")
        node = task
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = value
    return task


_DELETE = object()
_RESULT = "annotations__0__result__0"


@pytest.mark.parametrize(("task", "field", "message"), [
    (_task(data__model=_DELETE), "[1].data.model", "missing field 'model'"),
    (_task(data__prompt_id=5), "[1].data.prompt_id", "must be a string"),
    (_task(**{f"{_RESULT}__value": {"choices": ["Good"]}}),
     "[1].annotations[0].result[0].value.choices", "unknown choice 'Good'"),
    (_task(**{f"{_RESULT}__value": {"choices": ["0", "1"]}}),
     "[1].annotations[0].result[0].value.choices", "exactly one choice"),
    (_task(**{f"{_RESULT}__type": "rating", f"{_RESULT}__value": {"rating": "5"}}),
     "[1].annotations[0].result[0].value.rating", "must be a number"),
    (_task(**{f"{_RESULT}__type": "labels"}),
     "[1].annotations[0].result[0].type", "unsupported result type 'labels'"),
    (_task(data__sample=-1), "[1].data.sample", "not a sample index"),
    (_task(annotations__0__lead_time=-2), "[1].annotations[0].lead_time", "≥ 0"),
    (_task(annotations__0__completed_by=_DELETE), "[1].annotations[0].completed_by",
     "missing rater"),
    (_task(annotations="none"), "[1].annotations", "must be an array"),
])
def test_bad_tasks_name_file_task_and_field_and_import_nothing(db, tmp_path, task, field,
                                                               message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([_task(), task]))
    with unchanged(db), pytest.raises(InputError) as err:
        import_ratings(db, "new", "label-studio", path)
    text = str(err.value)
    assert str(path) in text and "task 1 (id 7)" in text and f"field '{field}'" in text
    assert message in text and "nothing was imported" in text


@pytest.mark.parametrize(("content", "message"), [
    ('{"id": 1}', "expected a JSON array of tasks"),
    ("[" * 100 + "]" * 100, "nested more than 64 levels"),
    ('[{"id": 1, "id": 2}]', "key 'id' twice"),
    ('[{"id": 1,', "malformed JSON"),
    ("[]", "no ratings, rankings or pair votes found"),
])
def test_bad_documents_get_one_clear_error(db, tmp_path, content, message):
    path = tmp_path / "doc.json"
    path.write_text(content)
    with unchanged(db), pytest.raises(InputError, match=message) as err:
        import_ratings(db, "new", "label-studio", path)
    assert str(path) in str(err.value)


def test_a_file_over_the_size_bound_is_refused_unread(db, tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_BYTES", 64)
    path = tmp_path / "big.json"
    path.write_text(json.dumps([_task()] * 3))
    with unchanged(db), pytest.raises(InputError, match="larger than the limit"):
        import_ratings(db, "new", "label-studio", path)


def test_a_value_off_the_studys_scale_imports_nothing(rated, tmp_path):
    good = label_studio.tasks(rated, "ls")
    good[4]["annotations"][1]["result"][0]["value"] = {"choices": ["0.7"]}
    path = tmp_path / "off.json"
    path.write_text(json.dumps(good))
    with unchanged(rated), pytest.raises(InputError, match=r"0\.7") as err:
        import_ratings(rated, "ls", "label-studio", path)
    assert "row 4" in str(err.value)  # the task's index


def test_cancelled_annotations_are_skipped(db, tmp_path):
    cancelled = _task(annotations__0__was_cancelled=True)
    path = tmp_path / "c.json"
    path.write_text(json.dumps([_task(), {**cancelled, "id": 8}]))
    summary = import_ratings(db, "new", "label-studio", path)
    assert summary.rows == 1


def test_cli_round_trip_with_the_labeling_config(rated, tmp_path, capsys):
    db_file = target_of(rated)
    out, xml = tmp_path / "t.json", tmp_path / "config.xml"
    assert main(["--db", db_file, "export", "--study", "ls", "--format", "label-studio",
                 "-o", str(out), "--label-config", str(xml)]) == 0
    assert ET.parse(xml).getroot().tag == "View"
    assert main(["--db", db_file, "import-ratings", "--study", "cli-copy", "--format",
                 "label-studio", str(out)]) == 0
    assert len(labels.ratings(rated, "cli-copy")) == 36
    assert main(["--db", db_file, "export", "--study", "ls", "--format",
                 "label-studio"]) == 1
    assert "needs -o FILE.json" in capsys.readouterr().err


def test_hostile_files_where_a_label_studio_export_should_be(db, tmp_path):
    """A FIFO (would block for ever), a symlink loop and a rating of 10**23: one clear line
    each, naming the file; nothing imported."""
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    huge = tmp_path / "huge.json"
    task = _task()
    task["annotations"][0]["result"][0] = {"from_name": "SC", "to_name": "image",
                                           "type": "rating", "value": {"rating": 10**23}}
    huge.write_text(json.dumps([task]))
    for path, message in ((fifo, "not a regular file"), (loop, "cannot be read"),
                          (huge, r"1e\+23 is not on")):
        with unchanged(db), pytest.raises(InputError, match=message) as err:
            import_ratings(db, "new", "label-studio", path)
        assert str(path) in str(err.value) and "nothing was imported" in str(err.value)


def test_free_text_results_are_comments_of_their_annotations_labels(db, tmp_path, capsys):
    comment = {"from_name": "comment", "to_name": "image", "type": "textarea",
               "value": {"text": ["looks odd"]}}
    task = _task()
    task["annotations"][0]["result"].insert(0, comment)
    only_text = _task(id=8, data__prompt_id="p1")
    only_text["annotations"][0]["result"] = [comment, comment]
    path = tmp_path / "comments.json"
    path.write_text(json.dumps([task, only_text]))
    summary = import_ratings(db, "new", "label-studio", path)
    assert (summary.rows, summary.added, summary.skipped) == (1, 1, {})
    # the first task's comment goes with its rating; the second task has nothing to go with
    assert (summary.labels.comments_read, summary.labels.comments) == (2, 1)
    assert db.execute("SELECT text FROM comments").fetchall() == [("looks odd",)]
    assert main(["--db", str(tmp_path / "cli.db"), "import-ratings", "--study", "c",
                 "--format", "label-studio", str(path)]) == 0
    assert "2 comment(s) read: 1 kept" in capsys.readouterr().out
