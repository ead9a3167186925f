"""The researcher secret: weak ones refused with how to make a good one, a generated one
kept only as a scrypt hash (shown once; reset-secret makes a new one), and failed sign-ins
limited per client and in all, counted in the database that every app process shares."""

from __future__ import annotations

import stat
import threading

import pytest

from concord.cli import main
from concord.config import Settings
from concord.errors import AuthError
from concord.services import auth, secret
from concord.store import open_db

pytestmark = pytest.mark.both_engines

STRONG = "correct-horse-battery-staple-42"


@pytest.fixture
def settings(database_at, monkeypatch) -> Settings:
    """A database's settings as the CLI makes them (the secret file beside a SQLite file,
    or beside a PostgreSQL database's local stem in tmp_path)."""
    monkeypatch.delenv("CONCORD_ADMIN_SECRET", raising=False)
    return Settings.from_env(database_at("c"))


def _cli(capsys, settings: Settings, *argv: str) -> tuple[int, str, str]:
    code = main(["--db", str(settings.database), *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _shown(out: str) -> str:
    [line] = [x for x in out.splitlines() if x.startswith("researcher sign-in secret: ")]
    return line.split(": ", 1)[1].split()[0]


@pytest.mark.parametrize("weak", ["a", "letmein", "aaaaaaaaaaaaaaaaaaaaaaaa", "abababababababab",
                                  "Passw0rd"])
def test_a_weak_configured_secret_stops_init_with_how_to_make_a_good_one(
        capsys, settings, monkeypatch, weak):
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", weak)
    code, _, err = _cli(capsys, settings, "init", "--no-demo")
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert "is too weak" in err
    assert 'python -c "import secrets; print(secrets.token_urlsafe(24))"' in err
    assert not settings.db_path.exists()
    with pytest.raises(secret.SecretError, match="too weak"):
        secret.current(Settings(db_path=settings.db_path, admin_secret=weak))


def test_a_strong_configured_secret_is_used_and_not_printed(capsys, settings, monkeypatch):
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", STRONG)
    code, out, _ = _cli(capsys, settings, "init", "--no-demo")
    assert code == 0
    assert STRONG not in out
    assert "set by CONCORD_ADMIN_SECRET" in out
    assert not secret.secret_file(settings).exists()


def test_a_generated_secret_is_shown_once_and_kept_only_as_a_slow_hash(capsys, settings):
    code, out, _ = _cli(capsys, settings, "init", "--no-demo")
    assert code == 0
    shown = _shown(out)
    assert len(shown) >= secret.MIN_LENGTH and secret.strength_problem(shown) is None
    path = secret.secret_file(settings)
    kept = path.read_text()
    assert shown not in kept
    assert kept.startswith("scrypt$16384$8$1$")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = _cli(capsys, settings, "init", "--no-demo")[1]
    assert shown not in again
    assert "reset-secret" in again
    found = secret.current(settings)
    assert found.matches(shown)
    assert not found.matches(shown[:-1])
    assert not found.matches("")


def test_reset_secret_makes_a_new_one_and_ends_the_old_ones_sessions(capsys, settings):
    first = _shown(_cli(capsys, settings, "init", "--no-demo")[1])
    before = secret.current(settings)
    code, out, _ = _cli(capsys, settings, "reset-secret")
    assert code == 0
    second = _shown(out)
    after = secret.current(settings)
    assert second != first
    assert after.matches(second) and not after.matches(first)
    auth.check_version(after.version, after)
    with pytest.raises(AuthError, match="has changed"):
        auth.check_version(before.version, after)


def test_reset_secret_is_refused_for_a_configured_secret(capsys, settings, monkeypatch):
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", STRONG)
    code, _, err = _cli(capsys, settings, "reset-secret")
    assert code == 1
    assert "set by CONCORD_ADMIN_SECRET; change it there" in err


def test_an_older_plain_secret_file_is_hashed_by_init_and_still_signs_in(capsys, settings):
    path = secret.secret_file(settings)
    path.write_text("older-plain-token-0123456789\n")
    path.chmod(0o600)
    out = _cli(capsys, settings, "init", "--no-demo")[1]
    assert _shown(out) == "older-plain-token-0123456789"
    assert "from now on only its hash is kept" in out
    assert "older-plain-token" not in path.read_text()
    assert secret.current(settings).matches("older-plain-token-0123456789")


def test_an_unchanged_secret_keeps_sessions(settings):
    secret.reset(settings)
    assert secret.current(settings).version == secret.current(settings).version
    configured = Settings(db_path=settings.db_path, admin_secret=STRONG)
    assert secret.current(configured).version == secret.current(configured).version


@pytest.mark.parametrize("record", ["scrypt$1073741824$8$1$AAAA$AAAA", "scrypt$16384$8$1$%%$x",
                                    "md5$abc", "scrypt$3$8$1$AAAA$AAAA"])
def test_a_doctored_hash_file_is_no_match_and_no_hang(record):
    assert not secret.Secret("file", record=record).matches(STRONG)


# --- limits on failed sign-ins -----------------------------------------------------------

@pytest.fixture
def db(settings):
    database = open_db(settings.database)
    yield database
    database.close()


def _try(db, given: str, client: str, now: float = 1_000_000.0):
    return auth.sign_in_researcher(db, secret.Secret("test", plain=STRONG), given, client,
                                   now=now)


def test_five_wrong_guesses_from_one_client_pause_it_and_only_it(db, settings):
    for _ in range(auth.MAX_PER_CLIENT):
        with pytest.raises(AuthError, match="wrong researcher secret"):
            _try(db, "guess", "10.0.0.1")
    with pytest.raises(AuthError, match=r"too many failed sign-ins from your address .*try "
                                        r"again in 15 minutes"):
        _try(db, STRONG, "10.0.0.1")  # even the right secret: it is not checked
    assert _try(db, STRONG, "10.0.0.2").is_researcher
    other = open_db(settings.database)  # another app process sees the same failures
    with pytest.raises(AuthError, match="too many failed sign-ins"):
        _try(other, STRONG, "10.0.0.1", now=1_000_000.0 + auth.WINDOW_S - 61)
    assert _try(other, STRONG, "10.0.0.1", now=1_000_000.0 + auth.WINDOW_S + 1).is_researcher
    other.close()


def test_failures_from_many_clients_pause_everyone_until_reset_secret(capsys, db, settings):
    for n in range(auth.MAX_IN_ALL):
        with pytest.raises(AuthError, match="wrong"):
            _try(db, "guess", f"10.1.{n // 250}.{n % 250}")
    with pytest.raises(AuthError, match="researcher sign-in is paused after 50 failed"):
        _try(db, STRONG, "192.168.0.7")
    assert db.execute("SELECT COUNT(*) FROM signin_failures").fetchone()[0] == auth.MAX_IN_ALL
    code, out, _ = _cli(capsys, settings, "reset-secret")
    assert code == 0
    assert "forgot 50 failed sign-in attempt(s)" in out
    assert _try(db, STRONG, "192.168.0.7").is_researcher


def test_a_right_secret_forgets_the_clients_failures(db):
    for _ in range(auth.MAX_PER_CLIENT - 1):
        with pytest.raises(AuthError):
            _try(db, "guess", "10.0.0.1")
    assert _try(db, STRONG, "10.0.0.1").is_researcher
    with pytest.raises(AuthError, match="wrong"):
        _try(db, "guess", "10.0.0.1")  # counting starts again


def test_guesses_made_at_once_are_all_counted(settings):
    checked = []

    class Counting(secret.Secret):
        def matches(self, given: str) -> bool:
            checked.append(given)
            return False

    open_db(settings.database).close()
    errors: list[str] = []

    def guess() -> None:
        db = open_db(settings.database)
        try:
            for _ in range(4):
                try:
                    auth.sign_in_researcher(db, Counting("t", plain=STRONG), "guess", "1.2.3.4")
                except AuthError as exc:
                    errors.append(str(exc))
        finally:
            db.close()

    threads = [threading.Thread(target=guess) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(errors) == 24
    assert len(checked) == auth.MAX_PER_CLIENT  # no more guesses were ever checked


def test_failed_sign_ins_are_not_report_data(db):
    from concord.store import report_cache

    before = report_cache.fingerprint(db)
    with pytest.raises(AuthError):
        _try(db, "guess", "10.0.0.1")
    assert report_cache.fingerprint(db) == before is not None


def test_hostile_secret_files_and_values_are_one_clear_error(settings):
    path = secret.secret_file(settings)
    path.write_bytes(b"x" * 1_000_000)
    with pytest.raises(secret.SecretError, match="is not one"):
        secret.current(settings)
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(secret.SecretError, match="cannot read"):
        secret.current(settings)
    with pytest.raises(secret.SecretError, match="not text"):  # a number in secrets.toml
        secret.current(Settings(db_path=settings.db_path, admin_secret=1234567890123456789))
    found = secret.current(Settings(db_path=settings.db_path, admin_secret=f"  {STRONG}\n"))
    assert found.matches(STRONG)
    assert not found.matches(STRONG + " " * 2000 + "x")
