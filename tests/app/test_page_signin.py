"""AppTest: the researcher sign-in form with a weak secret, after too many wrong guesses,
and a session that lasts while the secret is unchanged and ends when it is reset."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from concord.config import Settings
from concord.services import auth, secret
from tests.app.conftest import APP

pytestmark = pytest.mark.both_engines


def _sign_in(given: str, at: AppTest | None = None) -> AppTest:
    at = at or AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="admin_secret").input(given)
    at.button[0].click().run()
    assert not at.exception, at.exception
    return at


def _signed_in(at: AppTest) -> bool:
    if "concord_user" not in at.session_state:  # (AppTest's state has no get())
        return False
    user = at.session_state["concord_user"]
    return user is not None and user.is_researcher


def test_a_weak_secret_is_refused_with_how_to_make_a_good_one(app_env, monkeypatch):
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", "a")
    at = _sign_in("a")
    assert not _signed_in(at)
    [error] = at.error
    assert "Researcher sign-in is not available" in error.value
    assert "too weak" in error.value
    assert "secrets.token_urlsafe(24)" in error.value


def test_wrong_guesses_pause_the_form_for_that_address(app_env):
    for _ in range(auth.MAX_PER_CLIENT):
        assert _sign_in("guess-guess-guess-1").error[0].value == "Wrong researcher secret."
    at = _sign_in("letmein-test-secret-7Qx9")
    assert not _signed_in(at)
    assert at.error[0].value.startswith("Too many failed sign-ins from your address")


def test_a_session_lasts_while_the_secret_is_unchanged_and_ends_when_reset(app_env,
                                                                          monkeypatch):
    monkeypatch.delenv("CONCORD_ADMIN_SECRET")
    settings = Settings.from_env()  # the app's database (CONCORD_DB), on either engine
    at = _sign_in(secret.reset(settings))
    assert _signed_in(at)
    at.switch_page("pages/studies.py").run()
    at.run()
    assert _signed_in(at) and not at.exception
    secret.reset(settings)
    at.run()
    assert not _signed_in(at)


def test_a_research_page_opened_signed_out_shows_the_form_then_the_page(app_env):
    # A typed /studies used to show the sign-in page and a "Page not found" dialog.
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/studies.py").run()
    assert not at.exception
    assert at.text_input(key="admin_secret") and not at.dataframe
    _sign_in("letmein-test-secret-7Qx9", at)
    assert _signed_in(at)
    assert [t.value for t in at.title] == ["Studies"]


def test_sign_out_ends_the_stored_session(app_env):
    at = _sign_in("letmein-test-secret-7Qx9")
    db = app_env["db"]
    assert db.execute("SELECT COUNT(*) FROM research_sessions").fetchone()[0] == 1
    at.button(key="sign_out").click().run()
    assert not at.exception and not _signed_in(at)
    assert db.execute("SELECT COUNT(*) FROM research_sessions").fetchone()[0] == 0
