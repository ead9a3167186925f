"""Headless Chromium: a rater signs in by invite link and rates with the keyboard only."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from concord.services import studies
from concord.store import frames
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.browser.conftest import idle, start_server, stop
from tests.helpers import make_folder_study

pytestmark = pytest.mark.browser
MODELS = ("zebra-diffusion-xl", "quokka-gen-2", "narwhal-flux")


@pytest.fixture
def server(tmp_path: Path):
    manifest = make_folder_study(tmp_path / "kb", prompts=3, models=MODELS, k=3)
    db_path = tmp_path / "browser.db"
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (invite,) = studies.invite(db, "kb", ["kim"], "http://unused")
    url, proc = start_server(db_path, tmp_path)
    yield {"url": url, "db": db, "token": invite.url.split("token=")[1], "root": tmp_path / "kb"}
    stop(proc)


def progress_text(page) -> str:
    return page.locator('[data-testid="stProgress"]').first.inner_text()


def test_rate_three_images_with_the_keyboard_only(server, page):
    page.goto(f"{server['url']}/?token={server['token']}")
    page.get_by_text("0 / 9 rated").wait_for(timeout=30_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    for n in range(1, 4):
        page.keyboard.press("3")  # SC = 1
        page.keyboard.press("w")  # PR = 0.5
        page.keyboard.press("Enter")
        page.get_by_text(f"{n} / 9 rated").wait_for(timeout=30_000)
    html = page.content()
    for model in MODELS:
        assert model not in html
    db = server["db"]
    df = frames.ratings_frame(db, study_store.get_study(db, "kb").id)
    assert len(df) == 6
    assert df.image_id.nunique() == 3
    assert sorted(set(zip(df.criterion, df.value, strict=True))) == [("PR", 0.5), ("SC", 1.0)]
    assert (df.seconds >= 0).all()


def test_served_image_bytes_are_the_original_pixels(tmp_path: Path, page):
    root = tmp_path / "hd"
    manifest = make_folder_study(root, prompts=1, models=("m1",), k=1)
    rng = np.random.default_rng(0)
    big = rng.integers(0, 256, size=(1024, 1024, 3), dtype=np.uint8)
    original = root / "images" / "m1" / "p0.png"
    Image.fromarray(big).save(original)
    db_path = tmp_path / "hd.db"
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (invite,) = studies.invite(db, "hd", ["pix"], "http://unused")
    url, proc = start_server(db_path, tmp_path)
    try:
        page.goto(f"{url}/?token={invite.url.split('token=')[1]}")
        img = page.locator('[data-testid="stImage"] img').first
        img.wait_for(timeout=30_000)
        src = img.get_attribute("src")
        assert "m1" not in src and "p0" not in src  # opaque media URL
        body = page.request.get(src if src.startswith("http") else url + src).body()
    finally:
        stop(proc)
    served = Image.open(io.BytesIO(body))
    assert served.format == "PNG"
    assert np.array_equal(np.asarray(served.convert("RGB")), big)


def test_switching_study_in_the_sidebar_switches_the_item(server, page, tmp_path):
    from concord.store import raters

    manifest = make_folder_study(tmp_path / "second", prompts=1, models=("delta-model",))
    studies.import_manifest(server["db"], manifest)
    kim = raters.rater_for_token(server["db"], server["token"])
    raters.add_to_study(server["db"], kim.id, study_store.get_study(server["db"], "second").id)
    page.goto(f"{server['url']}/?token={server['token']}")
    page.get_by_text("Rate images · kb").wait_for(timeout=30_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    page.wait_for_function("() => document.querySelector('[data-testid=stApp]')"
                           ".getAttribute('data-test-script-state') === 'notRunning'")
    page.locator(".st-key-study_pick").click()
    page.get_by_role("option", name="second").click()
    page.get_by_text("Rate images · second").wait_for(timeout=15_000)
    page.get_by_text("0 / 1 rated").wait_for(timeout=15_000)
    assert "delta-model" not in page.content()


def _checked_levels(page, criterion: str) -> list[bool]:
    radios = page.locator(f".st-key-rate_{criterion} [role='radiogroup'] input")
    return [radios.nth(i).is_checked() for i in range(radios.count())]


def test_chosen_scores_survive_a_reload_and_every_action_has_a_key(server, page):
    page.goto(f"{server['url']}/?token={server['token']}")
    page.get_by_text("0 / 9 rated").wait_for(timeout=30_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    idle(page)
    assert page.locator(".st-key-rate_undo").count() == 0  # nothing to take back yet
    page.keyboard.press("g")  # the rating guide; Esc closes it
    page.get_by_role("dialog").get_by_text("Rating guide").wait_for(timeout=15_000)
    page.keyboard.press("Escape")
    page.get_by_role("dialog").wait_for(state="detached", timeout=15_000)
    page.keyboard.press("2")  # SC = 0.5
    page.locator(".st-key-rate_PR [role='radiogroup'] label").nth(3).click()  # PR = 2
    # Both choices kept (the draft is written 40 ms after each choice: the key "2" alone
    # makes one too, so a draft that merely exists may not hold the PR click yet).
    page.wait_for_function("() => Object.keys(localStorage).some((k) =>"
                           " k.startsWith('concord-draft:') && Object.values("
                           "JSON.parse(localStorage.getItem(k)).state).flat()"
                           ".filter(Boolean).length === 2)", timeout=5_000)
    page.reload()  # the choices were never sent: the browser kept them
    page.get_by_text("0 / 9 rated").wait_for(timeout=30_000)
    page.wait_for_function("() => document.querySelectorAll(\"[class*='st-key-rate_']"
                           " [role='radiogroup'] input:checked\").length === 2",
                           timeout=15_000)
    assert _checked_levels(page, "SC") == [False, True, False, False]
    assert _checked_levels(page, "PR") == [False, False, False, True]
    page.keyboard.press("Enter")
    page.get_by_text("1 / 9 rated").wait_for(timeout=30_000)
    db = server["db"]
    df = frames.ratings_frame(db, study_store.get_study(db, "kb").id)
    assert sorted(zip(df.criterion, df.value, strict=True)) == [("PR", 2.0), ("SC", 0.5)]
    # The next image starts empty, also after a reload (its draft went with the submit).
    idle(page)
    page.reload()
    page.get_by_text("1 / 9 rated").wait_for(timeout=30_000)
    idle(page)
    assert not any(_checked_levels(page, "SC") + _checked_levels(page, "PR"))
    assert page.evaluate("Object.keys(localStorage).filter("
                         "(k) => k.startsWith('concord-draft:')).length") == 0
    page.keyboard.press("u")  # Undo, now that there is a rating: that image again
    page.get_by_text("Last rating undone").wait_for(timeout=15_000)
