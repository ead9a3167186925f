"""AppTest: signing up through a study link, consent, practice with feedback, the end
screens, and the researcher's crowd controls on the Raters page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from concord.services import studies
from concord.services.crowd import links as crowd
from concord.services.labelling import rating
from concord.store.db import open_db
from tests.app.conftest import APP
from tests.crowd_helpers import make_crowd_study

pytestmark = pytest.mark.both_engines

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"


@pytest.fixture
def crowd_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    db_path = tmp_path / "app.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", "letmein-test-secret-7Qx9")
    db = open_db(db_path)
    studies.import_manifest(db, make_crowd_study(tmp_path / "crowd", quota=2, threshold=1.0))
    link = crowd.create_link(db, "crowd", "http://x", codes={"completion_code": "DONE42",
                                                             "screenout_code": "NOPE13"})
    return {"db": db, "join": link.url.split("join=")[1]}


def joined(env, pid: str = PID) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params.update({"join": env["join"], "PROLIFIC_PID": pid, "STUDY_ID": "S1",
                            "SESSION_ID": "X1"})
    return at.run()


def consent(at: AppTest) -> AppTest:
    assert at.title[0].value == "Before you start"
    assert at.button(key="consent_start").disabled
    at.checkbox(key="consent_agree").check().run()
    at.button(key="consent_start").click().run()
    assert not at.exception, at.exception
    return at


def answer(at: AppTest, sc: float, pr: float) -> AppTest:
    at.radio(key="practice_SC").set_value(sc)
    at.radio(key="practice_PR").set_value(pr)
    at.button(key="practice_submit").click().run()
    assert not at.exception, at.exception
    return at


def test_study_link_signs_up_and_shows_the_consent_page(crowd_env):
    at = joined(crowd_env)
    assert not at.exception
    assert any("How to rate" in m.value for m in at.markdown)
    assert at.session_state["concord_user"].name.startswith(f"prolific:{PID}")
    assert at.session_state["concord_token"]
    assert len(at.radio) == 0  # no item before consent
    consent(at)
    stored = crowd_env["db"].execute("SELECT consented_at FROM onboarding").fetchone()[0]
    assert stored
    assert at.title[0].value == "Practice"


def test_missing_participant_id_is_one_error(crowd_env):
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params.update({"join": crowd_env["join"], "STUDY_ID": "S1"})
    at.run()
    assert not at.exception
    assert len(at.error) == 1 and "PROLIFIC_PID" in at.error[0].value
    assert len(at.radio) == 0 and len(at.button) == 0


def test_practice_feedback_then_real_items_then_the_completion_code(crowd_env):
    at = consent(joined(crowd_env))
    answer(at, 1.0, 1.0)  # p0/m1: SC 1, PR 1 — right
    assert "Practice item 1 of 2: right" in at.success[0].value
    table = at.table[0].value.set_index("criterion")
    assert table.loc["SC", "expected"].startswith("1 · ")
    assert table.loc["SC", "your answer"].startswith("1 · ")
    assert table.loc["SC", ""] == "✓"
    at.button(key="practice_next").click().run()
    answer(at, 0.0, 0.5)  # p1/m1: SC 0, PR 0.5 ± 0.5 — right
    assert "2 of 2: right" in at.success[0].value
    at.button(key="practice_next").click().run()  # "Start the real images"
    assert not at.exception
    assert [r.key for r in at.radio] == ["rate_SC", "rate_PR"]
    for _ in range(2):  # items_per_rater: 2
        at.radio(key="rate_SC").set_value(1.0)
        at.radio(key="rate_PR").set_value(1.0)
        at.button(key="rate_submit").click().run()
    assert not at.exception
    assert any("finished this study" in s.value for s in at.success)
    assert at.code[0].value == "DONE42"


def test_failing_the_practice_shows_the_polite_end_and_screen_out_code(crowd_env):
    at = consent(joined(crowd_env))
    answer(at, 2.0, 2.0)
    assert "not quite" in at.warning[0].value
    assert "✗" in list(at.table[0].value[""])
    at.button(key="practice_next").click().run()
    answer(at, 0.0, 0.5)
    at.button(key="practice_next").click().run()  # "See the result"
    assert at.title[0].value == "Thank you"
    assert at.code[0].value == "NOPE13"
    assert len(at.radio) == 0


def test_researcher_creates_a_link_and_sees_who_failed(crowd_env):
    fail = consent(joined(crowd_env, "fa11e7000000000000000001"))
    answer(fail, 2.0, 2.0)
    fail.button(key="practice_next").click().run()
    answer(fail, 2.0, 2.0)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="admin_secret").input("letmein-test-secret-7Qx9")
    at.button[0].click().run()
    at.switch_page("pages/raters.py").run()
    assert not at.exception, at.exception
    at.selectbox(key="crowd_platform").select("mturk")
    at.text_input(key="crowd_completion").input("FIN-1")
    at.checkbox(key="crowd_rotate").check()
    at.button(key="FormSubmitter:crowd_link_form-Create study link").click().run()
    assert not at.exception, at.exception
    url = [c.value for c in at.code if "?join=" in c.value]
    assert len(url) == 1
    links = crowd.links(crowd_env["db"], "crowd")
    assert [(lk.platform, lk.active, lk.completion_code) for lk in links] == [
        ("mturk", True, "FIN-1"), ("prolific", False, "DONE42")]
    assert any("fa11e7" in w.value for w in at.warning)
    (status,) = [d.value for d in at.dataframe if "stage" in d.value.columns]
    assert status.set_index("participant_id").loc["fa11e7000000000000000001", "stage"] == \
        "failed"
    assert at.get("download_button")


def test_a_checklist_study_practises_with_the_checklist(tmp_path, monkeypatch):
    db_path = tmp_path / "app.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    db = open_db(db_path)
    manifest = make_crowd_study(tmp_path / "crowd", quota=2)
    manifest.write_text(manifest.read_text() + "checklist: true\n")
    studies.import_manifest(db, manifest)
    link = crowd.create_link(db, "crowd", "http://x")
    at = consent(joined({"join": link.url.split("join=")[1]}))
    assert at.title[0].value == "Practice"
    assert len(at.radio) == 0  # SC and PR both come from their checklists
    rubric = rating.study_rubric(db, "crowd", at.session_state["concord_user"].rater_id)
    texts = [f"[{c.key}] {c.text}" if c.key else c.text
             for listed in rubric.checklists for c in listed.conditions]
    assert [cb.label for cb in at.checkbox] == texts  # with the keys the real items use
    for cb in at.checkbox:  # everything holds: SC 2, PR 2 (p0/m1 expects 1 and 1)
        cb.check()
    at.button(key="practice_submit").click().run()
    assert not at.exception, at.exception
    table = at.table[0].value.set_index("criterion")
    assert table.loc["SC", "your answer"].startswith("2 · ")
    assert table.loc["SC", ""] == "✗"
    at.button(key="practice_next").click().run()
    assert not any(cb.value for cb in at.checkbox)  # the next item starts with no ticks


def test_practice_shows_each_images_own_rubric(tmp_path, monkeypatch):
    """With ``rubrics:`` (a rubric per dimension), a practice image of the ``count``
    dimension asks its Likert question, as the real items of that dimension do."""
    from tests.crowd_helpers import CROWD
    from tests.helpers import make_folder_study

    db_path = tmp_path / "app.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", "letmein-test-secret-7Qx9")
    root = tmp_path / "dims"
    manifest = make_folder_study(root, prompts=4, models=("m1", "m2"), k=3,
                                 extra="gold: gold.csv\nrubrics:\n  count: likert-5\n"
                                 + CROWD.format(quota=2))
    (root / "gold.csv").write_text("prompt_id,model,criterion,expected,tolerance\n"
                                   "p0,m1,likert,4,0\np1,m1,SC,0,0\np1,m1,PR,0.5,0.5\n",
                                   encoding="utf-8")
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    link = crowd.create_link(db, "dims", "http://x", codes={"completion_code": "DONE42",
                                                            "screenout_code": "NOPE13"})
    at = consent(joined({"db": db, "join": link.url.split("join=")[1]}))
    assert [r.key for r in at.radio] == ["practice_likert"]  # p0 is of dimension count
    at.radio(key="practice_likert").set_value(4.0)
    at.button(key="practice_submit").click().run()
    assert not at.exception, at.exception
    assert "Practice item 1 of 2: right" in at.success[0].value
    at.button(key="practice_next").click().run()
    assert sorted(r.key for r in at.radio) == ["practice_PR", "practice_SC"]  # p1: color
    answer(at, 0.0, 1.0)
    assert "Practice item 2 of 2" in at.success[0].value
    kept = db.execute("SELECT answer, correct FROM practice_answers ORDER BY position")
    assert [(json.loads(a), c) for a, c in kept] == [({"likert": 4.0}, 1),
                                                     ({"SC": 0.0, "PR": 1.0}, 1)]
