"""Headless Chromium: a rater ticks checklist conditions with number keys, sees the value
derived live, overrides one value with a reason (keys only: O, arrows, Tab, Enter), and
the ticks are stored."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from concord.services import studies
from concord.services.labelling import checklist
from concord.store import frames
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.browser.conftest import idle, start_server, stop
from tests.helpers import make_folder_study

pytestmark = pytest.mark.browser


@pytest.fixture
def server(tmp_path: Path):
    manifest = make_folder_study(tmp_path / "ck", prompts=2, models=("m1",), k=1,
                                 extra="rubric: imagenhub-text-to-image\nchecklist: true\n")
    db_path = tmp_path / "browser.db"
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (invite,) = studies.invite(db, "ck", ["kim"], "http://unused")
    url, proc = start_server(db_path, tmp_path)
    yield {"url": url, "db": db, "token": invite.url.split("token=")[1]}
    stop(proc)


def _checked(page, position: int) -> bool:
    return page.locator(f".st-key-rate_cond{position}x input").is_checked()


def _settled(page) -> None:
    """Wait until the key listener has sent every queued key and the app is idle."""
    page.wait_for_function(
        "() => { const kb = window.__concordKeys; const app = document.querySelector("
        "'[data-testid=\"stApp\"]'); return kb && !kb.busy && kb.queue.length === 0 && app"
        " && app.getAttribute('data-test-script-state') === 'notRunning'; }", timeout=15_000)


def test_tick_with_keys_override_with_a_reason(server, page):
    page.goto(f"{server['url']}/?token={server['token']}")
    page.get_by_text("0 / 2 rated").wait_for(timeout=30_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    page.get_by_text("Checklist gives SC = 0").wait_for(timeout=15_000)
    # 1, 2: the prompt's content and its coarse properties hold -> SC 1 (fine detail off).
    for key in ("1", "2"):
        page.keyboard.press(key)
    page.get_by_text("Checklist gives SC = 1").wait_for(timeout=15_000)
    # 4, 5, 6: every PR condition holds -> PR 2; 6 again un-ticks, 6 once more re-ticks.
    for key in ("4", "5", "6", "6", "6"):
        page.keyboard.press(key)
    _settled(page)
    page.get_by_text("Checklist gives PR = 2").wait_for(timeout=15_000)
    assert [_checked(page, i) for i in range(6)] == [True, True, False, True, True, True]
    # Without an override Enter submits the derived values.
    page.keyboard.press("Enter")
    page.get_by_text("1 / 2 rated").wait_for(timeout=30_000)
    page.get_by_text("Checklist gives SC = 0").wait_for(timeout=15_000)
    # The next image starts with no ticks (the text can show before the boxes are redrawn).
    idle(page)
    page.wait_for_function("() => document.querySelectorAll("
                           "\"[class*='st-key-rate_cond'] input:checked\").length === 0",
                           timeout=15_000)
    assert not any(_checked(page, i) for i in range(6))
    # Second image: tick 1 (SC 0.5), then override SC to 1 with the keys only: O puts the
    # focus on SC's value, → moves it, Tab reaches the reason, Enter submits from there.
    page.keyboard.press("1")
    page.get_by_text("Checklist gives SC = 0.5").wait_for(timeout=15_000)
    _settled(page)
    sc = page.locator(".st-key-rate_SC [role='radiogroup'] input")
    page.keyboard.press("o")
    page.wait_for_function("() => document.activeElement.closest('.st-key-rate_SC') !== null",
                           timeout=5_000)
    page.keyboard.press("ArrowRight")  # 0.5 -> 1
    page.wait_for_function("(el) => el.checked", arg=sc.nth(2).element_handle(),
                           timeout=5_000)
    page.keyboard.press("Enter")  # no reason yet: refused, the image stays
    page.get_by_text("to choose 1 instead, give a reason").wait_for(timeout=15_000)
    _settled(page)
    if not sc.nth(2).is_checked():  # the refusal redrew the choices: choose again
        page.keyboard.press("o")
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Tab")
    page.wait_for_function("() => document.activeElement.closest('.st-key-rate_reason_SC')"
                           " !== null", timeout=5_000)
    page.keyboard.type("only a tiny detail differs")
    page.keyboard.press("Enter")
    page.get_by_text("2 / 2 rated").wait_for(timeout=30_000)

    db = server["db"]
    sid = study_store.get_study(db, "ck").id
    ratings = frames.ratings_frame(db, sid)
    assert sorted(zip(ratings.criterion, ratings.value, strict=True)) == [
        ("PR", 0.0), ("PR", 2.0), ("SC", 1.0), ("SC", 1.0)]
    ticks = checklist.ticks_frame(db, sid)
    assert len(ticks) == 12  # 2 images x 6 conditions
    summary = []
    for _, part in ticks[ticks.criterion == "SC"].groupby("image_id"):
        reason = part.reason.iloc[0]
        summary.append((part.ticked.tolist(), float(part.derived.iloc[0]),
                        float(part.final.iloc[0]), None if pd.isna(reason) else reason))
    assert sorted(summary, key=str) == sorted([
        ([1, 1, 0], 1.0, 1.0, None),
        ([1, 0, 0], 0.5, 1.0, "only a tiny detail differs")], key=str)
