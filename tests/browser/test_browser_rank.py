"""Headless Chromium: a rater ranks eight models' images with clicks and keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.services import studies
from concord.store import frames
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.browser.conftest import idle, start_server, stop
from tests.helpers import make_folder_study

pytestmark = pytest.mark.browser
MODELS = ("aurora-xl", "basilisk-2", "cobalt-flux", "dynamo-sd", "ember-v3", "falcon-lite",
          "garnet-pro", "helix-turbo")


def _serve(tmp_path: Path, name: str, models: tuple[str, ...], extra: str = ""):
    """A rank study ``name`` of two prompts, one invited rater, and the app serving it."""
    manifest = make_folder_study(tmp_path / name, prompts=2, models=models, protocol="rank",
                                 k=1, extra=extra)
    db_path = tmp_path / f"{name}.db"
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (invite,) = studies.invite(db, name, [f"{name}-rater"], "http://unused")
    url, proc = start_server(db_path, tmp_path)
    return {"url": url, "db": db, "token": invite.url.split("token=")[1]}, proc


@pytest.fixture
def server(tmp_path: Path):
    found, proc = _serve(tmp_path, "rk", MODELS)
    yield found
    stop(proc)


def test_rank_eight_images_with_clicks_and_keys(server, page):
    page.goto(f"{server['url']}/?token={server['token']}")
    page.get_by_text("0 / 2 prompts ranked").wait_for(timeout=30_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    picks = page.locator("[class*='st-key-rank_pick_'] button")
    picks.nth(7).wait_for(timeout=15_000)
    assert picks.count() == 8
    # Mouse for slots 3 and 5, keys for the rest; U takes back the last pick.
    picks.nth(2).click()
    page.get_by_text("#1 · remove").wait_for()
    picks.nth(4).click()
    page.get_by_text("#2 · remove").wait_for()
    for key in ("1", "8", "u", "2"):
        page.keyboard.press(key)
    for key in ("4", "6", "7", "8"):
        page.keyboard.press(key)
    page.get_by_text("#8 · remove").wait_for(timeout=15_000)
    page.keyboard.press("Enter")
    page.get_by_text("1 / 2 prompts ranked").wait_for(timeout=15_000)
    html = page.content()
    for model in MODELS:
        assert model not in html

    db = server["db"]
    df = frames.rankings_frame(db, study_store.get_study(db, "rk").id)
    assert len(df) == 8
    order = df.sort_values("rank")["position"].tolist()
    # Slots are 1-based on screen; positions are the 0-based display slots stored.
    assert order == [2, 4, 0, 1, 3, 5, 6, 7]
    assert sorted(df["rank"]) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert df.model.nunique() == 8


@pytest.fixture
def ties_server(tmp_path: Path):
    found, proc = _serve(tmp_path, "rt", MODELS[:4], "ranking:\n  ties: true\n")
    yield found
    stop(proc)


def test_tie_mode_by_key_and_every_action_without_the_mouse(ties_server, page):
    page.goto(f"{ties_server['url']}/?token={ties_server['token']}")
    page.get_by_text("0 / 2 prompts ranked").wait_for(timeout=30_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    page.locator("[class*='st-key-rank_pick_'] button").nth(3).wait_for(timeout=15_000)
    idle(page)
    assert page.locator(".st-key-rank_undo_sub").count() == 0  # nothing submitted yet
    # Shift and a number: that image at actual size; Esc closes it.
    page.keyboard.press("Shift+3")
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Actual size (").wait_for(timeout=15_000)
    page.keyboard.press("Escape")
    dialog.wait_for(state="detached", timeout=15_000)
    idle(page)
    # 1, 3, then U (undo the pick) and R (reset): nothing ranked.
    for key in ("1", "3", "u"):
        page.keyboard.press(key)
    page.get_by_text("#1 · remove").wait_for(timeout=15_000)
    page.keyboard.press("r")
    page.get_by_role("button", name="Submit ⏎ (0/4)").wait_for(timeout=15_000)
    # 2 first; T: tie mode on, so 4 shares 2's rank; T off again, then 1, then 3.
    for key in ("2", "t", "4", "t", "1", "3"):
        page.keyboard.press(key)
    page.get_by_text("#3 · remove").wait_for(timeout=15_000)
    assert page.get_by_text("#=1 · remove").count() == 2
    page.keyboard.press("Enter")
    page.get_by_text("1 / 2 prompts ranked").wait_for(timeout=15_000)
    db = ties_server["db"]
    df = frames.rankings_frame(db, study_store.get_study(db, "rt").id)
    assert sorted(df["rank"]) == [1.5, 1.5, 3, 4]
    # Shift+U takes the submitted ranking back: that prompt again, as it was ranked.
    idle(page)
    page.keyboard.press("Shift+U")
    page.get_by_text("Last ranking undone").wait_for(timeout=15_000)
    page.get_by_text("0 / 2 prompts ranked").wait_for(timeout=15_000)
    page.get_by_text("#=1 · remove").nth(1).wait_for(timeout=15_000)  # the tie as it was
    # S, a reason and Enter skip it, without the mouse.
    idle(page)
    page.keyboard.press("s")
    page.keyboard.type("cannot tell them apart")
    page.keyboard.press("Enter")
    page.get_by_text("1 skipped").wait_for(timeout=15_000)
    assert db.execute("SELECT note FROM marks").fetchall() == [("cannot tell them apart",)]
