"""Researcher sessions that outlive a tab: a random token in the browser's cookie, only its
hash in the database; it ends on sign-out, expiry, a new secret and a restore, and any
other cookie value is refused unread."""

from __future__ import annotations

import pytest

from concord.cli import main
from concord.config import Settings
from concord.errors import ConcordError
from concord.services import research_session, secret
from concord.store import open_db
from concord.store.backup import backup, restore

pytestmark = pytest.mark.both_engines

STRONG = "correct-horse-battery-staple-42"


@pytest.fixture
def setup(database_at, monkeypatch):
    monkeypatch.delenv("CONCORD_ADMIN_SECRET", raising=False)
    settings = Settings.from_env(database_at("c"))
    secret.reset(settings)
    database = open_db(settings.database)
    yield settings, database, secret.current(settings)
    database.close()


def test_a_session_is_valid_until_it_expires_and_only_its_hash_is_kept(setup):
    _, db, found = setup
    token = research_session.start(db, found, 2.0, now=1000.0)
    assert research_session.valid(db, token, found, now=1000.0 + 7199)
    assert not research_session.valid(db, token, found, now=1000.0 + 7200)
    [row] = db.execute("SELECT * FROM research_sessions").fetchall()
    assert token not in repr(row) and found.record not in repr(row)


def test_sign_out_ends_the_session_and_leaves_others(setup):
    _, db, found = setup
    mine, other = (research_session.start(db, found, 1.0) for _ in range(2))
    research_session.end(db, mine)
    assert not research_session.valid(db, mine, found)
    assert research_session.valid(db, other, found)


def test_a_new_secret_ends_every_session(setup, capsys):
    settings, db, found = setup
    token = research_session.start(db, found, 1.0)
    secret.reset(settings)  # the version changed: refused even before the rows go
    assert not research_session.valid(db, token, secret.current(settings))
    token = research_session.start(db, secret.current(settings), 1.0)
    assert main(["--db", str(settings.database), "reset-secret"]) == 0
    assert "signed out 2 researcher session(s)" in capsys.readouterr().out
    assert db.execute("SELECT COUNT(*) FROM research_sessions").fetchone()[0] == 0


@pytest.mark.parametrize("cookie", [None, "", "x" * 43 + "\n", "a" * 10_000, "a" * 42,
                                    "é" * 43, "a\x00" * 22, 12, ["a" * 43]])
def test_any_other_cookie_value_is_refused(setup, cookie):
    _, db, found = setup
    research_session.start(db, found, 1.0)
    assert not research_session.valid(db, cookie, found)
    research_session.end(db, cookie)  # a no-op, never an error
    assert db.execute("SELECT COUNT(*) FROM research_sessions").fetchone()[0] == 1


def test_a_restore_brings_back_no_session(setup, tmp_path):
    settings, db, found = setup
    token = research_session.start(db, found, 1.0)
    copy = tmp_path / "b.db"
    backup(db, copy)
    research_session.end(db, token)  # signed out after the backup was taken
    db.close()
    restore(settings.database, copy, confirm=True)
    again = open_db(settings.database)
    assert not research_session.valid(again, token, found)
    again.close()


@pytest.mark.parametrize("hours", ["0", "-1", "nan", "inf", "1e400", "twelve", "3000"])
def test_a_wrong_session_length_is_named(monkeypatch, hours):
    monkeypatch.setenv("CONCORD_SESSION_HOURS", hours)
    with pytest.raises(ConcordError, match="CONCORD_SESSION_HOURS"):
        Settings.from_env()


def test_the_session_length_has_a_default_and_can_be_set(monkeypatch):
    monkeypatch.delenv("CONCORD_SESSION_HOURS", raising=False)
    assert Settings.from_env().session_hours == 12.0
    monkeypatch.setenv("CONCORD_SESSION_HOURS", "0.5")
    assert Settings.from_env().session_hours == 0.5
