"""Headless Chromium: a researcher starts a metric run with a tiny judge, watches it end and
sees it among the past runs, without reloading the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.services import studies
from concord.store import runs as run_store
from concord.store.db import open_db
from tests.browser.conftest import start_server, stop
from tests.helpers import make_folder_study

pytestmark = pytest.mark.browser


@pytest.fixture
def server(tmp_path: Path):
    from tests.support.tiny_models import save_tiny_vlm

    judge = save_tiny_vlm("llava", tmp_path / "judge")
    db_path = tmp_path / "metrics.db"
    db = open_db(db_path)
    studies.import_manifest(db, make_folder_study(tmp_path / "shots", prompts=2))
    url, proc = start_server(db_path, tmp_path, {"HF_HUB_OFFLINE": "1"})
    yield {"url": url, "db": db, "judge": judge}
    stop(proc)
    db.close()


def _choose(page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option", name=option).first.click()


def test_researcher_starts_a_run_and_sees_it_done(server, page):
    page.goto(server["url"])
    page.locator('[data-testid="stTextInputField"]').first.fill("letmein-test-secret-7Qx9")
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("link", name="Metrics").click()
    page.get_by_text("Start run").wait_for(timeout=60_000)
    page.get_by_text("No run yet.").wait_for(timeout=10_000)
    _choose(page, "Metric", "vqascore — t2v_metrics VQAScore")
    page.get_by_label("Judge (hub id or local folder; empty: the metric's default)").fill(
        str(server["judge"]))
    _choose(page, "Device", "cpu")
    page.get_by_role("button", name="Start run").click()
    page.get_by_text("started.").wait_for(timeout=30_000)
    # the live section polls the run: its line ends up saying "done"
    page.get_by_text("· done ·").wait_for(timeout=240_000)
    page.get_by_text("4 of 4 images (0 errors)").wait_for(timeout=10_000)
    # "Past runs" follows without a reload: the finished run replaces "No run yet."
    page.get_by_text("No run yet.").wait_for(state="detached", timeout=10_000)
    # the only visible table (the default judges' one sits in a closed expander)
    page.locator('[data-testid="stDataFrame"]:visible').wait_for(timeout=10_000)
    [run] = run_store.list_runs(server["db"])
    assert (run.status, run.metric, run.n_scored) == ("done", "vqascore", 4)
    assert page.locator('[data-testid="stException"]').count() == 0
