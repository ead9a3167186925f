"""AppTest: the adjudication page lists disagreed items and stores adjudicated values apart."""

from __future__ import annotations

from concord.services.labelling import rating
from concord.services.labelling.common import new_submission
from concord.store import raters as rater_store
from tests.app.test_page_research import researcher
from tests.foundation_helpers import snapshot


def _rate_apart(db) -> None:
    """ann gives every image SC 0, ben SC 1: every image is split."""
    for name, sc in (("ann", 0), ("ben", 1)):
        rid = rater_store.get_rater(db, name).id
        while (item := rating.next_item(db, "ui", rid)) is not None:
            rating.submit(db, "ui", rid, item.image_id, {"SC": sc, "PR": 1},
                          submission=new_submission())


def test_page_shows_answers_side_by_side_and_saves_an_adjudication(app_env):
    db = app_env["db"]
    _rate_apart(db)
    before = snapshot(db)
    at = researcher("pages/adjudicate.py")
    assert at.title[0].value == "Adjudicate"
    answers = at.dataframe[0].value
    assert list(answers["rater"]) == ["ann", "ben"]
    assert sorted(answers["answer"]) == ["0", "1"]
    assert "disagreement 1.00" in at.caption[1].value
    at.selectbox(key="adj_v_0").select(0.5)
    at.text_input(key="adj_note_0").input("split decision")
    at.button(key="FormSubmitter:adj_form_0-Save").click().run()
    assert not at.exception, at.exception
    row = db.execute("SELECT unit, criterion, value, note, actor FROM adjudications").fetchone()
    assert row == ("image", "SC", "0.5", "split decision", "researcher")
    assert db.execute("SELECT action FROM audit_log ORDER BY id DESC LIMIT 1").fetchone() == (
        "adjudicate",)
    assert snapshot(db) == {**before, "audit_log": snapshot(db)["audit_log"]}
    assert any("Adjudicated:" in m.value for m in at.markdown)


def test_page_says_so_when_nothing_is_rated(app_env):
    at = researcher("pages/adjudicate.py")
    assert "No item has two or more answers" in at.info[0].value


def test_raters_cannot_open_the_adjudication_page(app_env):
    from tests.app.conftest import rater_app

    at = rater_app(app_env["tokens"]["ann"])
    at.switch_page("pages/adjudicate.py").run()  # every page is known; this one refuses
    assert not at.exception
    assert "This page is for researchers" in at.error[0].value
    assert not at.title


def test_rankings_view_takes_a_full_order(app_env):
    from concord.services.labelling import ranking

    db = app_env["db"]
    for name, flip in (("ann", False), ("ben", True)):
        rid = rater_store.get_rater(db, name).id
        while (rank_set := ranking.next_set(db, "ui", rid)) is not None:
            groups = sorted(([im.image_id] for im in rank_set.images), reverse=flip)
            ranking.submit(db, "ui", rid, rank_set, groups)
    at = researcher("pages/adjudicate.py")
    at.segmented_control(key="adj_view").set_value("rank").run()
    assert not at.exception, at.exception
    assert "disagreement 1.00" in at.caption[1].value  # opposite orders: W = 0
    at.multiselect(key="adj_v_0").select("gamma").select("alpha").select("beta")
    at.button(key="FormSubmitter:adj_form_0-Save").click().run()
    assert not at.exception, at.exception
    assert db.execute("SELECT unit, value FROM adjudications").fetchone() == (
        "prompt", '["gamma","alpha","beta"]')
