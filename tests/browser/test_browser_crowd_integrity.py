"""Headless Chromium against a study someone tries to game: a skipper gets the screen-out
code and never the completion code; a second browser with a taken participant id is
refused and the first participant's records stay as they were (the first browser comes
back through the study link); every rater of a quota of at least ``gold_every`` meets a
gold item; a participant who fails the checks is screened out; in a pair study whose models
wrote 256 px PNGs and 512 px JPEGs, both images of every pair arrive at one size, in one
file type and of one byte length."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from concord.services import studies
from concord.services.crowd import links as crowd
from concord.store.db import open_db
from tests.browser.conftest import idle, start_server, stop
from tests.helpers import make_folder_study
from tests.metadata_images import jpeg_with_everything, png_with_everything

pytestmark = pytest.mark.browser
CODES = {"completion_code": "DONE42", "screenout_code": "NOPE13"}
GOLD_ALL = "".join(f"p{i},m{j},SC,2,0\n" for i in range(4) for j in (1, 2))


def _study(db, root: Path, name: str, crowd_block: str, *, gold: str = "", k: int = 3,
           extra: str = "") -> str:
    folder = root / name
    folder.mkdir(parents=True)
    if gold:
        (folder / "gold.csv").write_text("prompt_id,model,criterion,expected,tolerance\n"
                                         + gold, encoding="utf-8")
        extra += "gold: gold.csv\n"
    manifest = make_folder_study(folder, prompts=4, models=("m1", "m2"), k=k,
                                 extra=extra + "crowd:\n" + crowd_block)
    studies.import_manifest(db, manifest)
    return crowd.create_link(db, name, "http://unused", codes=CODES).url.split("join=")[1]


def _pair_study(db, root: Path) -> str:
    """Three models: 256 px PNGs, 512 px JPEGs, 512 px PNGs (display chosen at import)."""
    folder = root / "duel"
    files = {"tiny": ("png", png_with_everything(size=(256, 256))),
             "jay": ("jpg", jpeg_with_everything(size=(512, 512))),
             "big": ("png", png_with_everything(size=(512, 512)))}
    for model, (ext, data) in files.items():
        (folder / "images" / model).mkdir(parents=True)
        for i in range(3):
            (folder / "images" / model / f"p{i}.{ext}").write_bytes(data)
    with (folder / "prompts.csv").open("w", newline="") as f:
        csv.writer(f).writerows([["prompt_id", "prompt"], *[[f"p{i}", f"prompt {i}"]
                                                             for i in range(3)]])
    (folder / "study.yaml").write_text(
        "name: duel\nprotocol: pair\nlayout: folder\nroot: images\nprompts: prompts.csv\n"
        "raters_per_item: 1\ncrowd:\n  items_per_rater: 4\n", encoding="utf-8")
    studies.import_manifest(db, folder / "study.yaml")
    return crowd.create_link(db, "duel", "http://unused", codes=CODES).url.split("join=")[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("integrity")
    db_path = tmp / "crowd.db"
    db = open_db(db_path)
    joins = {
        "skip": _study(db, tmp, "skip", "  items_per_rater: 2\n"),
        "taken": _study(db, tmp, "taken", "  items_per_rater: 2\n"),
        "gold": _study(db, tmp, "gold", "  items_per_rater: 3\n", gold="p0,m1,SC,1,0\n",
                       k=1, extra="quality:\n  gold_every: 3\n"),
        "block": _study(db, tmp, "block", "  items_per_rater: 4\n", gold=GOLD_ALL,
                        extra="quality:\n  warn_after: 1\n  block_after: 2\n"),
        "duel": _pair_study(db, tmp),
    }
    url, proc = start_server(db_path, tmp)
    yield {"url": url, "db": db, "join": joins, "tmp": tmp}
    stop(proc)


def _open(page, server, study: str, pid: str, session: str = "se-1") -> None:
    page.goto(f"{server['url']}/?join={server['join'][study]}&PROLIFIC_PID={pid}"
              f"&STUDY_ID=st-1&SESSION_ID={session}")


def _ready(page, text: str) -> None:
    page.get_by_text(text).first.wait_for(timeout=30_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    idle(page)


def _rate(page) -> None:
    """SC = 1 (key 3), PR = 0.5 (key W), submit."""
    for key in ("3", "w", "Enter"):
        page.keyboard.press(key)


def _codes(page) -> list[str]:
    return [c.inner_text().strip() for c in page.locator("[data-testid='stCode']").all()]


def test_a_skipper_gets_the_screen_out_code_never_the_completion_code(server, page):
    _open(page, server, "skip", "a" * 24)
    _ready(page, "0 / 2 rated · 0 skipped")
    for n in (1, 2, 3):
        page.keyboard.press("s")
        page.keyboard.type("cannot tell")
        page.keyboard.press("Enter")
        if n < 3:
            page.get_by_text(f"0 / 2 rated · {n} skipped").wait_for(timeout=15_000)
            idle(page)
            assert "DONE42" not in _codes(page)
    page.locator("[data-testid='stCode']", has_text="NOPE13").wait_for(timeout=15_000)
    idle(page)
    assert "DONE42" not in page.content()
    page.reload()  # their own link, later: still the end screen with the screen-out code
    page.locator("[data-testid='stCode']", has_text="NOPE13").wait_for(timeout=30_000)
    assert "DONE42" not in page.content()


def test_a_second_browser_with_a_taken_id_is_refused(server, page, chromium):
    db = server["db"]
    pid = "b" * 24
    _open(page, server, "taken", pid)
    _ready(page, "0 / 2 rated")
    _rate(page)
    page.get_by_text("1 / 2 rated").wait_for(timeout=15_000)
    idle(page)
    tables = ("crowd_participants", "crowd_sessions", "onboarding", "assignments", "ratings")
    before = {t: db.execute(f"SELECT * FROM {t}").fetchall() for t in tables}
    token_hash = db.execute("SELECT token_hash FROM raters").fetchall()
    other = chromium.new_context(viewport={"width": 1200, "height": 900})
    try:
        thief = other.new_page()
        _open(thief, server, "taken", pid, session="se-thief")
        thief.get_by_text("already started this study").wait_for(timeout=30_000)
        idle(thief)
        assert "token=" not in thief.url
        assert thief.locator("[role='radiogroup']").count() == 0
    finally:
        other.close()
    assert {t: db.execute(f"SELECT * FROM {t}").fetchall() for t in tables} == before
    assert db.execute("SELECT token_hash FROM raters").fetchall() == token_hash
    # the first browser closes the tab and comes back from Prolific in a new session: its
    # cookie proves it, and it goes on where it left off
    _open(page, server, "taken", pid, session="se-2")
    _ready(page, "1 / 2 rated")
    sessions = db.execute("SELECT s.params FROM crowd_sessions s JOIN raters r ON"
                          " r.id = s.rater_id WHERE r.name LIKE ? ORDER BY s.id",
                          [f"prolific:{pid}#%"]).fetchall()
    assert ['"se-1"' in sessions[0][0], '"se-2"' in sessions[1][0]] == [True, True]


def test_every_rater_of_a_quota_of_gold_every_meets_gold(server, chromium):
    """k = 1, one gold image, quota 3 = gold_every: three participants, each meets it."""
    db = server["db"]
    gold = db.execute("SELECT g.image_id FROM gold g JOIN images i ON i.id = g.image_id"
                      " JOIN studies s ON s.id = i.study_id WHERE s.name = 'gold'"
                      ).fetchone()[0]
    for pid in ("c" * 24, "d" * 24, "e" * 24):
        context = chromium.new_context(viewport={"width": 1400, "height": 1000})
        try:
            page = context.new_page()
            _open(page, server, "gold", pid)
            _ready(page, "0 / 3 rated")
            for n in (1, 2, 3):
                _rate(page)
                if n < 3:
                    page.get_by_text(f"{n} / 3 rated").wait_for(timeout=15_000)
            page.locator("[data-testid='stCode']", has_text="DONE42").wait_for(timeout=15_000)
        finally:
            context.close()
        rated = {r[0] for r in db.execute(
            "SELECT a.item_id FROM assignments a JOIN raters r ON r.id = a.rater_id WHERE"
            " r.name LIKE ? AND a.status = 'done'", [f"prolific:{pid}#%"])}
        assert len(rated) == 3 and gold in rated


def test_a_participant_who_fails_the_checks_gets_the_screen_out_code(server, page):
    _open(page, server, "block", "f" * 24)
    _ready(page, "0 / 4 rated")
    _rate(page)  # SC = 1; every image here is gold with SC 2
    page.get_by_text("1 of your answers to check items").wait_for(timeout=15_000)
    idle(page)
    _rate(page)
    page.locator("[data-testid='stCode']", has_text="NOPE13").wait_for(timeout=15_000)
    page.get_by_text("answers to check items").first.wait_for()
    assert "DONE42" not in page.content()


def _sides(page) -> list[dict]:
    """Both images of the pair on screen as the browser got them: size, type, length."""
    return page.evaluate("""async () => {
      const imgs = [...document.querySelectorAll("[class*='st-key-pair_side_'] img")];
      return Promise.all(imgs.map(async (img) => {
        await img.decode();
        const r = await fetch(img.src);
        const b = await r.arrayBuffer();
        return {w: img.naturalWidth, h: img.naturalHeight, src: img.src,
                type: r.headers.get('content-type'), n: b.byteLength};
      }));
    }""")


def test_both_images_of_every_pair_arrive_alike(server, page):
    _open(page, server, "duel", "1" * 24)
    seen = []
    for n in range(4):
        _ready(page, f"{n} / 4 pairs judged")
        page.locator("[class*='st-key-pair_side_'] img").nth(1).wait_for(timeout=15_000)
        sides = _sides(page)
        assert len(sides) == 2
        assert {(s["w"], s["h"], s["type"], s["n"]) for s in sides} == {
            (512, 512, "image/png", sides[0]["n"])}
        assert all(s["src"].endswith(".png") for s in sides)
        seen.append({s["src"] for s in sides})
        page.keyboard.press("1")
    page.locator("[data-testid='stCode']", has_text="DONE42").wait_for(timeout=15_000)
    db = server["db"]
    models = {r[0] for r in db.execute(
        "SELECT m.name FROM pair_judgments j JOIN images i ON i.id IN (j.left_image,"
        " j.right_image) JOIN models m ON m.id = i.model_id")}
    assert models == {"tiny", "jay", "big"}  # the 256 px PNG model was among them
