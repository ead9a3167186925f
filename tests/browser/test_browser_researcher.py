"""Headless Chromium: the researcher stays signed in across reloads, tabs and typed URLs
(a session cookie, never the secret), signs out everywhere at once, and every page's URL
works when typed, by researchers and raters."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.services import studies
from concord.store.db import open_db
from tests.browser.conftest import idle, start_server, stop
from tests.crowd_helpers import make_crowd_study

pytestmark = pytest.mark.browser
SECRET = "letmein-test-secret-7Qx9"


@pytest.fixture
def server(tmp_path: Path):
    db_path = tmp_path / "res.db"
    db = open_db(db_path)
    studies.import_manifest(db, make_crowd_study(tmp_path / "cs"))
    (invite,) = studies.invite(db, "cs", ["cora"], "http://unused")
    url, proc = start_server(db_path, tmp_path)
    yield {"url": url, "db": db, "token": invite.url.split("token=")[1],
           "log": tmp_path / f"streamlit-{url.rsplit(':', 1)[1]}.log"}
    stop(proc)
    db.close()


def _title(page, text: str) -> None:
    page.get_by_role("heading", name=text).first.wait_for(timeout=30_000)
    idle(page)


def _no_page_not_found(page) -> None:
    assert page.get_by_text("Page not found").count() == 0


def test_researcher_session_survives_reload_tab_and_typed_url(server, page):
    page.goto(f"{server['url']}/studies")  # typed before signing in: the sign-in form
    page.get_by_role("button", name="Sign in").wait_for(timeout=30_000)
    _no_page_not_found(page)
    page.locator('[data-testid="stTextInputField"]').first.fill(SECRET)
    page.get_by_role("button", name="Sign in").click()
    _title(page, "Studies")  # signed in on the page the URL named
    assert page.url.endswith("/studies")
    page.wait_for_function("() => document.cookie.includes('concord_research=')",
                           timeout=10_000)
    cookies = {c["name"]: c for c in page.context.cookies()}
    kept = cookies["concord_research"]
    assert kept["sameSite"] == "Strict" and SECRET not in kept["value"]
    assert all(SECRET not in c["value"] for c in cookies.values())

    page.reload()
    _title(page, "Studies")
    other = page.context.new_page()  # a new tab, a typed URL
    other.goto(f"{server['url']}/progress")
    _title(other, "Progress")
    _no_page_not_found(other)
    other.goto(f"{server['url']}/rate")  # a rater page: the researcher's home instead
    other.get_by_text("Agreement dashboard").first.wait_for(timeout=30_000)
    _no_page_not_found(other)

    other.get_by_role("button", name="Sign out").click()  # ends the session in every tab
    other.get_by_role("button", name="Sign in").wait_for(timeout=30_000)
    page.get_by_role("link", name="Raters").click()
    page.get_by_role("button", name="Sign in").wait_for(timeout=30_000)
    page.reload()
    page.get_by_role("button", name="Sign in").wait_for(timeout=30_000)
    _no_page_not_found(page)
    assert server["db"].execute("SELECT COUNT(*) FROM research_sessions").fetchone()[0] == 0
    assert SECRET not in server["log"].read_text(encoding="utf-8")


def test_a_rater_link_to_any_page_opens_the_right_screen(server, page):
    # A rater who has not consented yet, with a link to the rating screen.
    page.goto(f"{server['url']}/rate?token={server['token']}")
    page.get_by_role("heading", name="Before you start").wait_for(timeout=30_000)
    idle(page)
    _no_page_not_found(page)
    page.goto(f"{server['url']}/studies?token={server['token']}")
    page.get_by_text("This page is for researchers").wait_for(timeout=30_000)
    _no_page_not_found(page)


def test_the_cli_links_name_the_port_the_app_serves(tmp_path, page, capsys, monkeypatch):
    from concord.cli import main
    from concord.config import address_file
    from tests.helpers import make_folder_study

    db_path = tmp_path / "port.db"
    studies.import_manifest(open_db(db_path), make_folder_study(tmp_path / "pt", prompts=1))
    url, proc = start_server(db_path, tmp_path, {"CONCORD_BASE_URL": ""})  # no base URL
    try:
        page.goto(url)
        page.get_by_role("button", name="Sign in").wait_for(timeout=30_000)
    finally:
        stop(proc)
    port = url.rsplit(":", 1)[1]
    assert address_file(db_path).read_text().strip() == f"http://localhost:{port}"
    for name in ("CONCORD_BASE_URL", "CONCORD_PORT"):
        monkeypatch.delenv(name, raising=False)
    capsys.readouterr()
    assert main(["--db", str(db_path), "raters", "add", "--study", "pt", "ann"]) == 0
    assert f"http://localhost:{port}/?token=" in capsys.readouterr().out
