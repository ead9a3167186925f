"""AppTest: a rater screen while a restore holds the database's write lock longer than a
write waits for it shows one line to try again, not a traceback; then it goes on."""

from __future__ import annotations

import pytest

from concord.store import db as db_module
from tests.app.conftest import rater_app
from tests.helpers import WriteLockHolder

pytestmark = pytest.mark.both_engines


@pytest.mark.parametrize("page", ["pages/rate.py", "pages/rank.py"])
def test_a_busy_database_is_one_line_for_the_rater(app_env, monkeypatch, page):
    monkeypatch.setattr(db_module, "BUSY_TIMEOUT_MS", 300)
    # what a restore holds while it writes
    with WriteLockHolder(app_env["db_path"]):
        at = rater_app(app_env["tokens"]["ann"], page)
        assert not at.exception, at.exception
        [warning] = at.warning
        assert warning.value.startswith("The database has been busy for 0.3 s")
        assert "nothing was saved, please try again" in warning.value
    at.run()
    assert not at.exception and not at.warning
