"""Headless Chromium at phone (390 × 844, touch) and tablet (768 × 1024) size: every rater
screen without horizontal scrolling, the image before the choices and in view, touch
targets of 44 px; a study that needs a larger screen or a desktop says so before the
consent, and nobody joins."""

from __future__ import annotations

import pytest

from concord.services import studies
from concord.services.crowd import links as crowd
from concord.store.db import open_db
from tests.browser.conftest import idle, start_server, stop
from tests.crowd_helpers import make_crowd_study
from tests.helpers import make_folder_study, write_png

pytestmark = pytest.mark.browser
PHONE = {"width": 390, "height": 844}
TABLET = {"width": 768, "height": 1024}
IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
          "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("phone")
    db_path = tmp / "phone.db"
    db = open_db(db_path)
    specs = {"sc": ("score", ""), "rk": ("rank", ""),
             "pr": ("pair", "pairs:\n  pairs_per_prompt: 2\n")}
    tokens = {}
    for name, (protocol, extra) in specs.items():
        manifest = make_folder_study(tmp / name, prompts=2, models=("a", "b", "c", "d"),
                                     protocol=protocol, k=1, extra=extra)
        for image in (tmp / name / "images").rglob("*.png"):  # images of a real size
            write_png(image, size=(1024, 1024), color=(200, 80, 40))
        studies.import_manifest(db, manifest)
        (invite,) = studies.invite(db, name, [f"r-{name}"], "http://unused")
        tokens[name] = invite.url.split("token=")[1]
    crowd_manifest = make_crowd_study(tmp / "cs")
    crowd_manifest.write_text(crowd_manifest.read_text() + "devices:\n  min_width: 1024\n"
                              "  desktop_only: true\n", encoding="utf-8")
    studies.import_manifest(db, crowd_manifest)
    link = crowd.create_link(db, "cs", "http://unused")
    url, proc = start_server(db_path, tmp)
    yield {"url": url, "db": db, "tokens": tokens, "join": link.url.split("join=")[1]}
    stop(proc)


@pytest.fixture
def browser(chromium):
    return chromium


def _open(browser, size: dict, url: str, *, phone: bool, agent: str | None = None):
    context = browser.new_context(viewport=size, has_touch=phone, is_mobile=phone,
                                  **({"user_agent": agent} if agent else {}))
    page = context.new_page()
    page.goto(url)
    return context, page


def _layout(page) -> dict:
    return page.evaluate("""() => {
      const main = document.querySelector('[data-testid=stMain]');
      const imgs = [...document.querySelectorAll('[data-testid=stMain] [data-testid=stImage] img')]
        .filter((i) => !i.closest('.st-key-concord_preload')).map((i) => i.getBoundingClientRect());
      const choice = document.querySelector('[role=radiogroup]');
      const small = [...main.querySelectorAll('button, [role=radiogroup] label')]
        .filter((b) => b.offsetParent !== null && b.getBoundingClientRect().height < 43.5)
        .map((b) => b.innerText.slice(0, 30));
      return {wide: Math.max(document.documentElement.scrollWidth, main.scrollWidth),
              width: window.innerWidth, imgs: imgs.map((r) => [r.left, r.top, r.width]),
              choice: choice ? choice.getBoundingClientRect().top : null, small};
    }""")


@pytest.mark.parametrize(("size", "phone"), [(PHONE, True), (TABLET, False)])
def test_every_rater_screen_fits_with_the_image_first(server, browser, size, phone):
    for name, ready in (("sc", "0 / 8 rated"), ("rk", "0 / 2 prompts ranked"),
                        ("pr", "0 / 4 pairs judged")):
        context, page = _open(browser, size, f"{server['url']}/?token={server['tokens'][name]}",
                              phone=phone)
        try:
            page.get_by_text(ready).wait_for(timeout=30_000)
            page.locator("[data-testid=stMain] [data-testid=stImage] img").first.wait_for()
            idle(page)
            got = _layout(page)
            assert got["wide"] <= got["width"], (name, got)  # no horizontal scroll
            first = min(top for _, top, _ in got["imgs"])
            assert first < size["height"] * 0.6, (name, got)  # in view at once
            if got["choice"] is not None:
                assert first < got["choice"], (name, got)  # the image before the rubric
            if phone:
                assert got["small"] == [], (name, got)  # 44 px touch targets
            if name == "pr":  # left and right stay left and right
                (lx, ly, _), (rx, ry, _) = got["imgs"][:2]
                assert lx < rx and abs(ly - ry) < 2, got
            if name == "rk" and phone:  # two images a row
                tops = sorted(round(top) for _, top, _ in got["imgs"])
                assert tops[0] == tops[1] and tops[2] > tops[1], got
        finally:
            context.close()


def test_rating_by_touch_on_a_phone(server, browser):
    context, page = _open(browser, PHONE, f"{server['url']}/?token={server['tokens']['sc']}",
                          phone=True)
    try:
        page.get_by_text("0 / 8 rated").wait_for(timeout=30_000)
        idle(page)
        page.locator(".st-key-rate_SC [role='radiogroup'] label").nth(2).tap()
        page.locator(".st-key-rate_PR [role='radiogroup'] label").nth(1).tap()
        page.locator(".st-key-rate_submit button").tap()
        page.get_by_text("1 / 8 rated").wait_for(timeout=30_000)
    finally:
        context.close()
    rows = server["db"].execute("SELECT criterion, value FROM ratings r JOIN studies s ON"
                                " s.id = r.study_id WHERE s.name = 'sc' ORDER BY criterion")
    assert rows.fetchall() == [("PR", 0.5), ("SC", 1.0)]


@pytest.mark.parametrize(("size", "agent", "says"), [
    (PHONE, IPHONE, "needs a computer with a mouse or trackpad"),
    (TABLET, None, "at least 1024 pixels wide, and yours is 768 × 1024"),
])
def test_a_screen_the_study_cannot_use_is_told_before_the_consent(server, browser, size,
                                                                  agent, says):
    url = (f"{server['url']}/?join={server['join']}&PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d1e"
           "&STUDY_ID=s&SESSION_ID=x")
    context, page = _open(browser, size, url, phone=size is PHONE, agent=agent)
    try:
        page.get_by_text(says).wait_for(timeout=30_000)
        assert page.get_by_text("Before you start").count() == 0
    finally:
        context.close()
    assert server["db"].execute("SELECT COUNT(*) FROM crowd_participants").fetchone()[0] == 0


def test_a_screen_that_fits_goes_on_to_the_consent(server, browser):
    url = (f"{server['url']}/?join={server['join']}&PROLIFIC_PID=6f1a2b3c4d5e6f7a8b9c0d1e"
           "&STUDY_ID=s&SESSION_ID=x")
    context, page = _open(browser, {"width": 1280, "height": 900}, url, phone=False)
    try:
        page.get_by_text("Before you start").first.wait_for(timeout=30_000)
    finally:
        context.close()
