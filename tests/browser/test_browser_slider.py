"""Headless Chromium: a slider set with the arrow keys, PgUp/PgDn and Home/End alone (no
mouse), a comment typed after C and submitted with Ctrl+Enter, on the rate screen; a
comment with a pair choice by key."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.services import studies
from concord.store import comments as comment_store
from concord.store import frames
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.browser.conftest import idle, start_server, stop
from tests.helpers import make_folder_study

pytestmark = pytest.mark.browser
# One slider of 0..100 in 0.1 steps (1,001 stops) and one of five whole steps.
RUBRIC = """id: sliders
title: Sliders
task: rating on sliders
source: {title: ours}
criteria:
  - key: quality
    name: Quality
    definition: How good the image is
    continuous: {min: 0, max: 100, step: 0.1, min_label: awful, max_label: perfect}
  - key: fit
    name: Fit
    definition: How well the image fits the prompt
    continuous: {min: 0, max: 4, step: 1}
"""


@pytest.fixture
def server(tmp_path: Path):
    root = tmp_path / "sl"
    root.mkdir()
    (root / "sliders.yaml").write_text(RUBRIC, encoding="utf-8")
    manifest = make_folder_study(root, prompts=2, models=("a", "b"), k=1,
                                 extra="rubric: sliders.yaml\ncomments: optional\n")
    db_path = tmp_path / "browser.db"
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (invite,) = studies.invite(db, "sl", ["kim"], "http://unused")
    url, proc = start_server(db_path, tmp_path)
    yield {"url": url, "db": db, "token": invite.url.split("token=")[1]}
    stop(proc)


def _thumb(page, key: str) -> str:
    return page.locator(f".st-key-rate_{key} [data-testid='stSliderThumbValue']").inner_text()


def test_sliders_and_a_comment_by_keyboard_alone(server, page):
    page.goto(f"{server['url']}/?token={server['token']}")
    page.get_by_text("0 / 4 rated").wait_for(timeout=30_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    assert _thumb(page, "quality") == "not set"
    page.keyboard.press("Enter")  # nothing chosen: refused, nothing stored
    page.get_by_text("choose a score for quality, fit").wait_for(timeout=30_000)
    idle(page)
    # Nothing has the focus: the arrow keys go to the first slider.
    for key in ("ArrowRight", "PageUp", "PageUp", "ArrowRight", "ArrowLeft", "ArrowRight"):
        page.keyboard.press(key)
    assert _thumb(page, "quality") == "20.1"  # 0, then +10, +10, +0.1, -0.1, +0.1
    page.keyboard.press("v")  # the next slider
    page.keyboard.press("End")
    assert _thumb(page, "fit") == "4"
    page.keyboard.press("c")  # the cursor in the comment field
    page.keyboard.type("two heads; s looks fine")  # keys typed there are text, not shortcuts
    page.keyboard.press("Control+Enter")
    page.get_by_text("1 / 4 rated").wait_for(timeout=30_000)
    db = server["db"]
    study = study_store.get_study(db, "sl")
    got = frames.ratings_frame(db, study.id).set_index("criterion")["value"]
    assert got.to_dict() == pytest.approx({"quality": 20.1, "fit": 4.0})
    assert comment_store.current(db, study.id)["comment"].tolist() == [
        "two heads; s looks fine"]
    idle(page)
    assert _thumb(page, "quality") == "not set"  # the next image starts unset
    assert page.locator(".st-key-rate_comment textarea").input_value() == ""


@pytest.fixture
def pair_server(tmp_path: Path):
    manifest = make_folder_study(tmp_path / "pc", prompts=2, models=("a", "b"), k=1,
                                 protocol="pair",
                                 extra="comments: required\npairs:\n  pairs_per_prompt: 1\n")
    db_path = tmp_path / "pairs.db"
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (invite,) = studies.invite(db, "pc", ["kim"], "http://unused")
    url, proc = start_server(db_path, tmp_path)
    yield {"url": url, "db": db, "token": invite.url.split("token=")[1]}
    stop(proc)


def test_a_required_comment_then_a_pair_choice_by_key(pair_server, page):
    page.goto(f"{pair_server['url']}/pair?token={pair_server['token']}")
    page.get_by_text("0 / 2 pairs judged").wait_for(timeout=30_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    page.keyboard.press("1")  # no comment yet: refused
    page.get_by_text("write a comment").wait_for(timeout=30_000)
    idle(page)
    page.keyboard.press("c")
    page.keyboard.type("left 1 is sharper")  # "1" is text here, not the choice
    page.keyboard.press("Escape")  # leave the field: the keys work again
    page.keyboard.press("1")
    page.get_by_text("1 / 2 pairs judged").wait_for(timeout=30_000)
    db = pair_server["db"]
    study = study_store.get_study(db, "pc")
    assert comment_store.current(db, study.id)["comment"].tolist() == ["left 1 is sharper"]
    outcome = db.execute("SELECT outcome FROM pair_judgments").fetchall()
    assert [o for (o,) in outcome] == ["left"]
