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


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests of a module marked ``both_engines`` that take ``db`` (or ``engine``) run twice:
    on a SQLite file and on a PostgreSQL database of the throw-away server."""
    if metafunc.definition.get_closest_marker("both_engines") is None:
        return
    if "db" in metafunc.fixturenames or "engine" in metafunc.fixturenames:
        metafunc.parametrize("engine", ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    """The engine a ``both_engines`` test runs on (``sqlite`` elsewhere)."""
    return getattr(request, "param", "sqlite")


@pytest.fixture
def database_at(engine: str, request: pytest.FixtureRequest, tmp_path: Path):
    """``database_at(name)``: where a new, empty database of this test's engine is — a
    SQLite file in tmp_path, or a new database on the throw-away PostgreSQL server (its
    URL) dropped after the test."""
    made: list[str] = []
    server = request.getfixturevalue("pg_server") if engine == "postgresql" else None
    if server is not None:
        # What lives beside a PostgreSQL database (restore's safety copy, the address
        # file, the media cache) goes under the local stem, data/ of the repository:
        # in tmp_path instead, never left behind by a test.
        import concord.config

        (tmp_path / "data").mkdir(exist_ok=True)
        request.getfixturevalue("monkeypatch").setattr(concord.config, "DEFAULT_DB",
                                                       tmp_path / "data" / "concord.db")

    def at(name: str = "concord") -> str | Path:
        if server is None:
            return tmp_path / f"{name}.db"
        made.append(f"t{len(made)}_{os.getpid()}_{abs(hash(request.node.nodeid)) % 10**9}")
        return server.create_database(made[-1])

    yield at
    if server is not None:
        from concord.store import pg

        for name in made:
            pg.close_pool(server.url(name))
            server.drop_database(name)


@pytest.fixture
def db_target(database_at) -> str | Path:
    """Where the ``db`` fixture's database is (its SQLite path or PostgreSQL URL), for a
    test that opens more connections to it."""
    return database_at()


@pytest.fixture
def db(db_target):
    """A fresh, migrated database (a SQLite file; also PostgreSQL in ``both_engines``
    modules)."""
    database = open_db(db_target)
    yield database
    database.close()


@pytest.fixture
def seeded(database_at, tmp_path: Path):
    """``(db, target)``: a database with study ``dash`` (3 raters' SC/PR ratings and
    vqascore/gned values, tests.foundation_helpers.seed_study); ``target`` is its SQLite
    path or PostgreSQL URL (``--db str(target)`` works for both). Runs on both engines in
    ``both_engines`` modules."""
    from tests.foundation_helpers import seed_study

    db_path = database_at("stats")
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
