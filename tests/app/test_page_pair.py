"""AppTest: the pair screen (choose, tie, both bad, skip, undo, edit from My ratings)."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.services import studies
from concord.store.db import open_db
from tests.app.conftest import rater_app
from tests.helpers import make_folder_study

pytestmark = pytest.mark.both_engines

PAGE = "pages/pair.py"
MODELS = ("aurora", "basalt", "cinder")


@pytest.fixture
def pair_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Study 'pw': protocol pair, 2 prompts × 3 models = 6 pairs, k = 2; raters ann, ben."""
    db_path = tmp_path / "app.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", "letmein-test-secret-7Qx9")
    db = open_db(db_path)
    studies.import_manifest(db, make_folder_study(tmp_path / "pw", prompts=2, models=MODELS,
                                                  protocol="pair", k=2))
    invites = studies.invite(db, "pw", ["ann", "ben"], "http://x")
    return {"db": db, "tokens": {i.name: i.url.split("token=")[1] for i in invites}}


def judgments(db):
    return db.execute("SELECT pair_id, left_image, right_image, outcome, action FROM"
                      " pair_judgments ORDER BY id").fetchall()


def shown(at):
    item = at.session_state["pair_item"]
    return item.pair_id, item.left.image_id, item.right.image_id


def test_the_rater_sees_the_pair_page_and_no_model_name(pair_env):
    at = rater_app(pair_env["tokens"]["ann"])
    assert not at.exception
    assert at.session_state["pair_item"] is not None  # the first page of a pair study
    assert at.button(key="pair_pick_left") and at.button(key="pair_pick_right")
    assert at.get("progress")[0].proto.text == "0 / 6 pairs judged · 0 skipped"
    text = repr(at.main) + repr(at.sidebar)
    assert not any(m in text for m in MODELS)


@pytest.mark.parametrize(("button", "outcome"), [
    ("pair_pick_left", "left"), ("pair_pick_right", "right"), ("pair_tie", "tie"),
    ("pair_both_bad", "both_bad")])
def test_a_choice_stores_the_judgment_with_its_placement_and_moves_on(pair_env, button,
                                                                       outcome):
    at = rater_app(pair_env["tokens"]["ann"], PAGE)
    before = shown(at)
    at.button(key=button).click().run()
    assert not at.exception
    assert judgments(pair_env["db"]) == [(*before, outcome, "judge")]
    assert shown(at)[0] != before[0]


def test_skip_needs_a_reason_and_can_be_cancelled(pair_env):
    at = rater_app(pair_env["tokens"]["ann"], PAGE)
    first = shown(at)[0]
    at.button(key="pair_skip_btn").click().run()
    assert at.text_input(key="pair_skip_reason")
    at.button(key="pair_skip_cancel").click().run()
    assert not [t for t in at.text_input if t.key == "pair_skip_reason"]
    at.button(key="pair_skip_btn").click().run()
    at.button(key="pair_skip_ok").click().run()
    assert "reason" in at.warning[0].value
    at.text_input(key="pair_skip_reason").input("image does not load")
    at.button(key="pair_skip_ok").click().run()
    assert not at.exception
    assert shown(at)[0] != first
    note = pair_env["db"].execute("SELECT unit, item_id, note FROM marks").fetchall()
    assert note == [("pair", first, "image does not load")]


def test_undo_shows_the_pair_again_with_the_choice_made(pair_env):
    at = rater_app(pair_env["tokens"]["ann"], PAGE)
    first = shown(at)
    at.button(key="pair_pick_right").click().run()
    at.button(key="pair_undo").click().run()
    assert not at.exception
    assert shown(at) == first
    assert at.button(key="pair_pick_right").proto.type == "primary"
    assert [j[3:] for j in judgments(pair_env["db"])] == [("right", "judge"), (None, "undo")]


def test_edit_from_my_ratings_adds_a_revision(pair_env):
    at = rater_app(pair_env["tokens"]["ann"], PAGE)
    first = shown(at)
    at.button(key="pair_tie").click().run()
    at.switch_page("pages/my_work.py").run()
    assert not at.exception
    assert any("Judged pairs (1)" in s.value for s in at.subheader)
    at.button(key=f"edit_pair_{first[0]}").click().run()
    assert not at.exception
    assert shown(at) == first
    assert any("changing an earlier judgment" in c.value for c in at.caption)
    at.button(key="pair_pick_left").click().run()
    assert [j[3:] for j in judgments(pair_env["db"])] == [("tie", "judge"), ("left", "edit")]
    # AppTest reruns the page it last switched to (My ratings); a browser stays here.
    at.switch_page(PAGE).run()
    assert "Judgment updated: left image better." in at.success[0].value


def test_a_revoked_rater_in_an_open_session_stores_nothing(pair_env):
    from concord.store import raters

    at = rater_app(pair_env["tokens"]["ann"], PAGE)
    raters.revoke(pair_env["db"], "ann")
    at.button(key="pair_pick_left").click().run()
    assert not at.exception
    assert any("revoked" in e.value for e in at.error)
    assert judgments(pair_env["db"]) == []


def test_a_study_without_pairs_says_so(pair_env, tmp_path):
    from concord.store import raters
    from concord.store import studies as study_store

    studies.import_manifest(pair_env["db"], make_folder_study(tmp_path / "sc", prompts=1))
    ann = raters.get_rater(pair_env["db"], "ann")
    raters.add_to_study(pair_env["db"], ann.id, study_store.get_study(pair_env["db"], "sc").id)
    at = rater_app(pair_env["tokens"]["ann"], PAGE)
    at.session_state["study_pick"] = "sc"
    at.run()
    assert not at.exception
    assert any("has no pairs to compare" in i.value for i in at.info)
