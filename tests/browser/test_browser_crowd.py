"""Headless Chromium: a Prolific participant opens the study link, accepts the consent,
does the practice block with feedback, rates the real images and gets the completion
code; coming back through the study link in the same browser resumes as the same rater,
another device with only the study link and the id is refused."""

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
MODELS_SHOWN = ("m1", "m2")


@pytest.fixture
def server(tmp_path: Path):
    db_path = tmp_path / "crowd.db"
    db = open_db(db_path)
    studies.import_manifest(db, make_crowd_study(tmp_path / "crowd", quota=2))
    link = crowd.create_link(db, "crowd", "http://unused", codes={"completion_code": "DONE42"})
    url, proc = start_server(db_path, tmp_path)
    yield {"url": url, "db": db, "join": link.url.split("join=")[1], "shots": tmp_path}
    stop(proc)


def pick(page, key: str, index: int) -> None:
    page.locator(f".st-key-{key} [role='radiogroup'] label").nth(index).click()


def practise(page, sc: int, pr: int, expect: str) -> None:
    pick(page, "practice_SC", sc)
    pick(page, "practice_PR", pr)
    page.get_by_role("button", name="Check my answer").click()
    page.get_by_text(expect).wait_for(timeout=15_000)
    # the feedback table: the rater's answer beside the expected one
    table = page.locator("[data-testid='stTable']")
    table.get_by_text("your answer").wait_for(timeout=15_000)
    table.get_by_text("expected").wait_for(timeout=15_000)


def test_prolific_sign_up_consent_practice_items_and_completion_code(server, page, chromium):
    study_link = (f"{server['url']}/?join={server['join']}&PROLIFIC_PID={PID}"
                  "&STUDY_ID=st-9&SESSION_ID=se-1")
    page.goto(study_link)
    page.get_by_text("Before you start").first.wait_for(timeout=30_000)
    assert "token=" in page.url and "PROLIFIC_PID" not in page.url
    page.get_by_text("How to rate").wait_for()
    page.get_by_text("I have read the above and I agree").click()
    idle(page)
    page.get_by_role("button", name="Start").click()
    page.get_by_text("Practice image 1 of 2").wait_for(timeout=15_000)
    # values 0, 0.5, 1, 2: p0/m1 expects SC 1 and PR 1
    practise(page, 2, 1, "Practice item 1 of 2: not quite")
    page.get_by_role("button", name="Next practice image").click()
    page.get_by_text("Practice image 2 of 2").wait_for(timeout=15_000)
    practise(page, 0, 1, "Practice item 2 of 2: right")  # p1/m1: SC 0, PR 0.5
    page.get_by_role("button", name="Start the real images").click()
    page.get_by_text("0 / 2 rated").wait_for(timeout=15_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    for n in (1, 2):
        page.keyboard.press("3")  # SC = 1
        page.keyboard.press("w")  # PR = 0.5
        page.keyboard.press("Enter")
        if n == 1:
            page.get_by_text("1 / 2 rated").wait_for(timeout=15_000)
    page.get_by_text("You have finished this study").wait_for(timeout=15_000)
    page.locator("[data-testid='stCode']", has_text="DONE42").wait_for(timeout=15_000)
    idle(page)
    page.screenshot(path=str(server["shots"] / "crowd-done.png"))
    html = page.content()
    assert all(f"/{m}/" not in html for m in MODELS_SHOWN)
    db = server["db"]
    ((pid, params),) = db.execute("SELECT participant_id, params FROM crowd_participants")
    assert pid == PID and '"STUDY_ID":"st-9"' in params
    assert db.execute("SELECT COUNT(DISTINCT submission) FROM ratings").fetchone()[0] == 2
    assert db.execute("SELECT COUNT(*) FROM practice_answers WHERE answer IS NOT NULL"
                      ).fetchone()[0] == 2
    # the same participant through the study link again, in the same browser (its cookie
    # holds the personal token): the same rater, finished, the same code
    page.goto(study_link.replace("se-1", "se-2"))
    page.get_by_text("You have finished this study").wait_for(timeout=30_000)
    page.locator("[data-testid='stCode']", has_text="DONE42").wait_for(timeout=15_000)
    # another device with the study link and the id alone is refused; nothing changes
    other = chromium.new_context(viewport={"width": 1200, "height": 900})
    try:
        again = other.new_page()
        again.goto(study_link.replace("se-1", "se-3"))
        again.get_by_text("already started this study").wait_for(timeout=30_000)
        assert "DONE42" not in again.content()
    finally:
        other.close()
    assert db.execute("SELECT COUNT(*) FROM raters").fetchone()[0] == 1
