"""Headless Chromium: what a rater's browser really gets and shows.

Blind images (no metadata in any served byte), the prompt as typed, images never upscaled,
zoom at 1:1, the head in view at 1440×900, skip focus and Esc, a revoked link in an open
tab, ranking by clicking the images with a draft that survives a reload, and invite links
that point where the server really listens.
"""

from __future__ import annotations

import base64
import csv
import re
from pathlib import Path

import numpy as np
import pytest

from concord.services import studies
from concord.store import raters as rater_store
from concord.store.db import open_db
from tests.browser.conftest import focus_in, idle, start_server, stop
from tests.metadata_images import (
    FORMS,
    NAME,
    jpeg_with_everything,
    pixels,
    png_with_everything,
    webp_with_everything,
)

pytestmark = pytest.mark.browser
PROMPT = "*SALE* __now__ [click](http://example.com) $x^2$ :smile: <b>bold</b>\nline two"
MODELS = ("m-png", "m-jpeg", "m-webp")


def _write_study(root: Path) -> Path:
    """One prompt, three models: a 256 px PNG, a 1024 px JPEG and a WebP, all full of the
    model name in their metadata (as generators write it)."""
    files = {"m-png": ("p0.png", png_with_everything(size=(256, 256))),
             "m-jpeg": ("p0.jpg", jpeg_with_everything(size=(1024, 1024))),
             "m-webp": ("p0.webp", webp_with_everything(size=(300, 200)))}
    for model, (name, data) in files.items():
        (root / "images" / model).mkdir(parents=True)
        (root / "images" / model / name).write_bytes(data)
    with (root / "prompts.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["prompt_id", "prompt"])
        w.writerow(["p0", PROMPT])
        w.writerow(["p1", "second prompt"])
    for model, (name, data) in files.items():
        (root / "images" / model / name.replace("p0", "p1")).write_bytes(data)
    manifest = root / "study.yaml"
    # display: false: these tests check the images as generated (metadata stripped, never
    # upscaled); the normalised serving is tests/browser/test_browser_crowd_integrity.py's
    manifest.write_text("name: trust\nprotocol: both\nlayout: folder\nroot: images\n"
                        "prompts: prompts.csv\nraters_per_item: 3\ndisplay: false\n",
                        encoding="utf-8")
    return manifest


@pytest.fixture
def server(tmp_path: Path):
    manifest = _write_study(tmp_path / "trust")
    db_path = tmp_path / "trust.db"
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    (invite,) = studies.invite(db, "trust", ["tess"], "http://unused")
    url, proc = start_server(db_path, tmp_path)
    yield {"url": url, "db": db, "token": invite.url.split("token=")[1],
           "root": tmp_path / "trust"}
    stop(proc)


def _open(page, server, path: str = "/") -> None:
    page.goto(f"{server['url']}{path}?token={server['token']}")
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached", timeout=30_000)
    idle(page)


_FETCH_SHOWN = """async () => {
  const out = [];
  for (const img of document.querySelectorAll('img')) {
    const src = img.getAttribute('src');
    if (!src || !src.includes('/media/') || !img.complete || !img.naturalWidth) continue;
    const r = await fetch(src);
    if (!r.ok) continue;  // replaced by a rerun since it was shown
    const bytes = new Uint8Array(await r.arrayBuffer());
    let text = '';
    for (let i = 0; i < bytes.length; i += 8192) {
      text += String.fromCharCode(...bytes.subarray(i, i + 8192));
    }
    out.push(btoa(text));
  }
  return out;
}"""


def _served_bytes(page, server) -> list[bytes]:
    """The bytes of every image on the page, fetched from the media URLs it shows."""
    idle(page)
    return [base64.b64decode(b) for b in page.evaluate(_FETCH_SHOWN)]


def _in_view(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 900


def test_no_served_byte_names_a_model_and_pixels_are_the_originals(server, page):
    _open(page, server)
    seen = []
    for n in range(3):  # preload included: every image of the study passes through here
        seen += _served_bytes(page, server)
        page.keyboard.press("s")
        page.locator(".st-key-rate_skip_reason input").wait_for()
        page.keyboard.type("next")
        page.keyboard.press("Enter")
        page.get_by_text(f"{n + 1} skipped").wait_for(timeout=15_000)
        idle(page)
    _open(page, server, "/rank")
    seen += _served_bytes(page, server)
    assert len(seen) >= 6
    for body in seen:
        for form in FORMS:
            assert form not in body
    originals = [pixels(p.read_bytes()) for p in (server["root"] / "images").rglob("p0.*")]
    for body in seen:
        assert any(np.array_equal(pixels(body), o) for o in originals)
    assert NAME not in page.content()


def test_the_prompt_is_shown_exactly_as_typed(server, page):
    _open(page, server)
    texts = page.locator(".concord-prompt").all_inner_texts()
    # The order is random: up to three items of the other prompt may come first.
    for n in range(3):
        if PROMPT in texts:
            break
        page.keyboard.press("s")
        page.locator(".st-key-rate_skip_reason input").wait_for()
        page.keyboard.type("later")
        page.keyboard.press("Enter")
        page.get_by_text(f"{n + 1} skipped").wait_for(timeout=15_000)
        idle(page)
        texts = page.locator(".concord-prompt").all_inner_texts()
    assert PROMPT in texts
    assert page.locator(".concord-prompt em, .concord-prompt a, .concord-prompt b").count() == 0


def test_images_are_never_upscaled_and_zoom_is_one_to_one(server, page):
    _open(page, server, "/rank")
    sizes = page.eval_on_selector_all(
        "[class*='st-key-rank_slot_'] img",
        "els => els.map(e => [e.naturalWidth, e.getBoundingClientRect().width])")
    assert sizes and all(shown <= natural + 0.5 for natural, shown in sizes)
    assert any(natural == 256 and shown <= 256 for natural, shown in sizes)
    page.locator("[class*='st-key-rank_zoom_'] button").first.click()
    zoomed = page.locator(".st-key-concord_zoom img")
    zoomed.wait_for(timeout=15_000)
    page.wait_for_function("() => { const i = document.querySelector('.st-key-concord_zoom img');"
                           " return i && i.complete && i.naturalWidth > 0; }")
    natural, shown = zoomed.evaluate("e => [e.naturalWidth, e.getBoundingClientRect().width]")
    assert abs(natural - shown) < 1


def test_head_stays_in_view_and_skip_field_has_focus(server, page):
    page.set_viewport_size({"width": 1440, "height": 900})
    _open(page, server)
    for key in ("2", "w", "r", "3"):
        page.keyboard.press(key)
    page.keyboard.press("f")
    page.locator(".st-key-rate_flag_note input").wait_for()
    focus_in(page, ".st-key-rate_flag_note")
    page.keyboard.type("odd hands")  # typed into the field, not taken as shortcuts
    page.keyboard.press("Enter")
    page.get_by_text("Flagged for the researcher").wait_for(timeout=15_000)
    idle(page)
    assert _in_view(page, '[data-testid="stProgress"]')
    assert _in_view(page, ".concord-prompt")
    assert _in_view(page, '[data-testid="stAlert"]')
    assert page.locator(".st-key-rate_flag button").inner_text().startswith("Flagged")
    # S opens the reason field with the focus; Esc closes it and nothing is skipped
    page.keyboard.press("s")
    page.locator(".st-key-rate_skip_reason input").wait_for()
    focus_in(page, ".st-key-rate_skip_reason")
    page.keyboard.type("zzz")
    page.keyboard.press("Escape")
    page.locator(".st-key-rate_skip_reason").wait_for(state="detached", timeout=15_000)
    marks = list(server["db"].query("SELECT kind, note FROM marks"))
    assert marks == [{"kind": "flag", "note": "odd hands"}]


def test_a_revoked_link_stops_working_in_an_open_tab(server, page):
    _open(page, server)
    rater_store.revoke(server["db"], "tess")
    for key in ("3", "w", "Enter"):
        page.keyboard.press(key)
    page.get_by_text("revoked").first.wait_for(timeout=15_000)
    assert server["db"].execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 0


def test_clicking_an_image_ranks_it_and_the_draft_survives_a_reload(server, page):
    _open(page, server, "/rank")
    images = page.locator("[class*='st-key-rank_slot_'] img")
    images.nth(2).click()
    page.get_by_text("#1 · remove").wait_for(timeout=15_000)
    idle(page)
    images.nth(0).click()
    page.get_by_text("#2 · remove").wait_for(timeout=15_000)
    idle(page)
    before = page.locator("[class*='st-key-rank_pick_'] button").all_inner_texts()
    page.reload()
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached", timeout=30_000)
    page.get_by_text("#2 · remove").wait_for(timeout=15_000)
    assert page.locator("[class*='st-key-rank_pick_'] button").all_inner_texts() == before


def test_invite_links_point_where_the_server_listens(tmp_path, page):
    db_path = tmp_path / "links.db"
    db = open_db(db_path)
    studies.import_manifest(db, _write_study(tmp_path / "links"))
    url, proc = start_server(db_path, tmp_path, env_extra={"CONCORD_BASE_URL": ""})
    try:
        page.goto(url)
        page.locator("input[type=password]").fill("letmein-test-secret-7Qx9")
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("link", name="Raters").click()
        page.get_by_label("Names, one per line").fill("ana")
        page.get_by_role("button", name="Create invite links").click()
        code = page.locator('[data-testid="stCode"]').first
        code.wait_for(timeout=15_000)
        link = re.search(r"(http\S+\?token=\S+)", code.inner_text()).group(1)
        assert link.startswith(f"{url}/?token=")
        # pressing it again keeps ana's link (she has one) unless asked to replace it
        page.get_by_role("button", name="Create invite links").click()
        page.get_by_text("already have a working link").wait_for(timeout=15_000)
        assert rater_store.rater_for_token(db, link.split("token=")[1]).name == "ana"
    finally:
        stop(proc)


def test_a_reason_typed_right_after_s_goes_into_the_field(server, page):
    """A fast typer: S, then the reason at once, before the field is there. 'quick' holds
    shortcut keys (Q: a PR level, U: undo): none may fire; the text lands in the field."""
    _open(page, server)
    page.keyboard.press("s")
    page.keyboard.type("quick")  # no wait: the field may not exist yet
    field = page.locator(".st-key-rate_skip_reason input")
    field.wait_for()
    page.wait_for_function("() => document.querySelector('.st-key-rate_skip_reason input')"
                           "?.value === 'quick'", timeout=15_000)
    page.keyboard.press("Enter")
    page.get_by_text("1 skipped").wait_for(timeout=15_000)
    marks = list(server["db"].query("SELECT kind, note FROM marks"))
    assert marks == [{"kind": "skip", "note": "quick"}]
    assert server["db"].execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 0
