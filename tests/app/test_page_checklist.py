"""AppTest: the rubric checklist on the scoring screen (ticks, derived value, override)."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.services import studies
from concord.services.labelling import checklist
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.app.conftest import rater_app
from tests.helpers import make_folder_study

pytestmark = pytest.mark.both_engines

SC_IDS = ["most_requirements", "high_level_match", "low_level_match"]


@pytest.fixture
def checklist_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    db_path = tmp_path / "app.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", "letmein-test-secret-7Qx9")
    manifest = make_folder_study(tmp_path / "cl", prompts=2, models=("alpha", "beta"), k=1,
                                 extra="rubric: imagenhub-text-to-image\nchecklist: true\n")
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (invite,) = studies.invite(db, "cl", ["ann"], "http://x")
    return {"db": db, "token": invite.url.split("token=")[1]}


def _ticks(db):
    return checklist.ticks_frame(db, study_store.get_study(db, "cl").id)


def test_ticks_derive_the_value_live_and_are_stored(checklist_env):
    at = rater_app(checklist_env["token"])
    assert not at.exception
    boxes = [at.checkbox(key=f"rate_cond{i}x") for i in range(6)]
    assert [b.label.split("] ")[0] for b in boxes] == [f"[{n}" for n in range(1, 7)]
    assert at.radio(key="rate_SC").value == 0  # nothing ticked: the ladder's first rung
    boxes[0].check().run()
    at.checkbox(key="rate_cond1x").check().run()
    assert at.radio(key="rate_SC").value == 1
    assert any("SC = 1" in c.value for c in at.caption)
    for i in (3, 4, 5):
        at.checkbox(key=f"rate_cond{i}x").check().run()
    assert at.radio(key="rate_PR").value == 2
    first = at.session_state["rate_item"].image_id
    at.button(key="rate_submit").click().run()
    assert not at.exception
    assert at.session_state["rate_item"].image_id != first
    rows = _ticks(checklist_env["db"])
    sc = rows[rows.criterion == "SC"]
    assert list(sc.condition) == SC_IDS and list(sc.ticked) == [1, 1, 0]
    assert set(rows.final) == {1.0, 2.0} and rows.reason.isna().all()
    # The next image starts with nothing ticked.
    assert not any(at.checkbox(key=f"rate_cond{i}x").value for i in range(6))


def test_an_override_without_a_reason_is_refused_then_stored_with_it(checklist_env):
    at = rater_app(checklist_env["token"])
    first = at.session_state["rate_item"].image_id
    at.radio(key="rate_SC").set_value(0.5)
    at.button(key="rate_submit").click().run()
    assert any("SC: the checklist gives 0" in w.value for w in at.warning)
    assert at.session_state["rate_item"].image_id == first
    assert _ticks(checklist_env["db"]).empty
    at.radio(key="rate_SC").set_value(0.5)
    at.text_input(key="rate_reason_SC").input("the main object is there, only blurred")
    at.button(key="rate_submit").click().run()
    rows = _ticks(checklist_env["db"])
    sc = rows[rows.criterion == "SC"].iloc[0]
    assert (sc.derived, sc.final, sc.reason) == (0.0, 0.5, "the main object is there, "
                                                           "only blurred")


def test_undo_shows_the_earlier_ticks_again(checklist_env):
    at = rater_app(checklist_env["token"])
    first = at.session_state["rate_item"].image_id
    at.checkbox(key="rate_cond0x").check().run()
    at.button(key="rate_submit").click().run()
    at.button(key="rate_undo").click().run()
    assert at.session_state["rate_item"].image_id == first
    assert [at.checkbox(key=f"rate_cond{i}x").value for i in range(3)] == [True, False, False]
    assert at.radio(key="rate_SC").value == 0.5
    assert _ticks(checklist_env["db"]).empty


def test_a_study_without_the_checklist_shows_the_plain_screen(tmp_path, monkeypatch):
    db_path = tmp_path / "plain.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    db = open_db(db_path)
    studies.import_manifest(db, make_folder_study(tmp_path / "pl", prompts=1, k=1))
    (invite,) = studies.invite(db, "pl", ["bo"], "http://x")
    at = rater_app(invite.url.split("token=")[1])
    assert len(at.checkbox) == 0 and len(at.text_input) == 0
    assert [r.key for r in at.radio] == ["rate_SC", "rate_PR"]


def test_the_dashboard_shows_agreement_per_condition(checklist_env, tmp_path):
    from concord.services.labelling import rating
    from concord.services.labelling.common import new_submission
    from concord.store.raters import rater_for_token
    from tests.app.test_page_dashboard import frame_values, pick_study, researcher_dashboard
    db = checklist_env["db"]
    studies.import_manifest(db, make_folder_study(
        tmp_path / "two", prompts=2, models=("alpha", "beta"), k=2,
        extra="rubric: imagenhub-text-to-image\nchecklist: true\n"))
    for invite in studies.invite(db, "two", ["cy", "di"], "http://x"):
        rid = rater_for_token(db, invite.url.split("token=")[1]).id
        while (item := rating.next_item(db, "two", rid)) is not None:
            rating.submit(db, "two", rid, item.image_id, {"SC": None, "PR": None},
                          submission=new_submission(),
                          ticks={"most_requirements": True, "no_obvious_flaws": True})
    at = pick_study(researcher_dashboard(), "two")
    assert not at.exception
    table = next(f for f in frame_values(at) if "alpha_nominal" in f.columns
                 and "condition" in f.columns)
    row = table.set_index("condition").loc["most_requirements"]
    assert row["percent_agreement"] == 1.0 and row["n_images"] == 4
