"""A real Streamlit server and headless Debian Chromium driven by Playwright."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT

CHROMIUM = "/usr/bin/chromium"
# Flags the closed network here needs (no background connections, no GPU).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("streamlit did not become healthy in time")


def start_server(db_path: Path | str, tmp: Path, env_extra: dict | None = None,
                 root: Path = ROOT) -> tuple[str, subprocess.Popen]:
    """Start `streamlit run app.py` on a free port against ``db_path`` (a SQLite file or a
    PostgreSQL URL), from the Concord folder ``root`` (its working directory; a copy of
    the code plays another host)."""
    port = _free_port()
    env = {**os.environ, "CONCORD_DB": str(db_path),
           "CONCORD_ADMIN_SECRET": "letmein-test-secret-7Qx9",
           "CONCORD_BASE_URL": f"http://127.0.0.1:{port}", **(env_extra or {})}
    log = (tmp / f"streamlit-{port}.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(root / "app.py"), "--server.port",
         str(port), "--server.headless", "true", "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
    except RuntimeError:
        proc.kill()
        raise
    return url, proc


@pytest.fixture(scope="session")
def chromium():
    """A headless Chromium (Debian's), shared by the browser tests."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not installed (make check installs Debian chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium) -> Iterator:
    """A fresh browser page (own context: no shared cookies or storage)."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = context.new_page()
    yield pg
    context.close()


def stop(proc: subprocess.Popen) -> None:
    """Stop a server started by :func:`start_server`."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def idle(page) -> None:
    """Wait until the app's current run has ended (no rerun is updating the page)."""
    page.wait_for_function("() => document.querySelector('[data-testid=stApp]')"
                           ".getAttribute('data-test-script-state') === 'notRunning'")


def focus_in(page, css: str) -> None:
    """The focus reaches the field by itself (it may land just after the field shows)."""
    page.wait_for_function(f"() => document.activeElement.closest({css!r}) !== null",
                           timeout=5_000)
