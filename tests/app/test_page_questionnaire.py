"""AppTest: a study's questions before the items (after the consent, before the practice)
and after them (before the completion code); required answers, answers checked, the
researcher's table beside the pay report."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from concord.services import questionnaire as service
from concord.services import studies
from concord.services.crowd import links as crowd
from concord.store.db import open_db
from tests.app.conftest import APP
from tests.app.test_page_research import researcher
from tests.crowd_helpers import QUESTIONNAIRE, make_crowd_study

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    db_path = tmp_path / "app.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", "letmein-test-secret-7Qx9")
    db = open_db(db_path)
    manifest = make_crowd_study(tmp_path / "crowd", quota=1)
    text = manifest.read_text().replace("  practice:\n    items: 2\n    pass_threshold: 0.5\n",
                                        "")
    manifest.write_text(text + QUESTIONNAIRE, encoding="utf-8")
    studies.import_manifest(db, manifest)
    link = crowd.create_link(db, "crowd", "http://x", codes={"completion_code": "DONE42"})
    return {"db": db, "join": link.url.split("join=")[1]}


def _joined(env) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params.update({"join": env["join"], "PROLIFIC_PID": PID, "STUDY_ID": "S1",
                            "SESSION_ID": "X1"})
    at.run()
    at.checkbox(key="consent_agree").check().run()
    at.button(key="consent_start").click().run()
    assert not at.exception, at.exception
    return at


def test_questions_before_the_items_are_required_and_checked(env):
    at = _joined(env)
    assert at.title[0].value == "A few questions first"
    assert not at.radio(key="qn_before_colour_vision").value
    at.number_input(key="qn_before_age").set_value(12)
    at.button(key="qn_before_submit").click().run()
    errors = [e.value for e in at.error]
    assert any("How old are you?: enter a number from 18 to 120" in e for e in errors), errors
    assert any("Please answer: Do you have a colour vision" in e for e in errors), errors
    assert at.title[0].value == "A few questions first"  # nothing stored, still here
    assert service.answers(env["db"], "crowd") == []
    at.number_input(key="qn_before_age").set_value(34)
    at.radio(key="qn_before_colour_vision").set_value("No")
    at.checkbox(key="qn_before_device_2").check()
    at.checkbox(key="qn_before_device_0").check()
    at.button(key="qn_before_submit").click().run()
    assert not at.exception, at.exception
    assert at.radio(key="rate_SC")  # the items now
    got = {a["question"]: a["answer"] for a in service.answers(env["db"], "crowd")}
    assert got == {"age": 34, "colour_vision": "No", "device": ["Phone", "Desktop monitor"]}


def test_questions_after_the_items_come_before_the_completion_code(env):
    at = _joined(env)
    at.number_input(key="qn_before_age").set_value(34)
    at.radio(key="qn_before_colour_vision").set_value("Yes")
    at.button(key="qn_before_submit").click().run()
    at.radio(key="rate_SC").set_value(1.0)
    at.radio(key="rate_PR").set_value(1.0)
    at.button(key="rate_submit").click().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "A few questions to finish"
    assert not any("DONE42" in c.value for c in at.code)
    at.radio(key="qn_after_ai_help").set_value("No")
    at.radio(key="qn_after_confidence").set_value(4)
    at.text_area(key="qn_after_feedback").input("the third image did not load")
    at.button(key="qn_after_submit").click().run()
    assert not at.exception, at.exception
    assert any("DONE42" in c.value for c in at.code)
    res = researcher("pages/raters.py")
    table = next(d.value for d in res.dataframe if "ai_help" in d.value.columns)
    row = table.iloc[0]
    assert (row["age"], row["colour_vision"], row["ai_help"], row["confidence"]) == (
        34, "Yes", "No", 4)
    assert row["feedback"] == "the third image did not load"
    assert row["participant_id"] == PID
