"""AppTest: a page's run ends by freezing the long-lived objects (concord.ui.runtime), so
Streamlit's collection after every run no longer walks the imported modules."""

from __future__ import annotations

import gc

import pytest

from concord.ui import runtime
from tests.app.conftest import rater_app


@pytest.fixture
def unfrozen(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(runtime, "_modules_frozen", 0)
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_a_rater_page_run_freezes_the_imported_modules(app_env, unfrozen):
    at = rater_app(app_env["tokens"]["ann"])
    assert not at.exception
    assert at.session_state["rate_item"] is not None  # the rating screen ran
    assert gc.get_freeze_count() > 0
    assert runtime._modules_frozen > 0
