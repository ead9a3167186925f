"""The PostgreSQL engine itself: query translation, types, the write lock, what open_db
refuses, and what survives a killed writer or a restarted server."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

import psycopg
import pytest

from concord.errors import ConcordError
from concord.store import db as store_db
from concord.store import guard, pg, pg_open
from concord.store.db import DatabaseBusy, open_db, transaction
from tests.helpers import ROOT

pytestmark = pytest.mark.postgres


@pytest.mark.parametrize(("sql", "expected", "names"), [
    ("SELECT ? , ?", "SELECT $1 , $2", ()),
    ("SELECT 'a?b', \"c?\" , ?", "SELECT 'a?b', \"c?\" , $1", ()),  # quoted ? stays
    ("SELECT 'it''s ?' || ?", "SELECT 'it''s ?' || $1", ()),
    ("SELECT :a, :b, :a, x::text", "SELECT $1, $2, $1, x::text", ("a", "b")),
    ("SELECT ':a' || :b", "SELECT ':a' || $1", ("b",)),
    ("SELECT * FROM main.images JOIN stage.s_rows s", "SELECT * FROM images JOIN "
     "pg_temp.s_rows s", ()),
    ("CREATE UNIQUE INDEX stage.k ON s_t (a)", "CREATE UNIQUE INDEX k ON s_t (a)", ()),
    ("CREATE TABLE stage.s_t (a TEXT PRIMARY KEY) WITHOUT ROWID",
     "CREATE TABLE pg_temp.s_t (a TEXT PRIMARY KEY)", ()),
    ("SELECT domain.x, 'main.y', printf('%d', 5)", "SELECT domain.x, 'main.y', "
     "printf('%d', 5)", ()),
])
def test_translate_numbers_placeholders_outside_quotes(sql, expected, names):
    assert pg.translate(sql) == (expected, names)


@pytest.fixture
def url(pg_server, request):
    name = f"e_{abs(hash(request.node.nodeid)) % 10**9}"
    found = pg_server.create_database(name)
    yield found
    pg.close_pool(found)
    pg_open._CHECKED.discard(found)
    pg_server.drop_database(name)


def test_results_are_typed_as_sqlite_types_them(url):
    db = open_db(url)
    try:
        row = db.execute("SELECT SUM(x), AVG(x), COUNT(*), 1.5, SUM(x > 1), NULL FROM"
                         " (VALUES (1), (2), (4)) AS v(x)").fetchone()
        assert row == (7, 7 / 3, 3, 1.5, 2, None)
        assert [type(v) for v in row[:5]] == [int, float, int, float, int]
        assert list(db.query("SELECT 1 AS a, 'b' AS b")) == [{"a": 1, "b": "b"}]
    finally:
        db.close()


def test_errors_are_sqlite3_errors_with_the_server_code(url):
    import sqlite3

    db = open_db(url)
    try:
        db.execute("INSERT INTO raters (name, created_at) VALUES ('ann', 'now')")
        with pytest.raises(sqlite3.IntegrityError) as err:
            db.execute("INSERT INTO raters (name, created_at) VALUES ('ann', 'now')")
        assert err.value.sqlstate == "23505"  # unique_violation
        with pytest.raises(sqlite3.OperationalError):
            db.execute("SELECT nonsense FROM raters")
    finally:
        db.close()


def test_a_closed_database_refuses_work_and_closes_twice(url):
    import sqlite3

    db = open_db(url)
    db.close()
    db.close()
    with pytest.raises(sqlite3.ProgrammingError):
        db.execute("SELECT 1")


def test_writers_take_turns_and_a_long_wait_is_a_retryable_error(url, monkeypatch):
    holder = open_db(url)
    other = open_db(url)
    try:
        with transaction(holder):
            assert store_db.last_begin_retries() == 0
            monkeypatch.setattr(store_db, "BUSY_TIMEOUT_MS", 200)
            with pytest.raises(DatabaseBusy, match="nothing was saved"), transaction(other):
                other.execute("INSERT INTO raters (name, created_at) VALUES ('x', 'now')")
        assert other.execute("SELECT COUNT(*) FROM raters").fetchone()[0] == 0
        assert not other.conn.in_transaction  # rolled back, usable again
        with transaction(other):
            other.execute("INSERT INTO raters (name, created_at) VALUES ('y', 'now')")
    finally:
        holder.close()
        other.close()


def test_a_second_writer_waits_for_the_first_and_knows_it_waited(url):
    first, second = open_db(url), open_db(url)
    waited: list[int] = []
    entered = threading.Event()

    def write() -> None:
        entered.set()
        with transaction(second):
            waited.append(store_db.last_begin_retries())
            second.execute("INSERT INTO raters (name, created_at) VALUES ('b', 'now')")

    try:
        with transaction(first):
            first.execute("INSERT INTO raters (name, created_at) VALUES ('a', 'now')")
            thread = threading.Thread(target=write)
            thread.start()
            entered.wait()
            # the second writer cannot get past BEGIN until this transaction ends
            thread.join(0.3)
            assert thread.is_alive()
        thread.join()
        assert waited == [1]
        assert [r[0] for r in first.execute("SELECT name FROM raters ORDER BY id")] == ["a", "b"]
    finally:
        first.close()
        second.close()


def test_a_database_of_another_application_is_refused_unchanged(pg_server, url):
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(guard.DatabaseRefused, match=r"not a Concord database \(it holds"
                                                    r" invoices\)"):
        open_db(url)
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE"
                                             " schemaname = 'public'")]
    assert tables == ["invoices"]


def test_a_database_of_a_newer_concord_is_refused(url):
    db = open_db(url)
    db.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES"
               " ('concord', 'm9999_from_the_future', 'now')")
    db.close()
    pg_open._CHECKED.discard(url)
    with pytest.raises(guard.DatabaseRefused, match="written by a newer Concord"):
        open_db(url)


def test_a_column_added_by_hand_is_refused(url):
    db = open_db(url)
    db.execute("ALTER TABLE ratings ADD COLUMN sneaky TEXT")
    db.close()
    pg_open._CHECKED.discard(url)
    with pytest.raises(guard.DatabaseRefused, match=r"ratings\.sneaky"):
        open_db(url)


def test_no_server_is_one_line_without_the_password(tmp_path, monkeypatch):
    monkeypatch.setattr(pg, "POOL_TIMEOUT_S", 1.0)
    url = f"postgresql://concord:hunter2@/nowhere?host={tmp_path}&port=1"
    with pytest.raises(guard.DatabaseRefused) as err:
        open_db(url)
    assert "cannot connect to PostgreSQL" in str(err.value)
    assert "hunter2" not in str(err.value)


def test_the_cli_names_an_unreachable_database_without_a_traceback(tmp_path):
    url = f"postgresql://concord:hunter2@/nowhere?host={tmp_path}&port=1"
    proc = subprocess.run([sys.executable, "-m", "concord", "--db", url, "studies"],
                          cwd=ROOT, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "CONCORD_PG_CONNECT_TIMEOUT": "1"})
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "hunter2" not in proc.stderr
    assert proc.stderr.startswith("error: database postgresql://concord:***@")


def test_two_processes_creating_one_database_make_one_schema(url):
    code = ("import sys; from concord.store.db import open_db; "
            "db = open_db(sys.argv[1]); print(len(db.table_names())); db.close()")
    procs = [subprocess.Popen([sys.executable, "-c", code, url], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    db = open_db(url)
    try:
        names = [r[0] for r in db.execute("SELECT name FROM _sqlite_migrations")]
        assert len(names) == len(set(names)) > 0  # recorded once
    finally:
        db.close()


def test_config_errors_are_concord_errors():
    from concord.config import Settings

    with pytest.raises(ConcordError, match="names no database"):
        Settings.from_env("postgresql://db.example.org")


def _crowd_of(url: str, tmp_path, n: int) -> list[int]:
    """A study 'load' (10 prompts × 3 models, k=3) on ``url`` and ``n`` raters' ids."""
    from concord.services import studies
    from concord.store.raters import rater_for_token
    from tests.helpers import make_folder_study

    manifest = make_folder_study(tmp_path / "load", prompts=10, models=("a", "b", "c"), k=3)
    db = open_db(url)
    try:
        studies.import_manifest(db, manifest)
        invites = studies.invite(db, "load", [f"r{i}" for i in range(n)], "http://x")
        return [rater_for_token(db, i.url.split("token=")[1]).id for i in invites]
    finally:
        db.close()


def _stored_keys(url: str) -> tuple[set[tuple[int, int]], int, int]:
    """(image, rater) of every current SC rating; rows per submission at most; rows."""
    db = open_db(url)
    try:
        keys = {(r[0], r[1]) for r in db.execute(
            "SELECT image_id, rater_id FROM current_ratings WHERE criterion = 'SC'")}
        most = db.execute("SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM ratings"
                          " GROUP BY submission, criterion) AS per").fetchone()[0]
        rows = db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0]
        return keys, most, rows
    finally:
        db.close()


def _rate(url: str, rater_id: int, acked: set, errors: list, attempts: int) -> None:
    """Submit up to ``attempts`` ratings; an error (the server went away) is noted and the
    next attempt opens a new connection, as the next page run would."""
    from concord.services.labelling import rating

    for _ in range(attempts):
        try:
            db = open_db(url)
        except Exception as exc:  # the server is restarting: try again
            errors.append(type(exc).__name__)
            continue
        try:
            item = rating.next_item(db, "load", rater_id)
            if item is None:
                return
            res = rating.submit(db, "load", rater_id, item.image_id, {"SC": 1, "PR": 1},
                                submission=item.submission)
            if res.stored:
                acked.add((item.image_id, rater_id))
        except Exception as exc:  # counted: a submit that was not acknowledged
            errors.append(type(exc).__name__)
        finally:
            db.close()


def test_a_server_restart_during_submits_loses_nothing_acknowledged(tmp_path):
    from tests.support.pg_server import PgServer, unavailable_reason

    if unavailable_reason():
        pytest.skip(unavailable_reason())
    with PgServer(port=5498) as server:
        url = server.create_database("restart")
        ids = _crowd_of(url, tmp_path, 6)
        acked: set = set()
        errors: list[str] = []
        raters = [threading.Thread(target=_rate, args=(url, r, acked, errors, 12))
                  for r in ids]
        for t in raters:
            t.start()
        server.restart()
        for t in raters:
            t.join()
        keys, most, _ = _stored_keys(url)
        pg.close_pool(url)
    assert acked, "no submit was acknowledged"
    assert acked <= keys  # every acknowledged rating is in the database
    assert most == 1  # and no submission was stored twice


_KILLED_WRITER = """
import sys
from concord.services.labelling import rating
from concord.store.db import open_db
url, rater = sys.argv[1], int(sys.argv[2])
db = open_db(url)
while (item := rating.next_item(db, "load", rater)) is not None:
    res = rating.submit(db, "load", rater, item.image_id, {"SC": 2, "PR": 2},
                        submission=item.submission)
    if res.stored:
        print(item.image_id, flush=True)
"""


def test_a_writer_killed_mid_way_loses_nothing_acknowledged_and_frees_the_lock(
        url, tmp_path):
    import signal

    (rater,) = _crowd_of(url, tmp_path, 1)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, url, str(rater)],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acked = [int(proc.stdout.readline()) for _ in range(5)]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    acked += [int(line) for line in proc.stdout.read().split()]
    keys, most, _ = _stored_keys(url)
    assert {(image, rater) for image in acked} <= keys and most == 1
    db = open_db(url)
    try:  # the killed process's lock went with its connection
        with transaction(db):
            db.execute("INSERT INTO raters (name, created_at) VALUES ('after', 'now')")
    finally:
        db.close()


def test_every_migration_after_the_base_brings_its_postgresql_ddl():
    from concord.store import pg_schema

    names = pg_schema.MIGRATION_NAMES
    assert names[:len(pg_schema.BASE)] == pg_schema.BASE
    assert list(names[len(pg_schema.BASE):]) == list(pg_schema.UPGRADES)


def test_an_older_postgresql_database_is_upgraded_once(url, monkeypatch):
    from concord.store import pg_schema

    open_db(url).close()
    monkeypatch.setattr(pg_schema, "MIGRATION_NAMES", (*pg_schema.MIGRATION_NAMES, "m9001_probe"))
    monkeypatch.setitem(pg_schema.UPGRADES, "m9001_probe",
                        "CREATE INDEX ratings_probe ON ratings (seconds)")
    pg_open._CHECKED.discard(url)
    with pytest.raises(guard.DatabaseRefused, match="made by an older Concord"):
        open_db(url, migrate=False)
    for _ in range(2):  # the second open finds it done
        pg_open._CHECKED.discard(url)
        open_db(url).close()
    db = open_db(url)
    try:
        names = [r[0] for r in db.execute("SELECT name FROM _sqlite_migrations ORDER BY id")]
        assert names[-1] == "m9001_probe" and names.count("m9001_probe") == 1
        assert db.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'ratings_probe'"
                          ).fetchone() == (1,)
    finally:
        db.close()


@pytest.mark.parametrize("tail", ["/x%00y?host=/nowhere", "/x?host=/nowhere&sslmode=bogus",
                                  "/x?host=/nowhere&port=99999999999999999999",
                                  "[::1/x", "/" + "a" * 5000 + "?host=/nowhere"])
def test_a_malformed_url_is_one_line(tail, capsys):
    from concord.cli import main

    assert main(["--db", f"postgresql://u:hunter2@{tail}", "studies"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: database postgresql://u:***@") and err.count("\n") == 1
    assert "hunter2" not in err and len(err) < 700


@pytest.mark.parametrize("value", ["abc", "0", "601", "-1", "1e3", "１０", "9" * 50])
def test_a_wrong_connect_timeout_is_one_line(value, monkeypatch, capsys):
    from concord.cli import main

    monkeypatch.setenv("CONCORD_PG_CONNECT_TIMEOUT", value)
    pg.close_pools()
    assert main(["--db", "postgresql://u@/x?host=/nowhere", "studies"]) == 1
    assert "CONCORD_PG_CONNECT_TIMEOUT" in capsys.readouterr().err


def test_a_dropped_connection_is_the_retryable_busy_error_and_saves_nothing(url):
    from concord.store.db import DatabaseUnavailable

    db = open_db(url)
    pid = db.execute("SELECT pg_backend_pid()").fetchone()[0]
    try:
        def write_while_dropped() -> None:
            with transaction(db):
                db.execute("INSERT INTO raters (name, created_at) VALUES ('lost', 'now')")
                with psycopg.connect(url, autocommit=True) as admin:
                    admin.execute("SELECT pg_terminate_backend(%s)", [pid])
                db.execute("INSERT INTO raters (name, created_at) VALUES ('lost2', 'now')")

        with pytest.raises(DatabaseUnavailable, match="try again"):
            write_while_dropped()
    finally:
        db.close()  # a broken connection is dropped, not given back to the pool
    again = open_db(url)  # the pool hands out a live one
    try:
        assert again.execute("SELECT COUNT(*) FROM raters").fetchone()[0] == 0
    finally:
        again.close()


def test_after_an_outage_a_backed_off_pool_is_replaced_once_the_server_answers(
        tmp_path, monkeypatch):
    """psycopg_pool retries lost connections with a growing back-off; once the server is
    back, the next page run must not wait for the pool's next attempt."""
    import time

    from tests.support.pg_server import PgServer, unavailable_reason

    if unavailable_reason():
        pytest.skip(unavailable_reason())
    with PgServer(port=5495) as server:
        url = server.create_database("outage")
        open_db(url).close()
        home = pg.pool(url)
        server.crash()
        home.check()  # the pool finds its connection dead and starts reconnecting
        for _ in range(3000):  # a guard against hanging, not a time limit
            if home.get_stats().get("connections_errors", 0) >= 5:  # back-off now >= 16 s
                break
            time.sleep(0.2)
        else:
            pytest.fail("the pool never retried its lost connection")
        server.resume()
        monkeypatch.setattr(pg, "FIRST_WAIT_S", 0.5)
        monkeypatch.setattr(pg, "POOL_TIMEOUT_S", 8.0)  # shorter than the back-off
        db = open_db(url)
        try:
            assert db.execute("SELECT COUNT(*) FROM studies").fetchone() == (0,)
            assert pg.pool(url) is not home and home.closed
        finally:
            db.close()
            pg.close_pool(url)


def test_small_integer_parameters_add_up_past_smallint(url):
    """psycopg sends a small int as smallint: two of them summed overflowed at 32,767 (a
    million-row import failed); integer functions still take a small one."""
    db = open_db(url)
    try:
        assert db.execute("SELECT :lo + :rows", {"lo": 30_000, "rows": 20_000}).fetchone() == (
            50_000,)
        assert db.execute("SELECT substr('abcdef', ?), ? * 2", [3, 2**40]).fetchone() == (
            "cdef", 2**41)
    finally:
        db.close()


class _Interrupted(KeyboardInterrupt):
    """What a metric run's SIGTERM handler raises (scoring.RunCancelled is one)."""


def _raters(db) -> list[str]:
    return [r[0] for r in db.execute("SELECT name FROM raters ORDER BY name")]


def test_a_command_left_running_by_an_interrupted_call_is_cancelled_not_stuck(url):
    """A signal raised between sending a query and reading its answer leaves libpq
    mid-command; the next statement (here the transaction's ROLLBACK) must work."""
    def interrupted_write() -> None:
        with transaction(db):
            db.execute("INSERT INTO raters (name, created_at) VALUES ('half', 'now')")
            db.pg.raw.pgconn.send_query(b"SELECT pg_sleep(600)")
            raise _Interrupted

    db = open_db(url)
    try:
        with pytest.raises(_Interrupted):
            interrupted_write()
        with transaction(db):  # the rolled-back transaction left nothing; the next commits
            db.execute("INSERT INTO raters (name, created_at) VALUES ('next', 'now')")
        db.pg.raw.pgconn.send_query(b"SELECT pg_sleep(600)")  # outside a transaction too
        assert db.execute("SELECT 1").fetchone() == (1,)
        assert _raters(db) == ["next"]
    finally:
        db.close()


def test_a_signal_during_a_query_cancels_it_and_the_run_can_record_its_end(url):
    """The metric run's case: SIGTERM arrives while a write waits on the server."""
    from concord.services.metrics.scoring import RunCancelled

    def interrupt(signum, frame):
        raise RunCancelled

    def slow_write() -> None:
        with transaction(db):
            db.execute("INSERT INTO raters (name, created_at) VALUES ('half', 'now')")
            db.execute("SELECT pg_sleep(600)")

    db = open_db(url)
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(RunCancelled):
            slow_write()
        with transaction(db):
            db.execute("INSERT INTO raters (name, created_at) VALUES ('end', 'now')")
        assert _raters(db) == ["end"]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        db.close()


def test_a_query_another_thread_has_in_flight_is_waited_for_not_cancelled(url):
    db = open_db(url)
    try:
        results = []
        slow = threading.Thread(target=lambda: results.append(
            db.execute("SELECT pg_sleep(1), 'slow'").fetchone()[1]))
        slow.start()
        while db.pg.raw.pgconn.transaction_status != psycopg.pq.TransactionStatus.ACTIVE:
            if not slow.is_alive():
                break
        results.append(db.execute("SELECT 'second'").fetchone()[0])
        slow.join()
        assert sorted(results) == ["second", "slow"]
    finally:
        db.close()
