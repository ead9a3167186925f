"""The throw-away PostgreSQL server the tests and benches use (tests/support/pg_server.py)."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

import pytest

from tests.support import pg_server as pg
from tests.support.pg_server import MISSING_REASON, PgServer

pytestmark = pytest.mark.postgres


def test_the_url_reaches_the_server_on_its_own_socket_only(pg_server):
    import psycopg

    with psycopg.connect(pg_server.url("postgres")) as conn:
        settings = dict(conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('unix_socket_directories', 'listen_addresses', 'max_connections', 'port')"
        ).fetchall())
        assert conn.execute("SELECT current_user").fetchone() == ("postgres",)
    assert settings == {"unix_socket_directories": str(pg_server.sockdir),
                        "listen_addresses": "", "max_connections": "200",
                        "port": str(pg_server.port)}
    assert stat.S_ISSOCK(pg_server.socket.stat().st_mode)
    assert pg_server.sockdir.parent == pg_server.folder


def test_the_folder_belongs_to_the_user_the_server_runs_as(pg_server):
    expected = pwd.getpwnam("postgres").pw_uid if os.geteuid() == 0 else os.geteuid()
    assert pg_server.folder.stat().st_uid == expected
    assert pg_server.data.stat().st_uid == expected


@pytest.mark.parametrize("name", ["concord_harness", 'odd "name"/with?&= signs'])
def test_create_copy_and_drop_a_database(pg_server, name):
    import psycopg

    url = pg_server.create_database(name)
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == (name,)
            conn.execute("CREATE TABLE t (x int)")
            conn.execute("INSERT INTO t VALUES (7)")
        copy = pg_server.create_database(name + "_copy", template=name)
        with psycopg.connect(copy) as conn:
            assert conn.execute("SELECT x FROM t").fetchall() == [(7,)]
    finally:
        held = psycopg.connect(url)  # drop ends the connections still open
        pg_server.drop_database(name)
        pg_server.drop_database(name + "_copy")
    held.close()
    with pg_server.admin() as conn:
        names = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
    assert name not in names and name + "_copy" not in names
    with pytest.raises(psycopg.OperationalError, match="does not exist"):
        psycopg.connect(url)


def test_restart_keeps_committed_work_and_stop_removes_everything():
    import psycopg

    server = PgServer(port=5499).start()
    folder, socket = server.folder, server.socket
    try:
        conn = psycopg.connect(server.url())
        conn.execute("CREATE TABLE kept (x int)")
        conn.execute("INSERT INTO kept VALUES (1), (2)")
        conn.commit()
        conn.execute("INSERT INTO kept VALUES (3)")  # never committed
        started = conn.execute("SELECT pg_postmaster_start_time()").fetchone()
        server.restart()
        conn.close()
        with server.admin() as conn:
            assert conn.execute("SELECT pg_postmaster_start_time()").fetchone() != started
            assert conn.execute("SELECT x FROM kept ORDER BY x").fetchall() == [(1,), (2,)]
    finally:
        server.stop()
    assert not socket.exists() and not folder.exists()
    server.stop()  # a second stop (or the atexit hook) does nothing
    with pytest.raises(RuntimeError, match="not started"):
        server.url()


def _fake_bindir(root: Path, version: str) -> Path:
    folder = root / version / "bin"
    folder.mkdir(parents=True)
    for name in pg.PROGRAMS:
        (folder / name).write_text("#!/bin/sh\n")
        (folder / name).chmod(0o755)
    return folder


def test_the_newest_installed_version_wins_when_pg_config_is_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(pg, "LIB_ROOT", tmp_path)
    _fake_bindir(tmp_path, "9.6")
    newest = _fake_bindir(tmp_path, "16")
    _fake_bindir(tmp_path, "15")
    (tmp_path / "17" / "bin").mkdir(parents=True)  # a leftover folder without programs
    assert pg.find_binaries() == newest
    assert pg.unavailable_reason() is None


def test_without_postgresql_the_reason_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(pg, "LIB_ROOT", tmp_path / "none")
    assert pg.find_binaries() is None
    assert pg.unavailable_reason() == MISSING_REASON
    with pytest.raises(RuntimeError, match="not found; install Debian's postgresql"):
        PgServer().start()
