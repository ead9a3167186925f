"""Headless Chromium: a researcher signs in and reads the agreement dashboard."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from concord.store.db import open_db
from tests.browser.conftest import start_server, stop
from tests.foundation_helpers import seed_study
from tests.helpers import study_report

pytestmark = pytest.mark.browser


@pytest.fixture
def server(tmp_path: Path):
    db_path = tmp_path / "dash.db"
    db = open_db(db_path)
    seed_study(db, tmp_path)
    url, proc = start_server(db_path, tmp_path)
    yield {"url": url, "db": db}
    stop(proc)
    db.close()


def test_researcher_sees_leaderboard_and_agreement(server, page):
    page.goto(server["url"])
    page.locator('[data-testid="stTextInputField"]').first.fill("letmein-test-secret-7Qx9")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Agreement dashboard").first.wait_for(timeout=30_000)
    page.get_by_text("Best on").wait_for(timeout=30_000)
    doc = study_report(server["db"], "dash")
    best = max((r for r in doc["human"] if r["criterion"] == "O"),
               key=lambda r: r["mean_rater_means"])
    # Streamlit may still be replacing elements of the first run: wait for each text.
    page.get_by_text(f"{best['model']}, mean of rater means "
                     f"{best['mean_rater_means']:.3f}").wait_for(timeout=10_000)
    metric = page.locator('[data-testid="stMetric"]').filter(has_text="Rating values")
    metric.wait_for(timeout=10_000)
    shown = metric.locator('[data-testid="stMetricValue"]').inner_text()
    assert shown == f"{doc['meta']['n_ratings']:,}"
    page.get_by_role("tab", name="Human vs metric").click()
    page.get_by_text("Spearman ρ [95% CI] per dimension × metric").wait_for(timeout=10_000)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_export_page_downloads_a_file_built_on_click(server, page, tmp_path):
    """The Export page builds a download when it is clicked: the file is the CLI's."""
    from concord.services.exports import downloads

    page.goto(server["url"])
    page.locator('[data-testid="stTextInputField"]').first.fill("letmein-test-secret-7Qx9")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Agreement dashboard").first.wait_for(timeout=30_000)
    page.get_by_role("link", name="Export").click()
    button = page.get_by_role("button", name="Revision history (CSV)")
    button.wait_for(timeout=30_000)
    with page.expect_download(timeout=30_000) as info:
        button.click()
    saved = tmp_path / "history.csv"
    info.value.save_as(saved)
    assert info.value.suggested_filename == "dash-history.csv"
    db_path = server["db"].conn.execute("PRAGMA database_list").fetchone()[2]
    assert saved.read_bytes() == downloads.build(db_path, "dash", "history")
    assert page.locator('[data-testid="stException"]').count() == 0


def test_a_download_of_a_study_deleted_meanwhile_says_so(server, page, tmp_path):
    """The file is built on another thread after the click; a study deleted since the page
    was drawn gives a message, not a silent click."""
    from concord.services import studies

    page.goto(server["url"])
    page.locator('[data-testid="stTextInputField"]').first.fill("letmein-test-secret-7Qx9")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Agreement dashboard").first.wait_for(timeout=30_000)
    page.get_by_role("link", name="Export").click()
    button = page.get_by_role("button", name="Labels (CSV)")
    button.wait_for(timeout=30_000)
    studies.delete(server["db"], "dash")
    button.click()
    page.get_by_text("Nothing was downloaded: no study named 'dash'").wait_for(timeout=30_000)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_tied_models_are_named_as_tied_and_the_plan_draws(server, page):
    page.goto(server["url"])
    page.locator('[data-testid="stTextInputField"]').first.fill("letmein-test-secret-7Qx9")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Best on").wait_for(timeout=30_000)
    # The seeded study's SC leaderboard: alpha and beta are not told apart.
    page.get_by_text("SC", exact=True).first.click()
    page.get_by_text("Tied for best on").wait_for(timeout=30_000)
    assert page.get_by_text(re.compile(r"^Best on SC")).count() == 0
    page.get_by_role("tab", name="Plan").click()
    page.get_by_text("Simulate the plan").click()
    page.get_by_text("From this study's O ratings").wait_for(timeout=60_000)
    assert page.locator('[data-testid="stVegaLiteChart"]').count() >= 1
    assert page.locator('[data-testid="stException"]').count() == 0
