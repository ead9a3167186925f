"""AppTest: a continuous criterion on the rating, practice and adjudication screens (a
slider that starts unset), and the comment field of the rate, rank and pair screens."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.services import studies
from concord.store import comments as comment_store
from concord.store import frames
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.app.conftest import rater_app
from tests.helpers import make_folder_study
from tests.test_continuous import SLIDER


@pytest.fixture
def slider_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Study 's' rated on the SLIDER rubric file (quality 0..100:0.1, realism 0..1 any
    number), with optional comments; rater ann."""
    db_path = tmp_path / "app.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", "letmein-test-secret-7Qx9")
    root = tmp_path / "s"
    root.mkdir()
    (root / "slider.yaml").write_text(SLIDER, encoding="utf-8")
    manifest = make_folder_study(root, prompts=2, models=("a", "b"),
                                 extra="rubric: slider.yaml\ncomments: optional\n")
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (url,) = studies.invite(db, "s", ["ann"], "http://x")
    return {"db": db, "token": url.url.split("token=")[1]}


def _ratings(db):
    return frames.ratings_frame(db, study_store.get_study(db, "s").id)


def test_the_slider_starts_unset_and_a_submit_without_it_is_refused(slider_env):
    at = rater_app(slider_env["token"])
    assert not at.exception
    quality = at.select_slider(key="rate_quality")
    assert quality.value is None  # "not set": no value the rater did not choose
    assert quality.options[:3] == ["not set", "0", "0.1"] and quality.options[-1] == "100"
    realism = at.number_input(key="rate_realism")  # any real number: a number field
    assert realism.value is None and (realism.min, realism.max) == (0.0, 1.0)
    at.button(key="rate_submit").click().run()
    assert "choose a score for quality, realism" in at.warning[0].value
    assert _ratings(slider_env["db"]).empty


def test_slider_values_and_a_comment_are_stored(slider_env):
    at = rater_app(slider_env["token"])
    first = at.session_state["rate_item"].image_id
    at.select_slider(key="rate_quality").set_value(37.1)
    at.number_input(key="rate_realism").set_value(0.123456789)
    at.text_area(key="rate_comment").input("the horse has five legs")
    at.button(key="rate_submit").click().run()
    assert not at.exception and not at.warning
    got = _ratings(slider_env["db"]).set_index("criterion")["value"]
    assert got["quality"] == pytest.approx(37.1) and got["realism"] == pytest.approx(0.123456789)
    study = study_store.get_study(slider_env["db"], "s")
    assert comment_store.latest(slider_env["db"], study.id, 1, "image", first) == (
        "the horse has five legs")
    # the next image starts unset, with an empty comment field
    assert at.session_state["rate_item"].image_id != first
    assert at.select_slider(key="rate_quality").value is None
    assert at.text_area(key="rate_comment").value == ""


def test_an_edit_shows_the_stored_slider_value_and_comment(slider_env):
    at = rater_app(slider_env["token"])
    first = at.session_state["rate_item"].image_id
    at.select_slider(key="rate_quality").set_value(99.9)
    at.number_input(key="rate_realism").set_value(1.0)
    at.text_area(key="rate_comment").input("first look")
    at.button(key="rate_submit").click().run()
    at.button(key="rate_undo").click().run()
    assert at.session_state["rate_item"].image_id == first
    assert at.select_slider(key="rate_quality").value == 99.9
    assert at.number_input(key="rate_realism").value == 1.0
    assert at.text_area(key="rate_comment").value == "first look"


def test_a_required_comment_is_asked_for(tmp_path, monkeypatch):
    db_path = tmp_path / "app.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    manifest = make_folder_study(tmp_path / "r", prompts=2, models=("a", "b", "c"),
                                 protocol="rank", extra="comments: required\n")
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (url,) = studies.invite(db, "r", ["ann"], "http://x")
    at = rater_app(url.url.split("token=")[1], page="pages/rank.py")
    assert "(required)" in at.text_area(key="rank_comment").label
    for image in at.session_state["rank_set"].images:
        at.button(key=f"rank_pick_{image.public_id}").click().run()
    at.button(key="rank_submit").click().run()
    assert "write a comment" in at.warning[0].value
    at.text_area(key="rank_comment").input("b looks melted").run()
    at.button(key="rank_submit").click().run()
    assert not at.warning
    study = study_store.get_study(db, "r")
    assert comment_store.current(db, study.id)["comment"].tolist() == ["b looks melted"]


def test_the_pair_screen_takes_a_comment_with_the_choice(tmp_path, monkeypatch):
    db_path = tmp_path / "app.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    manifest = make_folder_study(tmp_path / "p", prompts=2, models=("a", "b"), protocol="pair",
                                 extra="comments: optional\npairs:\n  pairs_per_prompt: 1\n")
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (url,) = studies.invite(db, "p", ["ann"], "http://x")
    at = rater_app(url.url.split("token=")[1], page="pages/pair.py")
    at.text_area(key="pair_comment").input("left is sharper").run()
    at.button(key="pair_pick_left").click().run()
    assert not at.exception and not at.warning
    study = study_store.get_study(db, "p")
    assert comment_store.current(db, study.id)["comment"].tolist() == ["left is sharper"]
    assert at.text_area(key="pair_comment").value == ""  # the next pair starts empty


def test_practice_on_a_slider_gives_feedback_with_the_tolerance(tmp_path, monkeypatch):
    from concord.services.crowd import links as crowd
    from tests.app.test_page_crowd import consent, joined
    from tests.crowd_helpers import CROWD

    db_path = tmp_path / "app.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    root = tmp_path / "cs"
    root.mkdir()
    (root / "slider.yaml").write_text(SLIDER, encoding="utf-8")
    manifest = make_folder_study(root, prompts=4, models=("m1", "m2"), k=3,
                                 extra="rubric: slider.yaml\ngold: gold.csv\n"
                                 + CROWD.format(quota=2))
    (root / "gold.csv").write_text("prompt_id,model,criterion,expected,tolerance\n"
                                   "p0,m1,quality,70,5\np0,m1,realism,0.5,0.25\n"
                                   "p1,m1,quality,10,5\np1,m1,realism,0.1,0.1\n",
                                   encoding="utf-8")
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    link = crowd.create_link(db, "cs", "http://x", codes={"completion_code": "DONE42",
                                                          "screenout_code": "NOPE13"})
    at = consent(joined({"db": db, "join": link.url.split("join=")[1]}))
    assert at.select_slider(key="practice_quality").value is None
    at.select_slider(key="practice_quality").set_value(73.5)
    at.number_input(key="practice_realism").set_value(0.9)
    at.button(key="practice_submit").click().run()
    assert not at.exception, at.exception
    table = at.table[0].value.set_index("criterion")
    assert table.loc["quality", "your answer"] == "73.5"
    assert table.loc["quality", "expected"] == "70 (± 5)"
    assert (table.loc["quality", ""], table.loc["realism", ""]) == ("✓", "✗")


def test_adjudicating_a_slider_takes_any_point_of_its_scale(slider_env, monkeypatch):
    from concord.services.labelling import rating
    from concord.services.labelling.common import new_submission
    from concord.store import raters as rater_store
    from tests.app.test_page_research import researcher

    db = slider_env["db"]
    studies.invite(db, "s", ["ben"], "http://x")
    for name, quality in (("ann", 10.0), ("ben", 90.0)):
        rid = rater_store.get_rater(db, name).id
        while (item := rating.next_item(db, "s", rid)) is not None:
            rating.submit(db, "s", rid, item.image_id, {"quality": quality, "realism": 0.5},
                          submission=new_submission())
    at = researcher("pages/adjudicate.py")
    field = at.number_input(key="adj_v_0")
    assert (field.value, field.min, field.max) == (None, 0.0, 100.0)
    field.set_value(42.7)
    at.button(key="FormSubmitter:adj_form_0-Save").click().run()
    assert not at.exception, at.exception
    row = db.execute("SELECT criterion, value FROM adjudications").fetchone()
    assert row == ("quality", "42.7")
