"""Questionnaires: the manifest's questions checked at import (each problem names its key),
every answer checked when it comes in, answers kept per participant with revisions,
exported on their own (CSV, JSONL, Parquet, Hugging Face) and never part of the ratings'
statistics or label exports; and the ``devices`` a study needs."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from concord import devices, questionnaire
from concord.cli import main
from concord.errors import AuthError, InputError
from concord.services import questionnaire as service
from concord.services import studies
from concord.services.exports import labels
from concord.store import open_db
from concord.store import raters as rater_store
from tests.crowd_helpers import QUESTIONNAIRE
from tests.foundation_helpers import seed_study
from tests.helpers import make_folder_study, study_report

pytestmark = pytest.mark.both_engines


@pytest.fixture
def env(database_at, tmp_path):
    target = database_at("q")
    db = open_db(target)
    manifest = make_folder_study(tmp_path / "qs", prompts=2, models=("m1", "m2"))
    manifest.write_text(manifest.read_text() + QUESTIONNAIRE, encoding="utf-8")
    studies.import_manifest(db, manifest)
    (invite,) = studies.invite(db, "qs", ["ann"], "http://x")
    ann = rater_store.rater_for_token(db, invite.url.split("token=")[1]).id
    yield {"db": db, "ann": ann, "path": target, "tmp": tmp_path}
    db.close()


BEFORE = {"age": 34, "colour_vision": "No", "device": ["Desktop monitor", "Phone"]}


def test_answers_are_stored_with_revisions_and_a_submission_counts_once(env):
    db, ann = env["db"], env["ann"]
    assert [q.id for q in service.open_part(db, "qs", ann, "before")] == [
        "age", "colour_vision", "device"]
    assert service.submit(db, "qs", ann, "before", BEFORE, submission="s1")
    assert not service.submit(db, "qs", ann, "before", BEFORE, submission="s1")  # replayed
    assert service.open_part(db, "qs", ann, "before") == ()
    service.submit(db, "qs", ann, "before", {**BEFORE, "age": 35}, submission="s2")
    got = {a["question"]: (a["answer"], a["revision"]) for a in service.answers(db, "qs")}
    # multiple choice in the order of the options; a second answer is revision 2
    assert got == {"age": (35, 2), "colour_vision": ("No", 2),
                   "device": (["Phone", "Desktop monitor"], 2)}
    rows = db.execute("SELECT question, answer, revision FROM questionnaire_answers"
                      " WHERE question = 'age' ORDER BY revision").fetchall()
    assert rows == [("age", "34", 1), ("age", "35", 2)]  # nothing overwritten


@pytest.mark.parametrize(("given", "says"), [
    ({"colour_vision": "No"}, "please answer: How old are you?"),
    ({**BEFORE, "age": 17}, "enter a number from 18 to 120"),
    ({**BEFORE, "age": 30.5}, "enter a whole number"),
    ({**BEFORE, "age": float("nan")}, "enter a number"),
    ({**BEFORE, "age": 10 ** 400}, "enter a number"),
    ({**BEFORE, "age": True}, "enter a number"),
    ({**BEFORE, "colour_vision": "Maybe"}, "choose one of the options"),
    ({**BEFORE, "device": ["Phone", "Phone"]}, "choose among the options, each once"),
    ({**BEFORE, "device": "Phone"}, "choose among the options, each once"),
])
def test_an_answer_that_does_not_fit_stores_nothing(env, given, says):
    with pytest.raises(service.AnswersRefused, match=says):
        service.submit(env["db"], "qs", env["ann"], "before", given, submission="x")
    assert service.answers(env["db"], "qs") == []


@pytest.mark.parametrize(("text", "says"), [
    ("a\x00b", "U+0000"), ("line\u2028sep", "U+2028"), ("x" * 501, "at most 500 characters"),
])
def test_free_text_is_checked(env, text, says):
    answers = {"ai_help": "No", "feedback": text}
    with pytest.raises(service.AnswersRefused, match=re.escape(says)):
        service.submit(env["db"], "qs", env["ann"], "after", answers, submission="x")


def test_free_text_keeps_lines_and_a_likert_point_is_a_whole_number(env):
    db, ann = env["db"], env["ann"]
    service.submit(db, "qs", ann, "after", {"ai_help": "Yes", "confidence": 5,
                                            "feedback": " two\nlines "}, submission="a")
    got = {a["question"]: a["answer"] for a in service.answers(db, "qs")}
    assert got == {"ai_help": "Yes", "confidence": 5, "feedback": "two\nlines"}
    with pytest.raises(service.AnswersRefused, match="choose a point from 1 to 5"):
        service.submit(db, "qs", ann, "after", {"ai_help": "No", "confidence": 6},
                       submission="b")


def test_a_revoked_rater_answers_nothing(env):
    rater_store.revoke(env["db"], "ann")
    with pytest.raises(AuthError):
        service.submit(env["db"], "qs", env["ann"], "before", BEFORE, submission="s")


@pytest.mark.parametrize(("block", "field", "says"), [
    ("questionnaire: [1]", "questionnaire", "expected a mapping"),
    ("questionnaire: {during: []}", "questionnaire.during", "unknown key"),
    ("questionnaire: {before: {}}", "questionnaire.before", "expected a list"),
    ("questionnaire: {before: [{id: a, kind: essay, text: T}]}",
     "questionnaire.before[0].kind", "expected one of single"),
    ("questionnaire: {before: [{id: a, kind: text, text: T}], after: [{id: a, kind: text,"
     " text: U}]}", "questionnaire.after[0].id", "used twice"),
    ("questionnaire: {before: [{id: a, kind: single, text: T, options: [x]}]}",
     "questionnaire.before[0].options", "expected 2 to 50 different options"),
    ("questionnaire: {before: [{id: a, kind: single, text: T, options: [x, x]}]}",
     "questionnaire.before[0].options", "different options"),
    ('questionnaire: {before: [{id: a, kind: single, text: T, options: ["x\\ny", z]}]}',
     "questionnaire.before[0].options", "one line"),
    ('questionnaire: {before: [{id: "a\\u0000", kind: text, text: T}]}',
     "questionnaire.before[0].id", "U+0000"),
    ("questionnaire: {before: [{id: a, kind: likert, text: T, points: 40}]}",
     "questionnaire.before[0].points", "from 2 to 11"),
    ("questionnaire: {before: [{id: a, kind: number, text: T, min: 5, max: 1}]}",
     "questionnaire.before[0].min", "above max"),
    ("questionnaire: {before: [{id: a, kind: number, text: T, max: 1e400}]}",
     "questionnaire.before[0].max", "expected a number"),
    ("questionnaire: {before: [{id: a, kind: text, text: T, required: yes please}]}",
     "questionnaire.before[0].required", "true or false"),
    ("questionnaire: {before: [{id: a, kind: text, text: T, colour: red}]}",
     "questionnaire.before[0].colour", "unknown key"),
    ("devices: {min_width: -1}", "devices.min_width", "whole number of pixels"),
    ("devices: {min_width: 99999999999999999999}", "devices.min_width", "whole number"),
    ("devices: {desktop_only: maybe}", "devices.desktop_only", "true or false"),
    ("devices: {tablet: true}", "devices.tablet", "unknown key"),
])
def test_a_bad_block_is_refused_naming_the_file_and_key(database_at, tmp_path, block, field,
                                                         says):
    db = open_db(database_at("bad"))
    manifest = make_folder_study(tmp_path / "bad", prompts=1)
    manifest.write_text(manifest.read_text() + block + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        studies.import_manifest(db, manifest)
    text = str(caught.value)
    assert str(manifest) in text and f"field '{field}'" in text and says in text, text
    assert studies.names(db) == []  # nothing half-imported


def test_too_many_questions_are_refused():
    found, problems = questionnaire.parse(
        {"before": [{"id": f"q{i}", "kind": "text", "text": "T"} for i in range(101)]})
    assert found is None and problems[0][0] == "questionnaire.before"


def test_answers_never_reach_the_statistics_or_the_label_exports(database_at, tmp_path):
    db = open_db(database_at("s"))
    manifest = seed_study(db, tmp_path)
    manifest.write_text(manifest.read_text() + QUESTIONNAIRE, encoding="utf-8")
    studies.import_manifest(db, manifest)
    rater = db.execute("SELECT id FROM raters ORDER BY id LIMIT 1").fetchone()[0]
    before_report = study_report(db, "dash", n_boot=50, n_perm=50)
    before_labels = labels.export_bytes(db, "dash", "csv")
    db.execute("INSERT INTO study_raters (study_id, rater_id, added_at) SELECT id, ?, 'x'"
               " FROM studies WHERE name = 'dash' AND NOT EXISTS (SELECT 1 FROM study_raters"
               " WHERE rater_id = ?)", [rater, rater])
    service.submit(db, "dash", rater, "before", BEFORE, submission="q1")
    service.submit(db, "dash", rater, "after", {"ai_help": "Yes", "confidence": 1},
                   submission="q2")
    after_report = study_report(db, "dash", n_boot=50, n_perm=50)
    assert json.dumps(after_report, sort_keys=True, default=str) == \
        json.dumps(before_report, sort_keys=True, default=str)
    assert labels.export_bytes(db, "dash", "csv") == before_labels


def test_export_writes_the_answers_on_their_own(env, capsys):
    db, ann = env["db"], env["ann"]
    service.submit(db, "qs", ann, "before", BEFORE, submission="s1")
    base = ["--db", str(env["path"]), "export", "--study", "qs", "--format", "questionnaire"]
    for suffix in ("csv", "jsonl", "parquet"):
        out = env["tmp"] / f"answers.{suffix}"
        assert main([*base, "-o", str(out)]) == 0
    csv = pd.read_csv(env["tmp"] / "answers.csv")
    assert list(csv.columns) == service.COLUMNS
    assert dict(zip(csv.question, csv.answer, strict=True)) == {
        "age": "34", "colour_vision": "No", "device": "Phone; Desktop monitor"}
    lines = [json.loads(x) for x in (env["tmp"] / "answers.jsonl").read_text().splitlines()]
    assert {x["question"]: json.loads(x["answer_json"]) for x in lines} == {
        "age": 34, "colour_vision": "No", "device": ["Phone", "Desktop monitor"]}
    assert len(pd.read_parquet(env["tmp"] / "answers.parquet")) == 3


def test_the_hugging_face_export_has_a_questionnaire_configuration(database_at, tmp_path):
    pytest.importorskip("datasets")
    db = open_db(database_at("s"))
    manifest = seed_study(db, tmp_path)
    manifest.write_text(manifest.read_text() + QUESTIONNAIRE, encoding="utf-8")
    studies.import_manifest(db, manifest)
    rater = db.execute("SELECT id FROM raters ORDER BY id LIMIT 1").fetchone()[0]
    db.execute("INSERT INTO study_raters (study_id, rater_id, added_at) SELECT id, ?, 'x'"
               " FROM studies WHERE name = 'dash' ON CONFLICT DO NOTHING", [rater])
    service.submit(db, "dash", rater, "before", BEFORE, submission="q1")
    from concord.services.exports import hf_dataset

    made = hf_dataset.export_hf(db, "dash", tmp_path / "hf", n_boot=20)
    assert "questionnaire" in made
    table = pd.read_parquet(tmp_path / "hf" / "data" / "questionnaire.parquet")
    assert sorted(table.question) == ["age", "colour_vision", "device"]


@pytest.mark.parametrize(("needed", "seen", "says"), [
    (devices.Devices(1024, 700), {"width": 390, "height": 844, "desktop": False},
     "at least 1024 pixels wide and 700 pixels high, and yours is 390 × 844"),
    (devices.Devices(min_width=800), {"width": 390, "height": 844, "desktop": False},
     "at least 800 pixels wide, and yours is 390 × 844"),
    (devices.Devices(desktop_only=True), {"width": 1400, "height": 900, "desktop": False},
     "needs a computer with a mouse or trackpad"),
    (devices.Devices(800, 600), "not a report", "could not check your screen"),
    (devices.Devices(800, 600), {"width": float("nan"), "height": 1, "desktop": True},
     "could not check your screen"),
    (devices.Devices(800, 600), {"width": 1e300, "height": 900, "desktop": True},
     "could not check your screen"),
])
def test_a_screen_the_study_cannot_use_is_told_why(needed, seen, says):
    assert says in devices.refusal(needed, devices.screen(seen))


def test_a_screen_that_fits_or_a_study_without_needs_goes_on():
    big = devices.screen({"width": 1400, "height": 900, "desktop": True})
    assert devices.refusal(devices.Devices(1024, 700, True), big) is None
    assert devices.refusal(devices.Devices(), None) is None
