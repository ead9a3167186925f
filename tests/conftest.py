"""Shared fixtures: a fresh database, synthetic images and small studies."""

from __future__ import annotations

import os

# No test may reach a model hub: an accidental hub id fails in seconds, not minutes.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from collections.abc import Callable
from pathlib import Path

import pytest

from concord.store.db import open_db
from tests.helpers import (  # noqa: F401 - re-exported for older imports
    ROOT,
    SHARED,
    SHARED_REASON,
    make_folder_study,
    shared_path,
    write_png,
)
from tests.support.pg_server import MISSING_REASON as PG_MISSING_REASON


@pytest.fixture
def shared() -> Path:
    """Root of ../shared (the benchmark data beside the repository), or skip the test."""
    return shared_path()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """With ``CI=true``, a test that skips for want of ../shared (marker ``shared`` or the
    shared-data reason), of Chromium (tests/browser) or of PostgreSQL (marker ``postgres``,
    the ``pg_server`` fixture or its reason) fails instead."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI", "").lower() != "true" or not report.skipped:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    needs = (item.get_closest_marker("shared") is not None or "browser" in item.path.parts
             or SHARED_REASON in reason or item.get_closest_marker("postgres") is not None
             or "pg_server" in getattr(item, "fixturenames", ()) or PG_MISSING_REASON in reason)
    if needs:
        report.outcome = "failed"
        report.longrepr = f"CI=true and this test skipped: {reason}"


@pytest.fixture(scope="session")
def pg_server():
    """One throw-away PostgreSQL server (tests/support/pg_server.py) for the whole run, on a
    Unix socket in a temporary folder; skips when PostgreSQL is not installed."""
    from tests.support.pg_server import PgServer, unavailable_reason

    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with PgServer() as server:
        yield server


@pytest.fixture
def db(tmp_path: Path):
    """A fresh, migrated database file."""
    database = open_db(tmp_path / "concord.db")
    yield database
    database.close()


@pytest.fixture
def seeded(tmp_path: Path):
    """``(db, db_path)``: a database file with study ``dash`` (3 raters' SC/PR ratings and
    vqascore/gned values, tests.foundation_helpers.seed_study)."""
    from tests.foundation_helpers import seed_study

    db_path = tmp_path / "stats.db"
    database = open_db(db_path)
    seed_study(database, tmp_path)
    yield database, db_path
    database.close()


@pytest.fixture
def study_factory(tmp_path: Path) -> Callable[..., Path]:
    """Build folder studies under tmp_path: ``study_factory("name", prompts=3, ...)``."""
    def build(name: str = "s1", **kw) -> Path:
        return make_folder_study(tmp_path / name, **kw)
    return build
