"""AppTest: sign-in and the scoring screen (rate, skip, undo, resume, edit, wrong token)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from concord.store import frames
from concord.store import studies as study_store
from tests.app.conftest import APP, rater_app

pytestmark = pytest.mark.both_engines


def ratings(db):
    study = study_store.get_study(db, "ui")
    return frames.ratings_frame(db, study.id)


def choose(at: AppTest, sc: float, pr: float) -> AppTest:
    sc_radio = at.radio(key="rate_SC")
    pr_radio = at.radio(key="rate_PR")
    sc_radio.set_value(sc)
    pr_radio.set_value(pr)
    return at


def shown_image_key(at: AppTest) -> int:
    return at.session_state["rate_item"].image_id


def test_wrong_token_shows_only_an_error():
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["token"] = "not-a-real-token"
    at.run()
    assert not at.exception
    assert "not valid" in at.error[0].value
    assert len(at.radio) == 0 and len(at.button) == 0


def test_revoked_token_is_refused(app_env):
    from concord.store import raters

    raters.revoke(app_env["db"], "ann")
    at = rater_app(app_env["tokens"]["ann"])
    assert "revoked" in at.error[0].value
    assert len(at.radio) == 0


def test_researcher_sign_in_with_secret(app_env):
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.text_input(key="admin_secret").input("wrong")
    at.button[0].click().run()
    assert at.error and "Wrong" in at.error[0].value
    at.text_input(key="admin_secret").input("letmein-test-secret-7Qx9")
    at.button[0].click().run()
    assert not at.exception
    # AppTest keeps the page it ran last; a browser lands on the first researcher page.
    at.switch_page("pages/studies.py").run()
    assert not at.exception
    assert at.session_state["concord_user"].is_researcher
    assert "ui" in at.dataframe[0].value["study"].tolist()


def test_invite_link_signs_in_and_shows_an_image(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    assert not at.exception
    assert [r.key for r in at.radio] == ["rate_SC", "rate_PR"]
    assert len(at.get("image")) == 2  # the image to rate, and the next one preloaded
    assert "0 / 9 rated" in at.get("progress")[0].proto.text


def test_rate_stores_one_rating_and_moves_on(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    first = shown_image_key(at)
    choose(at, 1.0, 0.5)
    at.button(key="rate_submit").click().run()
    assert not at.exception
    df = ratings(app_env["db"])
    assert sorted(zip(df.criterion, df.value, strict=True)) == [("PR", 0.5), ("SC", 1.0)]
    assert shown_image_key(at) != first
    assert "1 / 9 rated" in at.get("progress")[0].proto.text


def test_incomplete_rating_is_refused(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    first = shown_image_key(at)
    at.radio(key="rate_SC").set_value(2.0)
    at.button(key="rate_submit").click().run()
    assert any("PR" in w.value for w in at.warning)
    assert ratings(app_env["db"]).empty
    assert shown_image_key(at) == first


def test_skip_needs_a_reason_and_is_recorded(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    first = shown_image_key(at)
    at.button(key="rate_skip_btn").click().run()
    at.text_input(key="rate_skip_reason").input("image is blank")
    at.button(key="rate_skip_ok").click().run()
    assert not at.exception
    assert shown_image_key(at) != first
    marks = list(app_env["db"].query("SELECT kind, note FROM marks"))
    assert marks == [{"kind": "skip", "note": "image is blank"}]


def test_undo_brings_back_the_last_item(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    first = shown_image_key(at)
    choose(at, 2.0, 0.5)
    at.button(key="rate_submit").click().run()
    at.button(key="rate_undo").click().run()
    assert shown_image_key(at) == first
    # the earlier choices come back with the item, ready to change
    assert (at.radio(key="rate_SC").value, at.radio(key="rate_PR").value) == (2.0, 0.5)
    assert ratings(app_env["db"]).empty
    history = list(app_env["db"].query("SELECT action FROM ratings ORDER BY id"))
    assert [h["action"] for h in history] == ["rate", "rate", "undo", "undo"]


def test_resume_after_closing_the_tab(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    choose(at, 0.0, 1.0)
    at.button(key="rate_submit").click().run()
    on_screen = shown_image_key(at)
    again = rater_app(app_env["tokens"]["ann"])  # a new browser session
    assert shown_image_key(again) == on_screen
    assert "1 / 9 rated" in again.get("progress")[0].proto.text


def test_edit_from_history_keeps_every_revision(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    choose(at, 1.0, 1.0)
    at.button(key="rate_submit").click().run()
    at.switch_page("pages/my_work.py").run()
    edit = next(b for b in at.button if b.key and b.key.startswith("edit_rating_"))
    edit.click().run()
    assert not at.exception
    choose(at, 2.0, 1.0)
    at.button(key="rate_submit").click().run()
    df = ratings(app_env["db"])
    assert sorted(zip(df.criterion, df.value, strict=True)) == [("PR", 1.0), ("SC", 2.0)]
    revisions = list(app_env["db"].query(
        "SELECT criterion, value, revision, action FROM ratings ORDER BY criterion, revision"))
    assert [(r["criterion"], r["value"], r["action"]) for r in revisions] == [
        ("PR", 1.0, "rate"), ("PR", 1.0, "edit"), ("SC", 1.0, "rate"), ("SC", 2.0, "edit")]


def test_double_submit_stores_one_rating(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    choose(at, 1.0, 1.0)
    item = at.session_state["rate_item"]
    at.button(key="rate_submit").click().run()
    # A replay of the same submission (double click, rerun) changes nothing.
    from concord.services.labelling import rating
    from concord.store.raters import rater_for_token

    rater = rater_for_token(app_env["db"], app_env["tokens"]["ann"])
    again = rating.submit(app_env["db"], "ui", rater.id, item.image_id, {"SC": 1, "PR": 1},
                          submission=item.submission)
    assert not again.stored
    assert len(ratings(app_env["db"])) == 2


def test_page_text_never_names_a_model(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    text = repr(at.main) + repr(at.sidebar)
    for model in ("alpha", "beta", "gamma"):
        assert model not in text


def test_missing_image_file_shows_a_blind_message(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    item = at.session_state["rate_item"]
    item.image_path.unlink()
    at.run()
    assert not at.exception
    assert any("could not be loaded" in e.value for e in at.error)
    text = repr(at.main)
    for model in ("alpha", "beta", "gamma"):
        assert model not in text



def test_skip_form_can_be_cancelled(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    first = shown_image_key(at)
    at.button(key="rate_skip_btn").click().run()
    assert at.text_input(key="rate_skip_reason")
    at.button(key="rate_skip_cancel").click().run()
    assert not [t for t in at.text_input if t.key == "rate_skip_reason"]
    assert shown_image_key(at) == first
    assert not list(app_env["db"].query("SELECT * FROM marks"))


def test_flag_takes_a_note_and_shows_its_state(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    first = shown_image_key(at)
    assert at.button(key="rate_flag").label == "Flag [F]"
    at.button(key="rate_flag").click().run()
    at.text_input(key="rate_flag_note").input("hands have seven fingers")
    at.button(key="rate_flag_ok").click().run()
    assert not at.exception
    assert shown_image_key(at) == first  # flagging does not skip
    assert at.button(key="rate_flag").label == "Flagged ✓ [F]"
    assert any("seven fingers" in c.value for c in at.caption)
    marks = list(app_env["db"].query("SELECT kind, note FROM marks"))
    assert marks == [{"kind": "flag", "note": "hands have seven fingers"}]


def test_a_revoked_rater_in_an_open_session_stores_nothing(app_env):
    from concord.store import raters

    at = rater_app(app_env["tokens"]["ann"])
    choose(at, 1.0, 1.0)
    raters.revoke(app_env["db"], "ann")
    at.button(key="rate_submit").click().run()
    assert not at.exception
    assert ratings(app_env["db"]).empty
    assert any("revoked" in e.value for e in at.error)
    assert len(at.radio) == 0


def test_my_ratings_lists_thumbnails_and_skips_that_can_be_rated_later(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    choose(at, 1.0, 1.0)
    at.button(key="rate_submit").click().run()
    skipped = shown_image_key(at)
    at.button(key="rate_skip_btn").click().run()
    at.text_input(key="rate_skip_reason").input("too dark to judge")
    at.button(key="rate_skip_ok").click().run()
    at.switch_page("pages/my_work.py").run()
    assert not at.exception
    assert len(at.get("image")) == 2  # one thumbnail per row: the rated and the skipped
    assert any("too dark to judge" in c.value for c in at.caption)
    at.button(key=next(b.key for b in at.button if b.key.startswith("rate_skipped_"))).click()
    at.run()
    at.switch_page("pages/rate.py").run()
    assert shown_image_key(at) == skipped  # taken up again, first in line


def test_progress_lists_skips_and_flags_with_prompt_rater_and_reason(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    at.button(key="rate_flag").click().run()
    at.text_input(key="rate_flag_note").input("watermark visible")
    at.button(key="rate_flag_ok").click().run()
    from tests.app.test_page_research import researcher

    res = researcher("pages/progress.py")
    text = " ".join([h.proto.body for h in res.get("html")] + [m.value for m in res.markdown])
    assert "watermark visible" in text and "ann" in text and "a photo of object" in text
    assert len(res.get("image")) == 1  # the thumbnail of the flagged image


def test_undo_after_the_link_was_revoked_says_so_instead_of_crashing(app_env):
    # The Undo button of the scoring screen had no refusal path: a rater whose link was
    # revoked while the screen was open got Streamlit's "This app has encountered an error".
    from concord.store import raters

    at = rater_app(app_env["tokens"]["ann"])
    choose(at, 1.0, 1.0)
    at.button(key="rate_submit").click().run()
    raters.revoke(app_env["db"], "ann")
    at.button(key="rate_undo").click().run()
    assert not at.exception
    assert any("revoked" in e.value for e in at.error)
    assert len(ratings(app_env["db"])) == 2  # nothing was taken back


def test_undo_when_the_session_is_closed_is_a_notice_on_every_screen(app_env):
    # The same refusal through the one controller, for the ranking screen too.
    from concord.store import raters

    at = rater_app(app_env["tokens"]["ann"], "pages/rank.py")
    for slot in range(3):
        [b for b in at.button if b.key and b.key.startswith("rank_pick_")][slot].click().run()
    at.button(key="rank_submit").click().run()
    raters.revoke(app_env["db"], "ann")
    at.button(key="rank_undo_sub").click().run()
    assert not at.exception
    assert any("revoked" in e.value for e in at.error)


def test_undo_shows_only_once_there_is_something_to_take_back(app_env):
    at = rater_app(app_env["tokens"]["ann"])
    keys = {b.key for b in at.button}
    assert "rate_undo" not in keys  # nothing was submitted yet
    choose(at, 1.0, 1.0)
    at.button(key="rate_submit").click().run()
    assert at.button(key="rate_undo")
    at.button(key="rate_undo").click().run()  # the only rating taken back: gone again
    assert "rate_undo" not in {b.key for b in at.button}
    rank = rater_app(app_env["tokens"]["ann"], "pages/rank.py")
    assert "rank_undo_sub" not in {b.key for b in rank.button}


def test_a_rater_the_restored_database_does_not_know_is_not_called_revoked(app_env, tmp_path):
    from concord.services import studies
    from concord.store.backup import backup, restore

    copy = tmp_path / "before-cleo.db"
    backup(app_env["db"], copy)
    (cleo,) = studies.invite(app_env["db"], "ui", ["cleo"], "http://x")
    at = rater_app(cleo.url.split("token=")[1])
    choose(at, 1.0, 1.0)
    app_env["db"].close()
    restore(app_env["db_path"], copy, confirm=True)  # cleo was invited after the backup
    at.button(key="rate_submit").click().run()
    assert not at.exception
    text = " ".join(e.value for e in at.error) + " ".join(w.value for w in at.warning)
    assert "not known here" in text and "revoked" not in text
    again = rater_app(cleo.url.split("token=")[1])  # a reload: the sign-in says the same
    assert "not known here" in again.error[0].value and "revoked" not in again.error[0].value
