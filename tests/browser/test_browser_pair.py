"""Headless Chromium: a rater judges pairs with the keyboard (and a click on an image)."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.services import studies
from concord.services.labelling import pairs
from concord.store import raters as rater_store
from concord.store.db import open_db
from tests.browser.conftest import focus_in, idle, start_server, stop
from tests.helpers import make_folder_study

pytestmark = pytest.mark.browser
MODELS = ("orca-diffusion", "lynx-gen-3", "ibis-flux", "tapir-xl")


@pytest.fixture
def server(tmp_path: Path):
    manifest = make_folder_study(tmp_path / "ab", prompts=2, models=MODELS, protocol="pair",
                                 k=1, extra="pairs:\n  pairs_per_prompt: 3\n  seed: 4\n")
    db_path = tmp_path / "pairs.db"
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (invite,) = studies.invite(db, "ab", ["pia"], "http://unused")
    url, proc = start_server(db_path, tmp_path)
    yield {"url": url, "db": db, "token": invite.url.split("token=")[1]}
    stop(proc)


def _judged(page, n: int) -> None:
    page.get_by_text(f"{n} / 6 pairs judged").wait_for(timeout=15_000)


def test_judge_pairs_with_keys_skip_undo_and_a_click(server, page):
    page.goto(f"{server['url']}/?token={server['token']}")
    _judged(page, 0)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    sides = page.locator("[class*='st-key-pair_side_'] img")
    sides.nth(1).wait_for(timeout=15_000)  # the keys can be ready before the images show
    idle(page)
    assert sides.count() == 2
    assert page.locator(".st-key-pair_undo").count() == 0  # nothing to take back yet
    # 3 and T both mean tie, 4 and B both bad (the buttons say so).
    page.get_by_role("button", name="[3 / T] Tie").wait_for()
    page.get_by_role("button", name="[4 / B] Both bad").wait_for()
    for n, key in enumerate(("1", "ArrowRight", "3", "4"), start=1):
        page.keyboard.press(key)
        _judged(page, n)
    page.keyboard.press("u")  # both bad taken back: that pair again, then B, then undo, T
    _judged(page, 3)
    page.get_by_text("Last judgment undone").wait_for(timeout=15_000)
    page.keyboard.press("b")
    _judged(page, 4)
    page.keyboard.press("u")
    _judged(page, 3)
    idle(page)
    page.keyboard.press("t")
    _judged(page, 4)
    idle(page)
    page.keyboard.press("s")  # the reason field has the focus; Esc cancels
    page.locator(".st-key-pair_skip_reason input").wait_for()
    focus_in(page, ".st-key-pair_skip_reason")
    page.keyboard.type("zzz")
    page.keyboard.press("Escape")
    page.locator(".st-key-pair_skip_reason").wait_for(state="detached", timeout=15_000)
    idle(page)
    # A fast typist: S, the reason and Enter before the field is there. The letters go into
    # the field (B is no "both bad"), and the Enter submits it once they are in.
    page.keyboard.press("s")
    page.keyboard.type("blurry both")
    page.keyboard.press("Enter")
    page.get_by_text("1 skipped").wait_for(timeout=15_000)
    idle(page)
    page.locator(".st-key-pair_side_left img").click()  # a click on an image chooses it
    page.get_by_text("All done").wait_for(timeout=15_000)
    html = page.content()
    for model in MODELS:
        assert model not in html

    db = server["db"]
    rows = db.execute("SELECT j.pair_id, j.left_image, j.right_image, j.outcome, j.action,"
                      " pr.image_a, pr.image_b FROM pair_judgments j JOIN pairs pr ON"
                      " pr.id = j.pair_id ORDER BY j.id").fetchall()
    assert [r[3:5] for r in rows] == [("left", "judge"), ("right", "judge"), ("tie", "judge"),
                                      ("both_bad", "judge"), (None, "undo"),
                                      ("both_bad", "judge"), (None, "undo"),
                                      ("tie", "judge"), ("left", "judge")]
    assert rows[3][0] == rows[4][0] == rows[5][0] == rows[6][0] == rows[7][0]
    pia = rater_store.get_rater(db, "pia").id
    for pair_id, left, right, _, _, a, b in rows:
        flip = pairs.swapped(4, pia, pair_id)
        assert (left, right) == ((b, a) if flip else (a, b))
    assert len({r[1] == r[5] for r in rows}) == 2  # both placements occur
    assert db.execute("SELECT unit, note FROM marks").fetchall() == [("pair", "blurry both")]
