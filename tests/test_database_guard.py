"""`--db` must name a Concord database (or a new or empty file) of this version or older.

Anything else is refused with one line before the file is changed: no WAL switch, no
migrations table, not a byte different."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from concord import __version__
from concord.cli import main
from concord.store import open_db
from concord.store.migrations import migrations
from tests.foundation_helpers import ROOT


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _refused(capsys, path: Path) -> str:
    """Run `studies` on ``path``; assert one-line refusal and an untouched file."""
    before = _digest(path)
    assert main(["--db", str(path), "studies"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: database ")
    assert len(err.strip().splitlines()) == 1, err
    assert _digest(path) == before
    assert not Path(f"{path}-wal").exists()
    return err


def _other_app(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)")
    conn.execute("INSERT INTO users (email) VALUES ('a@b.c')")
    conn.commit()
    conn.close()
    return path


def _concord(path: Path, *sql: str) -> Path:
    """A Concord database at ``path``, then ``sql`` run on it by hand."""
    open_db(path).close()
    if sql:
        conn = sqlite3.connect(path)
        for statement in sql:
            conn.execute(statement)
        conn.commit()
        conn.close()
    return path


def test_another_applications_database_is_refused_unchanged(capsys, tmp_path):
    path = _other_app(tmp_path / "app.db")
    err = _refused(capsys, path)
    assert "is not a Concord database (it holds users)" in err
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert tables == {"users"}


def test_another_sqlite_utils_migration_set_is_not_concord(capsys, tmp_path):
    path = _other_app(tmp_path / "app.db")
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE _sqlite_migrations (id INTEGER PRIMARY KEY, migration_set TEXT,"
                 " name TEXT, applied_at TEXT)")
    conn.execute("INSERT INTO _sqlite_migrations VALUES (1, 'blog', 'm001_posts', 'x')")
    conn.commit()
    conn.close()
    assert "is not a Concord database" in _refused(capsys, path)


def test_a_file_that_is_not_sqlite(capsys, tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("dear diary, " * 400)
    assert "not a SQLite database" in _refused(capsys, path)


def test_a_database_from_a_newer_concord_is_refused_with_the_versions(capsys, tmp_path):
    path = _concord(tmp_path / "c.db", "INSERT INTO _sqlite_migrations (migration_set, name,"
                    " applied_at) VALUES ('concord', 'm901_rater_confidence', 'x')")
    err = _refused(capsys, path)
    last = migrations.pending(open_db(":memory:", migrate=False))[-1].name
    assert "written by a newer Concord: it has migration(s) m901_rater_confidence" in err
    assert f"this Concord ({__version__}) knows migrations up to {last}" in err


@pytest.mark.parametrize(("sql", "named"), [
    ("ALTER TABLE ratings ADD COLUMN confidence REAL", "ratings.confidence"),
    ("CREATE TABLE rater_notes (id INTEGER PRIMARY KEY, note TEXT)", "rater_notes.id"),
])
def test_an_extra_column_or_table_is_refused(capsys, tmp_path, sql, named):
    err = _refused(capsys, _concord(tmp_path / "c.db", sql))
    assert "does not know: " in err
    assert named in err
    assert __version__ in err


def test_a_missing_column_is_refused(capsys, tmp_path):
    path = _concord(tmp_path / "c.db", "ALTER TABLE marks DROP COLUMN note")
    assert "lacks column(s)" in _refused(capsys, path)


def test_a_named_pipe_as_db_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "c.db"
    os.mkfifo(fifo)
    env = {k: v for k, v in os.environ.items() if k != "CONCORD_DB"}
    res = subprocess.run([sys.executable, "-m", "concord", "--db", str(fifo), "studies"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert "is not a regular file" in res.stderr
    assert "Traceback" not in res.stderr


def test_an_empty_file_becomes_a_concord_database(capsys, tmp_path):
    path = tmp_path / "empty.db"
    path.touch()
    assert main(["--db", str(path), "init", "--no-demo"]) == 0
    assert open_db(path).execute("SELECT COUNT(*) FROM studies").fetchone()[0] == 0


def test_an_older_concord_database_is_upgraded(tmp_path):
    path = tmp_path / "old.db"
    old = open_db(path, migrate=False)
    last = migrations.pending(old)[-1].name
    migrations.apply(old, stop_before=last)
    old.close()
    db = open_db(path)
    assert migrations.pending(db) == []


def test_commits_are_durable_synchronous_full(tmp_path):
    db = open_db(tmp_path / "c.db")
    assert db.journal_mode == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


@pytest.mark.parametrize(("sql", "named"), [
    ("CREATE TRIGGER eat_ratings AFTER INSERT ON ratings BEGIN DELETE FROM ratings; END",
     "trigger 'eat_ratings'"),
    ("CREATE TRIGGER on_migrate AFTER INSERT ON _sqlite_migrations BEGIN DELETE FROM raters; "
     "END", "trigger 'on_migrate'"),
    ("CREATE INDEX by_hand ON ratings(value)", "index 'by_hand'"),
])
def test_an_extra_trigger_index_or_view_is_refused(capsys, tmp_path, sql, named):
    err = _refused(capsys, _concord(tmp_path / "c.db", sql))
    assert "has schema object(s) this Concord" in err
    assert named in err


@pytest.mark.parametrize(("drop", "create", "named"), [
    ('DROP TRIGGER "data_changes_update_ratings"',
     'CREATE TRIGGER "data_changes_update_ratings" AFTER UPDATE ON ratings BEGIN '
     "DELETE FROM ratings WHERE id = NEW.id; END", "trigger 'data_changes_update_ratings'"),
    ("DROP VIEW current_ratings",  # the same columns, no rows: every rating hidden
     "CREATE VIEW current_ratings AS SELECT * FROM ratings WHERE 0", "view 'current_ratings'"),
])
def test_a_trigger_or_view_rewritten_under_its_own_name_is_refused(capsys, tmp_path, drop,
                                                                   create, named):
    err = _refused(capsys, _concord(tmp_path / "c.db", drop, create))
    assert "differ from this Concord's" in err
    assert named in err


@pytest.mark.parametrize("sql", ['DROP TRIGGER "data_changes_delete_ratings"',
                                 "DROP INDEX adjudications_item"])
def test_a_dropped_trigger_or_index_is_refused(capsys, tmp_path, sql):
    assert "lacks schema object(s)" in _refused(capsys, _concord(tmp_path / "c.db", sql))


def test_sqlites_own_tables_and_spacing_are_not_differences(tmp_path):
    open_db(_concord(tmp_path / "c.db", "ANALYZE")).close()  # ANALYZE makes sqlite_stat1


def test_an_older_concord_database_with_a_trigger_of_its_own_is_refused_before_its_upgrade(
        capsys, tmp_path):
    path = tmp_path / "old.db"
    old = open_db(path, migrate=False)
    migrations.apply(old, stop_before=migrations.pending(old)[-1].name)
    old.execute("CREATE TRIGGER on_upgrade AFTER INSERT ON _sqlite_migrations BEGIN "
                "DELETE FROM raters; END")
    old.conn.commit()
    old.close()
    err = _refused(capsys, path)  # not one migration applied: the trigger never fired
    assert "trigger 'on_upgrade'" in err
