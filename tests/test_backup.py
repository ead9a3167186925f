"""`backup` copies the database while raters keep rating; `restore` puts a copy back,
refusing anything that is not a sound Concord database of this version or older."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlite_utils import Database

from concord.cli import main
from concord.errors import ConcordError
from concord.services import studies
from concord.services.labelling import rating
from concord.services.labelling.common import new_submission
from concord.store import open_db
from tests.foundation_helpers import invited, make_folder_study, snapshot


@pytest.fixture
def dbp(tmp_path) -> Path:
    """A database with study 's' (40 prompts × 2 models, k = 2) and no ratings yet."""
    path = tmp_path / "live.db"
    db = open_db(path)
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=40, k=2))
    db.close()
    return path


def _cli(capsys, dbp: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["--db", str(dbp), *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _rate_until(path: Path, stop: threading.Event, acked: list[int], name: str) -> None:
    """One rater on their own connection, submitting until told to stop or done."""
    db = open_db(path)
    rid = invited(db, "s", name)
    while not stop.is_set():
        item = rating.next_item(db, "s", rid)
        if item is None:
            break
        rating.submit(db, "s", rid, item.image_id, {"SC": 1, "PR": 0.5},
                      submission=new_submission())
        acked.append(item.image_id)
    db.close()


def _ratings(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT COUNT(*) FROM ratings").fetchone()[0]
    finally:
        conn.close()


def _assert_consistent(path: Path) -> int:
    """A backup is a whole database as of one commit: no half-stored submission.
    Returns the number of submissions it holds."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        half = conn.execute("SELECT submission FROM ratings GROUP BY submission"
                            " HAVING COUNT(*) != 2").fetchall()
        assert half == []  # SC and PR of one submit are stored together or not at all
        return conn.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] // 2
    finally:
        conn.close()


def test_a_backup_taken_while_raters_write_is_consistent_and_restores(capsys, dbp, tmp_path):
    stop, acked = threading.Event(), {name: [] for name in ("ann", "ben")}
    threads = [threading.Thread(target=_rate_until, args=(dbp, stop, acked[n], n))
               for n in acked]
    for t in threads:
        t.start()
    counts = []
    try:
        for i in range(3):
            while sum(map(len, acked.values())) < 5 * (i + 1):
                time.sleep(0.01)
            code, out, _ = _cli(capsys, dbp, "backup", str(tmp_path / f"b{i}.db"))
            assert code == 0
            assert "integrity check ok" in out
            counts.append(_assert_consistent(tmp_path / f"b{i}.db"))
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert counts == sorted(counts), counts
    assert counts[0] > 0
    assert not (tmp_path / "b0.db-wal").exists()
    final = _ratings(dbp)
    assert final // 2 == sum(map(len, acked.values())) >= counts[-1]
    code, out, _ = _cli(capsys, dbp, "restore", str(tmp_path / "b1.db"), "--yes")
    assert code == 0
    assert _ratings(dbp) == 2 * counts[1]
    [safety] = list(tmp_path.glob("live.db.before-restore-*"))
    assert _ratings(safety) == final
    assert f"kept in {safety}" in out


def test_restore_without_yes_says_what_it_would_replace_and_changes_nothing(capsys, dbp,
                                                                          tmp_path):
    assert _cli(capsys, dbp, "backup", str(tmp_path / "b.db"))[0] == 0
    db = open_db(dbp)
    studies.import_manifest(db, make_folder_study(tmp_path / "t", prompts=1))
    before = snapshot(db)
    code, _, err = _cli(capsys, dbp, "restore", str(tmp_path / "b.db"))
    assert code == 1
    assert "restore would replace everything in" in err
    assert "(2 studies," in err
    assert "(1 studies," in err
    assert "add --yes" in err
    assert snapshot(open_db(dbp)) == before
    assert not list(tmp_path.glob("live.db.before-restore-*"))


def _refused(capsys, dbp: Path, backup: Path) -> str:
    before = snapshot(open_db(dbp))
    code, _, err = _cli(capsys, dbp, "restore", str(backup), "--yes")
    assert code == 1
    assert len(err.strip().splitlines()) == 1, err
    assert snapshot(open_db(dbp)) == before
    return err


def test_restore_refuses_another_applications_file(capsys, dbp, tmp_path):
    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    assert "is not a Concord database" in _refused(capsys, dbp, other)


def test_restore_refuses_a_backup_from_a_newer_concord(capsys, dbp, tmp_path):
    newer = tmp_path / "newer.db"
    assert _cli(capsys, dbp, "backup", str(newer))[0] == 0
    conn = sqlite3.connect(newer)
    conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at)"
                 " VALUES ('concord', 'm999_future', 'x')")
    conn.commit()
    conn.close()
    assert "written by a newer Concord" in _refused(capsys, dbp, newer)


@pytest.mark.parametrize("content", [b"", b"not a database at all" * 100])
def test_restore_refuses_an_empty_or_broken_file(capsys, dbp, tmp_path, content):
    bad = tmp_path / "bad.db"
    bad.write_bytes(content)
    err = _refused(capsys, dbp, bad)
    assert "is empty" in err or "not a SQLite database" in err


def test_restore_refuses_a_damaged_backup(capsys, dbp, tmp_path):
    damaged = tmp_path / "damaged.db"
    assert _cli(capsys, dbp, "backup", str(damaged))[0] == 0
    data = bytearray(damaged.read_bytes())
    page = 4096
    data[3 * page: 4 * page] = b"\xff" * page  # overwrite a b-tree page
    damaged.write_bytes(bytes(data))
    err = _refused(capsys, dbp, damaged)
    assert "integrity check failed" in err or "malformed" in err


def test_backup_refuses_to_overwrite_the_database_itself(capsys, dbp):
    code, _, err = _cli(capsys, dbp, "backup", str(dbp))
    assert code == 1
    assert "onto itself" in err


def test_backup_of_a_missing_database(capsys, tmp_path):
    code, _, err = _cli(capsys, tmp_path / "none.db", "backup", str(tmp_path / "b.db"))
    assert code == 1
    assert "no database at" in err
    assert not (tmp_path / "none.db").exists()


def test_a_failed_backup_keeps_the_previous_backup(capsys, dbp, tmp_path, monkeypatch):
    target = tmp_path / "b.db"
    assert _cli(capsys, dbp, "backup", str(target))[0] == 0
    previous = target.read_bytes()

    def broken(*args):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr("concord.store.backup._check_integrity", broken)
    code, _, err = _cli(capsys, dbp, "backup", str(target))
    assert code == 1
    assert "disk I/O error" in err
    assert target.read_bytes() == previous
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".b.db")) == []


@pytest.mark.parametrize("command", ["backup", "restore"])
def test_help(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m concord {command}")
    assert ("*/30 * * * *" in out) == (command == "backup")


def _doctor(path: Path, *sql: str) -> None:
    conn = sqlite3.connect(path)
    for statement in sql:
        conn.execute(statement)
    conn.commit()
    conn.close()


_EAT_RATINGS = ("CREATE TRIGGER eat AFTER INSERT ON ratings BEGIN DELETE FROM ratings "
                "WHERE id = NEW.id; END")


def test_restore_refuses_a_backup_that_carries_its_own_trigger(capsys, dbp, tmp_path):
    doctored = tmp_path / "doctored.db"
    assert _cli(capsys, dbp, "backup", str(doctored))[0] == 0
    _doctor(doctored, _EAT_RATINGS)
    err = _refused(capsys, dbp, doctored)
    assert "trigger 'eat'" in err
    assert not list(tmp_path.glob("live.db.before-restore-*"))


def test_an_older_backup_with_a_trigger_of_its_own_is_refused_after_its_upgrade(
        capsys, dbp, tmp_path):
    from concord.store.migrations import migrations

    old = tmp_path / "old.db"
    db = Database(sqlite3.connect(old))
    migrations.apply(db, stop_before=migrations.pending(open_db(":memory:",
                                                                migrate=False))[-1].name)
    db.close()
    _doctor(old, _EAT_RATINGS)
    err = _refused(capsys, dbp, old)
    assert f"backup {old}" in err
    assert "trigger 'eat'" in err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_backup_with_the_change_counter_at_the_integer_limit_restores_with_a_working_cache(
        capsys, dbp, tmp_path):
    from concord.store import report_cache

    limit = tmp_path / "limit.db"
    assert _cli(capsys, dbp, "backup", str(limit))[0] == 0
    _doctor(limit, f"UPDATE data_changes SET n = {(1 << 63) - 1}")
    assert _cli(capsys, dbp, "restore", str(limit), "--yes")[0] == 0
    db = open_db(dbp)
    seen = [report_cache.fingerprint(db)]
    for name in ("x", "y", "z"):  # each update must give a new fingerprint
        with db.conn:
            db.execute("UPDATE studies SET name = ? WHERE name = 's'", [name])
            db.execute("UPDATE studies SET name = 's' WHERE name = ?", [name])
        seen.append(report_cache.fingerprint(db))
    assert None not in seen
    assert len(set(seen)) == len(seen)
    assert report_cache.changes(db.conn) < 100


def test_restore_waits_for_the_write_lock_a_bounded_time_and_changes_nothing(
        capsys, dbp, tmp_path, monkeypatch):
    from concord.store import swap

    assert _cli(capsys, dbp, "backup", str(tmp_path / "b.db"))[0] == 0
    monkeypatch.setattr(swap, "LOCK_WAIT_S", 0.2)
    writer = sqlite3.connect(dbp)
    writer.execute("BEGIN IMMEDIATE")  # a stuck writer
    try:
        err = _refused(capsys, dbp, tmp_path / "b.db")
    finally:
        writer.rollback()
        writer.close()
    assert "stayed busy" in err
    assert not list(tmp_path.glob("live.db.before-restore-*"))


def test_a_failed_safety_copy_leaves_the_database_as_it_was(capsys, dbp, tmp_path,
                                                            monkeypatch):
    from concord.store import backup as backup_store

    assert _cli(capsys, dbp, "backup", str(tmp_path / "b.db"))[0] == 0
    check = backup_store._check_integrity

    def full(conn, label):
        if "before-restore" in label:  # the safety copy only
            raise ConcordError(f"cannot write {label}: No space left on device")
        check(conn, label)

    monkeypatch.setattr(backup_store, "_check_integrity", full)
    err = _refused(capsys, dbp, tmp_path / "b.db")
    assert "the safety copy failed" in err
    assert "nothing was changed" in err


def test_a_write_that_waits_too_long_for_a_restore_gets_a_clear_retryable_message(
        dbp, monkeypatch):
    from concord.store import db as db_module

    db = open_db(dbp)
    rid = invited(db, "s", "ann")
    item = rating.next_item(db, "s", rid)
    monkeypatch.setattr(db_module, "BUSY_TIMEOUT_MS", 200)
    writer = sqlite3.connect(dbp)
    writer.execute("BEGIN IMMEDIATE")  # what a restore holds while it swaps the pages
    try:
        with pytest.raises(ConcordError, match="nothing was saved, please try again") as exc:
            rating.submit(db, "s", rid, item.image_id, {"SC": 1, "PR": 1},
                          submission=new_submission())
    finally:
        writer.rollback()
        writer.close()
    assert isinstance(exc.value, sqlite3.OperationalError)  # as SQLite's own error was
    assert _ratings(dbp) == 0


def test_restore_repairs_a_database_changed_by_hand(capsys, dbp, tmp_path):
    good = tmp_path / "good.db"
    assert _cli(capsys, dbp, "backup", str(good))[0] == 0
    _doctor(dbp, _EAT_RATINGS)
    code, _, err = _cli(capsys, dbp, "studies")
    assert code == 1 and "trigger 'eat'" in err  # refused for everyday use
    code, _, err = _cli(capsys, dbp, "restore", str(good), "--yes")
    assert code == 0, err
    [safety] = tmp_path.glob("live.db.before-restore-*")
    conn = sqlite3.connect(safety)
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'eat'").fetchone() == (1,)
    conn.close()
    assert _cli(capsys, dbp, "studies")[0] == 0


@pytest.mark.parametrize("where", ["missing/deeper", "afile"])
def test_backup_into_a_folder_that_is_not_there_names_the_folder(capsys, dbp, tmp_path, where):
    (tmp_path / "afile").write_text("x")
    target = tmp_path / where / "b.db"
    code, _, err = _cli(capsys, dbp, "backup", str(target))
    assert code == 1
    assert f"cannot write the backup {target}: the folder {target.parent}" in err
    assert str(dbp) not in err.replace(str(target), "")  # the database is not blamed
    assert not target.exists()
