"""Settings from the environment, and where invite links point (concord.ui.session)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from concord.cli import main as cli_main
from concord.config import Settings
from concord.errors import ConcordError
from concord.ui import session

ENV = ("CONCORD_DB", "CONCORD_PORT", "CONCORD_BASE_URL", "CONCORD_ADMIN_SECRET")


@pytest.fixture
def env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(("given", "base", "explicit"), [
    ({}, "http://localhost:8501", False),
    ({"CONCORD_PORT": "8611"}, "http://localhost:8611", False),
    ({"CONCORD_BASE_URL": ""}, "http://localhost:8501", False),  # empty = not set
    ({"CONCORD_BASE_URL": "https://rate.example.org/"}, "https://rate.example.org", True),
    ({"CONCORD_BASE_URL": "http://h:9/x", "CONCORD_PORT": "8611"}, "http://h:9/x", True),
])
def test_base_url_and_whether_it_was_given(env, given, base, explicit):
    for name, value in given.items():
        env.setenv(name, value)
    settings = Settings.from_env("x.db")
    assert (settings.base_url, settings.base_url_explicit) == (base, explicit)
    assert settings.db_path == Path("x.db")


def test_a_settings_object_made_in_code_has_a_derived_base_url():
    assert Settings(db_path=Path("x.db")).base_url_explicit is False


def _browser_at(monkeypatch, url: str | None) -> None:
    """The address the browser reached the app at, as ``st.context.url`` gives it."""
    monkeypatch.setattr(session, "st", SimpleNamespace(context=SimpleNamespace(url=url)))


@pytest.mark.parametrize(("seen", "expected"), [
    ("http://127.0.0.1:8611/raters", "http://127.0.0.1:8611"),
    ("http://127.0.0.1:8611/raters/", "http://127.0.0.1:8611"),
    ("https://lab.example/concord/raters?x=1", "https://lab.example/concord"),
    ("http://127.0.0.1:8611/", "http://127.0.0.1:8611"),
    (None, "http://localhost:8501"),
    ("", "http://localhost:8501"),
])
def test_without_a_given_base_url_links_follow_the_browser(env, seen, expected):
    env.setenv("CONCORD_ADMIN_SECRET", "s")
    _browser_at(env, seen)
    assert session.invite_base_url("raters") == expected


def test_a_given_base_url_wins_over_the_browser(env):
    env.setenv("CONCORD_ADMIN_SECRET", "s")
    env.setenv("CONCORD_BASE_URL", "https://rate.example.org/")
    _browser_at(env, "http://127.0.0.1:8611/raters")
    assert session.invite_base_url("raters") == "https://rate.example.org"


def test_the_choice_comes_from_the_settings_not_the_environment(env):
    _browser_at(env, "http://127.0.0.1:8611/raters")
    given = Settings(db_path=Path("x.db"), base_url="https://given.example",
                     base_url_explicit=True)
    env.setattr(session, "settings", lambda: given)
    assert session.invite_base_url("raters") == "https://given.example"
    derived = Settings(db_path=Path("x.db"), base_url="http://localhost:8501")
    env.setattr(session, "settings", lambda: derived)
    env.setenv("CONCORD_BASE_URL", "https://ignored.example")  # read once, by from_env
    assert session.invite_base_url("raters") == "http://127.0.0.1:8611"


@pytest.mark.parametrize(("given", "expected"), [
    ("data/x.db", Path("data/x.db")),
    ("sqlite:///data/x.db", Path("data/x.db")),  # SQLAlchemy's form: relative
    ("sqlite:////srv/concord/x.db", Path("/srv/concord/x.db")),  # and absolute
    ("SQLite:///x.db", Path("x.db")),
])
def test_the_database_is_a_path_or_a_sqlite_url(env, given, expected):
    assert Settings.from_env(given).db_path == expected
    env.setenv("CONCORD_DB", given)
    assert Settings.from_env().db_path == expected


@pytest.mark.parametrize("url", [
    "postgresql://concord:hunter2-secret@db.example.org:5432/concord",
    "postgresql+psycopg://concord@db/concord",
    "postgres://db/concord",
])
def test_a_postgresql_url_selects_postgresql(env, url):
    env.setenv("CONCORD_DB", url)
    settings = Settings.from_env()
    assert settings.db_url == url and settings.database == url
    assert "hunter2" not in settings.shown  # messages never show the password
    # files that live beside a database (media cache, address) go to a local stem
    assert settings.db_path.name == "postgresql-concord"


@pytest.mark.parametrize("url", ["postgresql://db", "postgresql://u:hunter2@db/",
                                 "postgres://db/?sslmode=require"])
def test_a_postgresql_url_without_a_database_is_refused(env, url):
    with pytest.raises(ConcordError, match="names no database") as err:
        Settings.from_env(url)
    assert "hunter2" not in str(err.value)


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///x.db?mode=ro",
                                 "mysql://db/x", "file:///tmp/x.db"])
def test_other_urls_are_refused(env, url):
    with pytest.raises(ConcordError, match=r"--db=.* is not a database Concord can open"):
        Settings.from_env(url)


def test_the_cli_says_what_is_wrong_and_makes_nothing(env, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env.setenv("CONCORD_DB", "mysql://u:pw@localhost/db")
    assert cli_main(["studies"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: CONCORD_DB='mysql://u:***@localhost/db'")
    assert "pw@" not in err
    assert list(tmp_path.iterdir()) == []  # no folder named mysql: and no database
    env.setenv("CONCORD_DB", str(tmp_path / "x.db"))
    env.setenv("CONCORD_SESSION_HOURS", "abc")
    assert cli_main(["studies"]) == 1
    assert "CONCORD_SESSION_HOURS='abc'" in capsys.readouterr().err
