"""Fixtures for page tests: a database with a small study and an invited rater."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from concord.services import studies
from concord.store.db import open_db
from tests.helpers import ROOT, make_folder_study

APP = str(ROOT / "app.py")


def through_app_always() -> None:
    """Run every AppTest run through app.py, as a server does once it has served a page.

    AppTest puts Streamlit back into its older "pages directory" mode before each run, in
    which a run of a page skips app.py (sign-in, navigation); a server leaves that mode for
    good at its first run of app.py (the browser test opening /rank first covers the
    server's first run, see concord.ui.session.through_app). Call it in a subprocess that
    drives AppTest; tests get it from the fixture below.
    """
    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    PagesManager.__init__ = init


@pytest.fixture(autouse=True)
def _navigation_mode(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(PagesManager, "__init__", PagesManager.__init__)  # restored after
    through_app_always()


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    """cache_data/cache_resource survive across AppTest runs in one process."""
    st.cache_data.clear()
    st.cache_resource.clear()
    yield


@pytest.fixture
def app_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database_at):
    """A database (CONCORD_DB) with study 'ui' (both protocols, 3 prompts × 3 models): a
    SQLite file, or a PostgreSQL database in ``both_engines`` modules."""
    db_path = database_at("app")
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", "letmein-test-secret-7Qx9")
    manifest = make_folder_study(tmp_path / "ui", prompts=3, models=("alpha", "beta", "gamma"),
                                 protocol="both", k=2)
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    invites = studies.invite(db, "ui", ["ann", "ben"], "http://x")
    tokens = {i.name: i.url.split("token=")[1] for i in invites}
    return {"db": db, "db_path": db_path, "tokens": tokens, "root": tmp_path / "ui"}


def rater_app(token: str, page: str | None = None) -> AppTest:
    """An AppTest signed in through the invite token, optionally switched to a page."""
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["token"] = token
    at.run()
    if page is not None:
        at.switch_page(page).run()
    return at
