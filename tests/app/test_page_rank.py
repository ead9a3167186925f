"""AppTest: the ranking screen (build, undo, reset, submit, incomplete, ties)."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.services import studies
from concord.store import frames
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.app.conftest import rater_app
from tests.helpers import make_folder_study

pytestmark = pytest.mark.both_engines

PAGE = "pages/rank.py"


def pick_buttons(at):
    return [b for b in at.button if b.key and b.key.startswith("rank_pick_")]


def click_slot(at, slot: int):
    pick_buttons(at)[slot - 1].click().run()
    return at


def current_rankings(db, study="ui"):
    return frames.rankings_frame(db, study_store.get_study(db, study).id)


def test_clicks_build_a_ranking_with_badges(app_env):
    at = rater_app(app_env["tokens"]["ann"], PAGE)
    assert not at.exception
    assert len(pick_buttons(at)) == 3
    click_slot(at, 2)
    click_slot(at, 3)
    labels = [b.label for b in pick_buttons(at)]
    assert labels[1].startswith("#1") and labels[2].startswith("#2")
    assert labels[0].startswith("1 ·")


def test_clicking_a_ranked_image_removes_it_and_closes_the_gap(app_env):
    at = rater_app(app_env["tokens"]["ann"], PAGE)
    for slot in (1, 2, 3):
        click_slot(at, slot)
    click_slot(at, 1)  # take #1 out: the others move up
    labels = [b.label for b in pick_buttons(at)]
    assert labels[0].startswith("1 ·")
    assert labels[1].startswith("#1") and labels[2].startswith("#2")


def test_undo_and_reset(app_env):
    at = rater_app(app_env["tokens"]["ann"], PAGE)
    click_slot(at, 3)
    click_slot(at, 1)
    at.button(key="rank_undo").click().run()
    labels = [b.label for b in pick_buttons(at)]
    assert labels[2].startswith("#1") and labels[0].startswith("1 ·")
    at.button(key="rank_reset").click().run()
    assert all("rank next" in b.label for b in pick_buttons(at))


def test_submit_stores_ranking_with_display_order(app_env):
    at = rater_app(app_env["tokens"]["ann"], PAGE)
    shown = [im.image_id for im in at.session_state["rank_set"].images]
    prompt_before = at.session_state["rank_set"].prompt_id
    for slot in (3, 1, 2):
        click_slot(at, slot)
    at.button(key="rank_submit").click().run()
    assert not at.exception
    df = current_rankings(app_env["db"])
    assert len(df) == 3
    by_image = dict(zip(df.image_id, df["rank"], strict=True))
    assert by_image == {shown[2]: 1.0, shown[0]: 2.0, shown[1]: 3.0}
    positions = dict(zip(df.image_id, df.position, strict=True))
    assert positions == {image_id: i for i, image_id in enumerate(shown)}
    assert at.session_state["rank_set"].prompt_id != prompt_before


def test_incomplete_ranking_is_refused(app_env):
    at = rater_app(app_env["tokens"]["ann"], PAGE)
    click_slot(at, 1)
    at.button(key="rank_submit").click().run()
    assert any("rank every image" in w.value for w in at.warning)
    assert current_rankings(app_env["db"]).empty


def test_ties_refused_when_the_study_does_not_allow_them(app_env):
    at = rater_app(app_env["tokens"]["ann"], PAGE)
    assert not at.toggle  # no tie control at all
    from concord.errors import RatingError
    from concord.services.labelling import ranking

    rs = at.session_state["rank_set"]
    ids = [im.image_id for im in rs.images]
    with pytest.raises(RatingError, match="does not allow ties"):
        ranking.to_ranks([[ids[0], ids[1]], [ids[2]]], ids, ties=rs.ties)


@pytest.fixture
def ties_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    db_path = tmp_path / "ties.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    manifest = make_folder_study(tmp_path / "ui", prompts=2, models=("a1", "b1", "c1", "d1"),
                                 protocol="rank", extra="ranking:\n  ties: true\n")
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (inv,) = studies.invite(db, "ui", ["tia"], "http://x")
    return {"db": db, "token": inv.url.split("token=")[1]}


def test_ties_allowed_share_a_rank(ties_env):
    at = rater_app(ties_env["token"], PAGE)
    assert not at.exception
    click_slot(at, 1)
    at.toggle(key="rank_tie_mode").set_value(True).run()
    click_slot(at, 2)  # joins #1
    at.toggle(key="rank_tie_mode").set_value(False).run()
    click_slot(at, 3)
    click_slot(at, 4)
    labels = [b.label for b in pick_buttons(at)]
    assert labels[0].startswith("#=1") and labels[1].startswith("#=1")
    assert labels[2].startswith("#3") and labels[3].startswith("#4")
    at.button(key="rank_submit").click().run()
    df = current_rankings(ties_env["db"])
    assert sorted(df["rank"].tolist()) == [1.5, 1.5, 3.0, 4.0]


def test_rank_page_never_names_a_model(app_env):
    at = rater_app(app_env["tokens"]["ann"], PAGE)
    text = repr(at.main) + repr(at.sidebar)
    for model in ("alpha", "beta", "gamma"):
        assert model not in text


def test_edit_a_ranking_from_history_keeps_both_revisions(app_env):
    at = rater_app(app_env["tokens"]["ann"], PAGE)
    prompt_id = at.session_state["rank_set"].prompt_id
    for slot in (1, 2, 3):
        click_slot(at, slot)
    at.button(key="rank_submit").click().run()
    at.switch_page("pages/my_work.py").run()
    at.button(key=f"edit_ranking_{prompt_id}").click().run()
    assert not at.exception
    at.switch_page(PAGE).run()  # AppTest does not follow st.switch_page by itself
    assert at.session_state["rank_set"].prompt_id == prompt_id
    labels = [b.label for b in pick_buttons(at)]
    assert [label.split(" ")[0] for label in labels] == ["#1", "#2", "#3"]  # current ranking
    at.button(key="rank_reset").click().run()
    for slot in (3, 2, 1):
        click_slot(at, slot)
    at.button(key="rank_submit").click().run()
    assert not at.exception
    rows = list(app_env["db"].query(
        "SELECT revision, action FROM rankings WHERE prompt_id = ? ORDER BY revision",
        [prompt_id]))
    assert [(r["revision"], r["action"]) for r in rows] == [(1, "rank"), (2, "edit")]
    df = current_rankings(app_env["db"])
    assert len(df) == 3  # one current ranking, now the edited one
    first = dict(zip(df.position, df["rank"], strict=True))
    assert first == {0: 3.0, 1: 2.0, 2: 1.0}


def test_a_draft_survives_a_new_session(app_env):
    at = rater_app(app_env["tokens"]["ann"], PAGE)
    click_slot(at, 3)
    click_slot(at, 1)
    before = [b.label for b in pick_buttons(at)]
    again = rater_app(app_env["tokens"]["ann"], PAGE)  # a reload: a new browser session
    assert [b.label for b in pick_buttons(again)] == before
    assert current_rankings(app_env["db"]).empty  # a draft is not a ranking


def test_undoing_a_submitted_ranking_brings_back_its_order(app_env):
    at = rater_app(app_env["tokens"]["ann"], PAGE)
    for slot in (2, 3, 1):
        click_slot(at, slot)
    ranked = [b.label for b in pick_buttons(at)]
    at.button(key="rank_submit").click().run()
    assert not current_rankings(app_env["db"]).empty
    at.button(key="rank_undo_sub").click().run()
    assert current_rankings(app_env["db"]).empty
    assert [b.label for b in pick_buttons(at)] == ranked  # the same order, ready to change
