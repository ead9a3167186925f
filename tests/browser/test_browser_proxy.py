"""Two app processes behind nginx (the docs/scale.md configuration) on one SQLite file:
each browser sticks to one process, images load, ratings land once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench import capacity_parts as parts
from concord.services import studies
from concord.store.db import open_db
from tests.browser.conftest import start_server, stop
from tests.helpers import make_folder_study

pytestmark = pytest.mark.browser


@pytest.fixture
def proxied(tmp_path: Path):
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx not installed (apt-get install nginx)")
    db_path = tmp_path / "proxy.db"
    db = open_db(db_path)
    studies.import_manifest(db, make_folder_study(tmp_path / "px", prompts=4,
                                                  models=("a", "b"), k=4))
    invites = studies.invite(db, "px", [f"r{i}" for i in range(4)], "http://unused")
    servers = [start_server(db_path, tmp_path) for _ in range(2)]
    ports = [int(url.rsplit(":", 1)[1]) for url, _ in servers]
    url, nginx = parts.start_nginx(tmp_path / "nginx", ports)
    yield {"url": url, "db": db, "tokens": [i.url.split("token=")[1] for i in invites]}
    nginx.terminate()
    nginx.wait(timeout=10)
    for _, proc in servers:
        stop(proc)


def test_raters_rate_through_the_sticky_proxy(proxied, chromium):
    routes = set()
    for token in proxied["tokens"]:
        context = chromium.new_context()
        try:
            page = context.new_page()
            page.goto(f"{proxied['url']}/?token={token}")
            page.get_by_text("0 / 8 rated").wait_for(timeout=60_000)
            page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
            img = page.locator('[data-testid="stImage"] img').first
            img.wait_for(timeout=30_000)
            # the image is served from the memory of the process that holds this session:
            # without sticky routing about half of these requests would get a 404
            page.wait_for_function("(el) => el.complete && el.naturalWidth > 0",
                                   arg=img.element_handle(), timeout=30_000)
            page.keyboard.press("3")
            page.keyboard.press("w")
            page.keyboard.press("Enter")
            page.get_by_text("1 / 8 rated").wait_for(timeout=30_000)
            routes |= {c["value"] for c in context.cookies() if c["name"] == "concord_route"}
        finally:
            context.close()
    assert len(routes) == 4  # each browser got its own route cookie
    db = proxied["db"]
    assert db.execute("SELECT COUNT(DISTINCT submission) FROM ratings").fetchone()[0] == 4
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 8


def test_a_researcher_stays_signed_in_through_the_proxy(proxied, chromium):
    # The session is in the database all processes share: a reload and a second browser
    # tab, whichever process nginx sends them to, keep the researcher signed in.
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(f"{proxied['url']}/raters")
        page.locator('[data-testid="stTextInputField"]').first.fill("letmein-test-secret-7Qx9")
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("heading", name="Raters").first.wait_for(timeout=60_000)
        page.wait_for_function("() => document.cookie.includes('concord_research=')",
                               timeout=10_000)
        page.reload()
        page.get_by_role("heading", name="Raters").first.wait_for(timeout=60_000)
        other = context.new_page()
        other.goto(f"{proxied['url']}/progress")
        other.get_by_role("heading", name="Progress").first.wait_for(timeout=60_000)
    finally:
        context.close()
