"""Headless Chromium, keyboard only: consent, the practice block, the rating screen and
an edit from My ratings, without one mouse click."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.services import studies
from concord.services.crowd import links as crowd
from concord.store.db import open_db
from tests.browser.conftest import idle, start_server, stop
from tests.crowd_helpers import make_crowd_study

pytestmark = pytest.mark.browser
PID = "5f1a2b3c4d5e6f7a8b9c0d1e"


@pytest.fixture
def server(tmp_path: Path):
    db_path = tmp_path / "kbd.db"
    db = open_db(db_path)
    studies.import_manifest(db, make_crowd_study(tmp_path / "crowd", quota=2))
    link = crowd.create_link(db, "crowd", "http://unused", codes={"completion_code": "DONE42"})
    url, proc = start_server(db_path, tmp_path)
    yield {"url": url, "db": db, "join": link.url.split("join=")[1]}
    stop(proc)


def _ready(page) -> None:
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    idle(page)


def test_consent_practice_rating_and_an_edit_without_the_mouse(server, page):
    page.goto(f"{server['url']}/?join={server['join']}&PROLIFIC_PID={PID}"
              "&STUDY_ID=st-9&SESSION_ID=se-1")
    page.get_by_text("How to rate").wait_for(timeout=30_000)
    _ready(page)
    page.keyboard.press("a")  # I agree
    page.wait_for_function("() => { const box = document.querySelector("
                           "'.st-key-consent_agree input'); return box && box.checked; }",
                           timeout=15_000)
    idle(page)
    page.keyboard.press("Enter")  # Start
    page.get_by_text("Practice image 1 of 2").wait_for(timeout=15_000)
    _ready(page)
    # Level keys as on the real items (SC 1 2 3 4, PR Q W E R); Enter checks the answer.
    for key in ("3", "e", "Enter"):  # p0/m1 expects SC 1 and PR 1
        page.keyboard.press(key)
    page.get_by_text("Practice item 1 of 2: right").wait_for(timeout=15_000)
    idle(page)
    page.keyboard.press("Enter")  # Next practice image
    page.get_by_text("Practice image 2 of 2").wait_for(timeout=15_000)
    _ready(page)
    for key in ("1", "w", "Enter"):  # p1/m1: SC 0, PR 0.5
        page.keyboard.press(key)
    page.get_by_text("Practice item 2 of 2: right").wait_for(timeout=15_000)
    idle(page)
    page.keyboard.press("Enter")  # Start the real images
    page.get_by_text("0 / 2 rated").wait_for(timeout=15_000)
    _ready(page)
    for key in ("3", "w", "Enter"):
        page.keyboard.press(key)
    page.get_by_text("1 / 2 rated").wait_for(timeout=15_000)

    # My ratings: J puts the focus on the first row's Edit, Enter opens it for editing.
    page.goto(page.url.replace("/?", "/my_work?") if "/my_work" not in page.url else page.url)
    page.get_by_text("Scored images (1)").wait_for(timeout=30_000)
    _ready(page)
    page.keyboard.press("j")
    page.wait_for_function("() => document.activeElement.closest("
                           "\"[class*='st-key-edit_rating_']\") !== null", timeout=5_000)
    page.keyboard.press("Enter")
    page.get_by_text("editing an earlier rating").wait_for(timeout=15_000)
    _ready(page)
    for key in ("4", "Enter"):  # SC 1 -> 2
        page.keyboard.press(key)
    page.get_by_text("Rating updated.").wait_for(timeout=15_000)
    db = server["db"]
    edits = db.execute("SELECT criterion, value FROM ratings WHERE action = 'edit'"
                       " ORDER BY criterion").fetchall()
    assert edits == [("PR", 0.5), ("SC", 2.0)]


def _tab_to(page, css: str) -> None:
    """Tab until the focus is in ``css`` (as a keyboard user does)."""
    for _ in range(25):
        if page.evaluate(f"() => document.activeElement.closest({css!r}) !== null"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {css}")


def test_the_questionnaire_without_the_mouse(tmp_path, page):
    from tests.crowd_helpers import QUESTIONNAIRE
    from tests.helpers import make_folder_study

    db_path = tmp_path / "qn.db"
    db = open_db(db_path)
    manifest = make_folder_study(tmp_path / "qn", prompts=1, models=("m1",), k=1)
    manifest.write_text(manifest.read_text() + QUESTIONNAIRE, encoding="utf-8")
    studies.import_manifest(db, manifest)
    (invite,) = studies.invite(db, "qn", ["quin"], "http://unused")
    url, proc = start_server(db_path, tmp_path)
    try:
        page.goto(f"{url}/?token={invite.url.split('token=')[1]}")
        page.get_by_text("A few questions first").wait_for(timeout=30_000)
        _ready(page)
        _tab_to(page, ".st-key-qn_before_age input")
        page.keyboard.type("41")
        _tab_to(page, ".st-key-qn_before_colour_vision")
        page.keyboard.press("ArrowDown")  # "Yes"
        page.keyboard.press("Enter")  # Continue
        page.get_by_text("0 / 1 rated").wait_for(timeout=30_000)
        got = {r[0]: r[1] for r in db.execute(
            "SELECT question, answer FROM questionnaire_answers")}
        assert (got["age"], got["colour_vision"]) == ("41", '"Yes"')
    finally:
        stop(proc)
