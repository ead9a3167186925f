"""Files the store writes are private, outputs never replace or wait on a pipe, device or
socket, and the report cache's change counter cannot freeze."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from concord import atomic
from concord.cli import main
from concord.services import studies
from concord.store import open_db
from concord.store import report_cache as cache_store
from tests.foundation_helpers import ROOT, folder_study_db, make_folder_study


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def dbp(tmp_path) -> Path:
    return folder_study_db(tmp_path, "live.db", prompts=3)


def test_a_new_database_its_wal_and_shm_are_readable_by_their_owner_only(tmp_path):
    path = tmp_path / "new.db"
    with umask(0o022):
        db = open_db(path)
        reader = open_db(path)  # a second connection keeps -wal and -shm in place
        studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=2))
        found = {p.name: _mode(p) for p in tmp_path.iterdir() if p.name.startswith("new.db")}
        reader.close()
        db.close()
    assert found == {"new.db": 0o600, "new.db-wal": 0o600, "new.db-shm": 0o600}


def test_an_existing_database_keeps_its_mode(tmp_path):
    path = tmp_path / "shared.db"
    open_db(path).close()
    os.chmod(path, 0o640)  # a researcher's choice (a group that reads it)
    open_db(path).close()
    assert _mode(path) == 0o640


def test_backups_and_safety_copies_are_readable_by_their_owner_only(capsys, dbp, tmp_path):
    with umask(0o022):
        assert main(["--db", str(dbp), "backup", str(tmp_path / "b.db")]) == 0
        assert main(["--db", str(dbp), "restore", str(tmp_path / "b.db"), "--yes"]) == 0
    [safety] = tmp_path.glob("live.db.before-restore-*")
    assert _mode(tmp_path / "b.db") == 0o600
    assert _mode(safety) == 0o600


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@contextlib.contextmanager
def _socket(path: Path):
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    try:
        yield path
    finally:
        sock.close()


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_backup_refuses_a_pipe_or_socket_and_leaves_it_in_place(capsys, dbp, tmp_path, kind):
    with contextlib.ExitStack() as stack:
        target = _fifo(tmp_path / "b.db") if kind == "fifo" else \
            stack.enter_context(_socket(tmp_path / "b.db"))
        assert main(["--db", str(dbp), "backup", str(target)]) == 1
        err = capsys.readouterr().err
        still = stat.S_ISFIFO if kind == "fifo" else stat.S_ISSOCK
        assert still(target.stat().st_mode)
    assert err.strip().splitlines() == [
        f"error: cannot write {target}: it is {'a named pipe' if kind == 'fifo' else 'a socket'}"
        ", not a regular file; nothing was written"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("argv", [("export", "--study", "s", "--format", "csv", "-o"),
                                  ("stats", "--study", "s", "--json", "-o")])
def test_an_output_to_a_pipe_that_nobody_reads_fails_at_once(dbp, tmp_path, argv):
    fifo = _fifo(tmp_path / "out.csv")
    res = subprocess.run([sys.executable, "-m", "concord", "--db", str(dbp), *argv,
                          str(fifo)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [
        f"error: cannot write {fifo}: no process reads that pipe; nothing was written"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_pipe_that_a_process_reads_is_written_in_place(tmp_path):
    fifo = _fifo(tmp_path / "out.csv")
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, open before the writer
    try:
        atomic.write_bytes(fifo, b"a,b\n1,2\n")  # fits the pipe's buffer: never waits
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            assert handle.read() == b"a,b\n1,2\n"  # the writer has closed: read to the end
    finally:
        os.close(fd)
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_socket_as_an_export_output_is_refused(tmp_path):
    with _socket(tmp_path / "out.csv") as target:
        with pytest.raises(Exception, match="it is a socket, not a regular file"):
            atomic.write_bytes(target, b"x")
        assert stat.S_ISSOCK(target.stat().st_mode)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_score_file_output_must_be_a_regular_file(dbp, tmp_path, kind):
    from concord.errors import ConcordError
    from concord.services.metrics.score_output import FileSink

    target = tmp_path / "scores.jsonl"
    if kind == "fifo":
        _fifo(target)
    else:
        target.mkdir()
    with pytest.raises(ConcordError, match=f"cannot write {target}: it is a"):
        FileSink(open_db(dbp), target, [])


def test_a_change_counter_set_at_the_integer_limit_never_freezes_the_fingerprint(dbp):
    db = open_db(dbp)
    with db.conn:
        db.execute(f"UPDATE data_changes SET n = {(1 << 63) - 1}")
    seen = []
    for name in ("x", "y", "z"):  # an update that leaves the counts as they were
        with db.conn:
            db.execute("UPDATE studies SET name = ? WHERE id = 1", [name])
        seen.append(cache_store.fingerprint(db))
    # Either no fingerprint (nothing cached, nothing served) or a new one per change; a
    # repeated one would serve the report of the data before the change.
    assert seen == [None] * 3 or len(set(seen)) == 3, seen
    db.close()
