"""``concord migrate-db``: a whole database copied between SQLite and PostgreSQL, row for
row, checked both ways; a non-empty target and bad arguments refused with nothing written."""

from __future__ import annotations

import json
import sqlite3

import pytest

from concord.cli import main
from concord.services.crowd import links as crowd
from concord.store import copy, pg, pg_open
from concord.store.db import open_db
from tests.crowd_helpers import make_crowd_study
from tests.foundation_helpers import seed_study

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_url(pg_server, request):
    made = []

    def new(tag: str = "m") -> str:
        name = f"{tag}{len(made)}_{abs(hash(request.node.nodeid)) % 10**8}"
        made.append(name)
        return pg_server.create_database(name)

    yield new
    for name in made:
        pg.close_pool(pg_server.url(name))
        pg_open._CHECKED.discard(pg_server.url(name))
        pg_server.drop_database(name)


@pytest.fixture
def full_sqlite(tmp_path):
    """A SQLite database with ratings, scores, a crowd link, audit rows and a cached
    report (every kind of table this test can fill)."""
    from concord.services import studies

    path = tmp_path / "full.db"
    db = open_db(path)
    seed_study(db, tmp_path)
    studies.import_manifest(db, make_crowd_study(tmp_path / "crowd"))
    crowd.create_link(db, "crowd", "http://x")
    db.close()
    assert main(["--db", str(path), "stats", "--study", "dash", "--json", "--n-boot", "20",
                 "--n-perm", "20"]) == 0  # fills the report cache
    return path


def _checksums(target) -> dict[str, tuple[int, str]]:
    db = open_db(target, migrate=False)
    try:
        return {t: copy.checksum(db, t, cols) for t, cols in copy.layout()}
    finally:
        db.close()


def test_sqlite_to_postgresql_and_back_is_lossless(full_sqlite, pg_url, tmp_path, capsys):
    url = pg_url()
    assert main(["migrate-db", "--from", str(full_sqlite), "--to", url]) == 0
    out = capsys.readouterr().out
    assert "row counts and checksums match on both sides" in out and "DIFFERS" not in out
    back = tmp_path / "back.db"
    assert main(["migrate-db", "--from", url, "--to", str(back)]) == 0
    before, there, after = _checksums(full_sqlite), _checksums(url), _checksums(back)
    assert before == there == after
    filled = [t for t, (n, _) in before.items() if n]
    for table in ("ratings", "metric_scores", "audit_log", "report_cache", "crowd_links",
                  "crowd_salt", "data_changes", "_sqlite_migrations"):
        assert table in filled, table


def test_the_copy_keeps_ids_going_on_postgresql(full_sqlite, pg_url):
    url = pg_url()
    assert main(["migrate-db", "--from", str(full_sqlite), "--to", url]) == 0
    db = open_db(url)
    try:
        top = db.execute("SELECT MAX(id) FROM raters").fetchone()[0]
        new = db.execute("INSERT INTO raters (name, created_at) VALUES ('new', 'now')"
                         " RETURNING id").fetchone()[0]
        assert new == top + 1
    finally:
        db.close()


def _report(where: str, study: str, capsys) -> dict:
    """`stats --json` of ``study`` in the database at ``where``, less what names the
    database or the moment it was made."""
    capsys.readouterr()
    assert main(["--db", where, "stats", "--study", study, "--json", "--no-cache",
                 "--n-boot", "20", "--n-perm", "20"]) == 0
    doc = json.loads(capsys.readouterr().out)
    doc.get("meta", {}).pop("generated_at", None)
    doc.get("meta", {}).pop("database", None)
    return doc


def test_the_same_report_on_both_engines(full_sqlite, pg_url, capsys):
    url = pg_url()
    assert main(["migrate-db", "--from", str(full_sqlite), "--to", url]) == 0
    assert _report(str(full_sqlite), "dash", capsys) == _report(url, "dash", capsys)


def test_a_target_with_data_is_refused_and_left_alone(full_sqlite, pg_url, capsys):
    url = pg_url()
    assert main(["migrate-db", "--from", str(full_sqlite), "--to", url]) == 0
    before = _checksums(url)
    capsys.readouterr()
    assert main(["migrate-db", "--from", str(full_sqlite), "--to", url]) == 1
    err = capsys.readouterr().err
    assert "is not empty" in err and "nothing was changed" in err
    assert _checksums(url) == before


def test_a_sqlite_target_with_data_is_refused(full_sqlite, tmp_path, capsys):
    other = tmp_path / "other.db"
    db = open_db(other)
    db.execute("INSERT INTO raters (name, created_at) VALUES ('x', 'now')")
    db.close()
    assert main(["migrate-db", "--from", str(full_sqlite), "--to", str(other)]) == 1
    assert "raters (1 rows)" in capsys.readouterr().err


@pytest.mark.parametrize("source", ["missing.db", "notadb"])
def test_a_source_that_is_not_a_concord_database_is_refused(tmp_path, pg_url, capsys,
                                                            source):
    (tmp_path / "notadb").write_bytes(b"hello" * 100)
    url = pg_url()
    code = main(["migrate-db", "--from", str(tmp_path / source), "--to", url])
    assert code == 1
    assert "Traceback" not in capsys.readouterr().err
    db = open_db(url)
    try:
        assert copy.occupied(db) == {}
    finally:
        db.close()
    assert not (tmp_path / "missing.db").exists()  # nothing created for a missing source


def test_from_and_to_the_same_database_is_refused(full_sqlite, capsys):
    assert main(["migrate-db", "--from", str(full_sqlite), "--to", str(full_sqlite)]) == 1
    assert "the same database" in capsys.readouterr().err


def test_an_older_sqlite_database_is_refused_before_anything_is_written(tmp_path, pg_url,
                                                                         capsys):
    from sqlite_utils import Database

    from concord.store.migrations import migrations

    old = tmp_path / "old.db"
    conn = Database(sqlite3.connect(old))
    migrations.apply(conn, stop_before="m1401_research_sessions")
    conn.close()
    url = pg_url()
    assert main(["migrate-db", "--from", str(old), "--to", url]) == 1
    assert "older Concord" in capsys.readouterr().err


def test_a_row_postgresql_refuses_names_its_table_and_writes_nothing(tmp_path, pg_url,
                                                                      capsys):
    path = tmp_path / "odd.db"
    db = open_db(path)
    # SQLite keeps text in an INTEGER column (a file edited by hand, keys unchecked);
    # PostgreSQL's BIGINT cannot take it.
    db.execute("PRAGMA foreign_keys = OFF")
    db.execute("INSERT INTO raters (name, created_at, revoked_at) VALUES ('x', 'now', NULL)")
    db.execute("INSERT INTO studies (name, protocol, rubric, settings, created_at) VALUES"
               " ('s', 'score', 'r', '{}', 'now')")
    db.execute("INSERT INTO models (study_id, name) VALUES ('not a number', 'm')")
    db.close()
    url = pg_url()
    assert main(["migrate-db", "--from", str(path), "--to", url]) == 1
    err = capsys.readouterr().err
    assert "table models" in err and "nothing was written" in err
    check = open_db(url)
    try:
        assert copy.occupied(check) == {}
    finally:
        check.close()


def _hostile(tmp_path, kind: str):
    import os

    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "huge":  # a file 100x a database's size that is not one
        path.write_bytes(b"\x00" * 20_000_000)
    return path


@pytest.mark.parametrize("kind", ["fifo", "loop", "folder", "huge"])
def test_a_hostile_source_is_one_line_and_the_target_stays_empty(tmp_path, pg_url, capsys,
                                                                kind):
    url = pg_url()
    source = _hostile(tmp_path, kind)
    assert main(["migrate-db", "--from", str(source), "--to", url]) == 1  # never hangs
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert str(source) in err
    db = open_db(url)
    try:
        assert copy.occupied(db) == {}
    finally:
        db.close()


@pytest.mark.parametrize("kind", ["fifo", "loop", "folder"])
def test_a_hostile_sqlite_target_is_refused_unchanged(full_sqlite, tmp_path, capsys, kind):
    target = _hostile(tmp_path, kind)
    assert main(["migrate-db", "--from", str(full_sqlite), "--to", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert (target.is_fifo() if kind == "fifo" else True)  # left as it was, not replaced


def test_a_study_shaped_unlike_ours_moves_whole_with_a_rater_mid_item(tmp_path, pg_url,
                                                                       capsys):
    """A 1-7 scale under other criterion names, model names with dots and non-ASCII, rater
    names with spaces and CJK, and a rater who opened an item and left: the same report and
    the open lease on PostgreSQL."""
    import random

    from concord.services import studies
    from concord.services.labelling import rating
    from concord.store.raters import rater_for_token

    rnd, rows = random.Random(3), ["prompt_id,model,rater,criterion,value"]
    for p in range(12):
        for model in ("sdxl-turbo", "flux.1-dev", "dall·e 3"):
            for rater in ("Ana María", "李雷", "rater #3"):
                rows += [f"q{p},{model},{rater},{c},{rnd.randint(1, 7)}"
                         for c in ("aesthetics", "faithfulness")]
    csv = tmp_path / "odd.csv"
    csv.write_text("\n".join(rows) + "\n", encoding="utf-8")
    source = tmp_path / "odd.db"
    assert main(["--db", str(source), "import-ratings", "--study", "odd", "--format", "csv",
                 "--criteria", "aesthetics=1..7:1", "--criteria", "faithfulness=1..7:1",
                 str(csv)]) == 0
    db = open_db(source)
    from tests.helpers import make_folder_study

    studies.import_manifest(db, make_folder_study(tmp_path / "plain", prompts=2))
    (invite,) = studies.invite(db, "plain", ["leaver"], "http://x")
    leaver = rater_for_token(db, invite.url.split("token=")[1]).id
    assert rating.next_item(db, "plain", leaver) is not None  # opened, never submitted
    db.close()
    url = pg_url()
    assert main(["migrate-db", "--from", str(source), "--to", url]) == 0
    assert _report(str(source), "odd", capsys) == _report(url, "odd", capsys)
    moved = open_db(url)
    try:
        assert moved.execute("SELECT COUNT(*) FROM assignments WHERE rater_id = ? AND"
                             " status = 'open'", [leaver]).fetchone() == (1,)
        names = {r[0] for r in moved.execute("SELECT name FROM raters")}
        assert {"Ana María", "李雷", "rater #3", "leaver"} <= names
    finally:
        moved.close()
