"""The report cache: a stored report is served only while the database, the options and
the code are those it was computed with (concord.store.report_cache,
concord.services.report.cache)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import zlib

import pytest
from sqlite_utils import Database

from concord.cli import main
from concord.cli import stats as stats_cli
from concord.rubrics import model as rubric_model
from concord.services import exclusions
from concord.services.labelling import common
from concord.services.report import cache as report_cache
from concord.services.report import request as report_request
from concord.services.report import study as report
from concord.services.report.request import ReportOptions
from concord.store import catalog, pg_schema
from concord.store import report_cache as store
from concord.store.db import open_db
from concord.store.migrations import migrations
from concord.store.migrations.script import run_script
from tests.helpers import ROOT, sqlite_only

pytestmark = pytest.mark.both_engines

OWN = {"report_cache", "data_changes", "signin_failures", "research_sessions",
       "questionnaire_answers"}  # no change triggers


def tables(db: Database) -> list[str]:
    return catalog.table_names(db)


def test_every_table_has_an_update_and_a_delete_trigger(db):
    triggers = catalog.trigger_names(db)
    for table in set(tables(db)) - OWN:
        assert f"data_changes_update_{table}" in triggers, table
        assert f"data_changes_delete_{table}" in triggers, table
    assert store.untriggered(db) == []
    assert store.fingerprint(db) is not None


def test_a_database_from_before_the_cache_gets_triggers_on_its_tables(tmp_path):
    path = tmp_path / "old.db"
    old = Database(sqlite3.connect(path))
    migrations.apply(old, stop_before="m1001_report_cache")
    old.execute("INSERT INTO raters (name, token_hash, created_at) VALUES ('ann', 'h', 'now')")
    old.conn.commit()
    old.close()
    db = open_db(path)
    assert store.fingerprint(db) is not None
    before = store.fingerprint(db)
    with db.conn:
        db.execute("UPDATE raters SET name = 'bob'")
    assert store.fingerprint(db) != before
    assert [r[0] for r in db.execute("SELECT name FROM raters")] == ["bob"]


def test_any_row_change_gives_a_new_fingerprint(db, engine):
    with db.conn:
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    assert store.fingerprint(db) is None  # a table without triggers: no cache at all
    assert store.untriggered(db) == ["t"]
    with db.conn:
        if engine == "postgresql":
            db.conn.raw.execute(pg_schema.triggers_sql("t"))
        else:
            run_script(db, store.trigger_sql("t"))
    assert store.untriggered(db) == []
    seen = [store.fingerprint(db)]
    steps = [
        "INSERT INTO t (id, v) VALUES (5, 'a')",
        "INSERT INTO t (id, v) VALUES (2, 'b')",  # below the largest rowid
        "UPDATE t SET v = 'c' WHERE id = 2",
        "UPDATE t SET v = 'c' WHERE id = 2",  # the same value again still counts
        "DELETE FROM t WHERE id = 5",
        "INSERT INTO t (id, v) VALUES (5, 'a')",  # back to the same rows, rowids and count
    ]
    for sql in steps:
        with db.conn:
            db.execute(sql)
        seen.append(store.fingerprint(db))
    assert len(set(seen)) == len(seen), seen


def test_a_dropped_trigger_or_counter_turns_the_cache_off(db, engine):
    on = " ON ratings" if engine == "postgresql" else ""
    with db.conn:
        db.execute(f'DROP TRIGGER "data_changes_delete_ratings"{on}')
    assert store.fingerprint(db) is None
    assert store.untriggered(db) == ["ratings"]
    if engine == "sqlite":  # PostgreSQL's triggers are pg_schema's, not trigger_sql's
        with db.conn:
            db.execute(store.trigger_sql("ratings").split(";\n")[1])
        assert store.fingerprint(db) is not None
    with db.conn:
        db.execute("DELETE FROM data_changes")
    assert store.fingerprint(db) is None


def test_put_keeps_the_newest_entries_of_the_current_fingerprint(db, monkeypatch):
    monkeypatch.setattr(store, "KEEP", 2)
    assert store.put(db, "old", "fp0", b"x")
    for key in ("a", "b", "c"):
        assert store.put(db, key, "fp1", key.encode())
    assert {r[0] for r in db.execute("SELECT key FROM report_cache")} == {"b", "c"}
    assert store.get(db, "c", "fp1") == b"c"
    assert store.get(db, "c", "fp2") is None
    assert store.get(db, "old", "fp0") is None


def test_put_gives_up_quietly_when_it_cannot_write(db, tmp_path, engine):
    sqlite_only(engine, "a read-only SQLite file and its busy_timeout")
    db.conn.execute("BEGIN")
    assert not store.put(db, "k", "fp", b"x")  # never inside the caller's transaction
    db.conn.rollback()
    ro = Database(sqlite3.connect(f"file:{tmp_path / 'concord.db'}?mode=ro", uri=True,
                                  timeout=7.0))
    assert not store.put(ro, "k", "fp", b"x")
    assert ro.execute("PRAGMA busy_timeout").fetchone()[0] == 7000  # restored as it was
    ro.close()
    assert db.execute("SELECT COUNT(*) FROM report_cache").fetchone()[0] == 0


def test_a_locked_database_does_not_wait_long_and_keeps_nothing(tmp_path):
    path = tmp_path / "c.db"
    db, other = open_db(path), open_db(path)
    other.conn.execute("BEGIN IMMEDIATE")
    try:
        assert not store.put(db, "k", "fp", b"x")
    finally:
        other.conn.rollback()
    assert store.put(db, "k", "fp", b"x")


def _request(db: Database, study: str = "dash",
             **options: object) -> report_request.ReportRequest:
    return report_request.resolve(db, study, ReportOptions(**options))  # type: ignore[arg-type]


def counting(monkeypatch) -> list[int]:
    """Count the report computations of concord.services.report.study."""
    calls: list[int] = []
    real = report.study_report

    def wrapped(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(report, "study_report", wrapped)
    return calls


def test_a_report_is_reused_until_the_data_changes(seeded, monkeypatch):
    db, _ = seeded
    calls = counting(monkeypatch)
    first = report.report_text(db, _request(db, n_boot=20, n_perm=20))
    assert report.report_text(db, _request(db, n_boot=20, n_perm=20)) == first
    assert len(calls) == 1
    report.report_text(db, _request(db, n_boot=30, n_perm=20))  # other options: computed
    assert len(calls) == 2
    exclusions.exclude_rater(db, "dash", json.loads(first)["raters"]["quality"][0]["rater"],
                             "too fast")
    after = report.report_text(db, _request(db, n_boot=20, n_perm=20))
    assert len(calls) == 3 and after != first
    assert after == report.report_text(db, _request(db, n_boot=20, n_perm=20),
                                       use_cache=False)


def test_a_change_during_the_computation_is_never_hidden(seeded):
    db, _ = seeded
    request = _request(db, n_boot=5)

    def racing() -> str:
        with db.conn:  # another writer, while the report is being computed
            db.execute("UPDATE raters SET name = name")
        return "computed before the change was seen"

    text, cached = report_cache.report_json(db, request, racing)
    assert text == "computed before the change was seen"
    assert not cached
    again, cached = report_cache.report_json(db, request, lambda: "fresh")
    assert (again, cached) == ("fresh", False)
    assert report_cache.report_json(db, request, lambda: "unused") == ("fresh", True)


def test_a_changed_source_or_rubric_file_is_a_new_key(tmp_path, monkeypatch):
    for folder in ("concord", "evaluators", "rubrics"):
        (tmp_path / folder).mkdir()
    rubric = tmp_path / "rubrics" / "r.yaml"
    rubric.write_text("combine: min\n")
    monkeypatch.setattr(report_cache, "ROOT", tmp_path)
    options = ReportOptions()
    key = report_cache.cache_key("s", options)
    assert report_cache.cache_key("s", options) == key
    rubric.write_text("combine: mean\n")  # one byte longer
    assert report_cache.cache_key("s", options) != key
    (tmp_path / "rubrics" / ".#r.yaml").symlink_to(tmp_path / "gone")  # an editor's lock
    assert report_cache.cache_key("s", options) != key  # and no error
    key = report_cache.cache_key("s", options)
    loop = tmp_path / "rubrics" / "loop.yaml"
    loop.symlink_to(loop)  # a link to itself
    os.mkfifo(tmp_path / "rubrics" / "pipe.yaml")  # stat only: never opened, never blocks
    assert report_cache.cache_key("s", options) != key
    key = report_cache.cache_key("s", options)
    (tmp_path / "concord" / "new.py").write_text("")
    # A process runs the modules it imported: its key follows them, not the disk...
    assert report_cache.cache_key("s", options) == key
    report_cache._sources.cache_clear()  # ...and the next process sees the new file.
    assert report_cache.cache_key("s", options) != key
    assert report_cache.cache_key("t", options) != report_cache.cache_key("s", options)


def test_a_rubric_edited_while_a_process_runs_is_used_and_keyed(tmp_path, monkeypatch):
    """The process parses the edited rubric again, so a report computed after the edit
    (and stored under the new key) is the new rubric's, as a fresh process computes it."""
    folder = tmp_path / "rubrics"
    folder.mkdir()
    source = (ROOT / "rubrics" / "imagenhub-released.yaml").read_text(encoding="utf-8")
    source = source.replace("id: imagenhub-released", "id: edited")
    path = folder / "edited.yaml"
    path.write_text(source, encoding="utf-8")
    monkeypatch.setattr(common, "DEFAULT_RUBRICS_DIR", folder)
    monkeypatch.setattr(rubric_model, "DEFAULT_RUBRICS_DIR", folder)
    first = common.rubric("edited")
    assert common.rubric("edited") is first  # parsed once while the file is unchanged
    edited = source.replace("method: geometric_mean", "method: arithmetic_mean")
    assert edited != source
    path.write_text(edited + "\n", encoding="utf-8")  # one byte longer: a new stamp
    assert common.rubric("edited").combine.method == "arithmetic_mean" != first.combine.method
    loop = folder / "loop.yaml"
    loop.symlink_to(loop)
    os.mkfifo(folder / "pipe.yaml")
    for bad in ("loop", "pipe"):  # a clear error naming the rubric, no hang
        with pytest.raises(FileNotFoundError, match=bad):
            common.rubric(bad)


def test_unknown_report_options_are_refused():
    with pytest.raises(TypeError, match="n_boots"):
        ReportOptions(n_boots=3)  # type: ignore[call-arg]


def cli(capsys, db_path, *args) -> str:
    assert main(["--db", str(db_path), "stats", "--study", "dash", "--n-boot", "20",
                 "--n-perm", "20", *args]) == 0
    return capsys.readouterr().out


def test_stats_prints_the_same_from_the_cache(seeded, capsys, monkeypatch):
    _, db_path = seeded
    cold_json, cold_table = cli(capsys, db_path, "--json"), cli(capsys, db_path)

    def refuse(*args):
        raise AssertionError("computed again although nothing changed")

    monkeypatch.setattr(stats_cli, "_compute", refuse)
    assert cli(capsys, db_path, "--json") == cold_json
    assert cli(capsys, db_path) == cold_table
    monkeypatch.undo()
    assert cli(capsys, db_path, "--json", "--no-cache") == cold_json


def test_stats_sees_a_rating_changed_by_hand(seeded, capsys):
    db, db_path = seeded
    before = cli(capsys, db_path, "--json")
    with db.conn:  # sqlite3 on the file, behind Concord's back
        db.execute("UPDATE ratings SET value = 0 WHERE id = (SELECT MIN(id) FROM ratings)")
    after = cli(capsys, db_path, "--json")
    assert after != before
    assert after == cli(capsys, db_path, "--json", "--no-cache")


def test_a_damaged_entry_is_computed_again(seeded):
    db, _ = seeded
    request = _request(db, n_boot=5)
    report_cache.report_json(db, request, lambda: "first")
    with db.conn:  # not the zlib stream that was stored
        db.execute("UPDATE report_cache SET body = ?", [b"\x00\xff"])
    assert report_cache.report_json(db, request, lambda: "again") == ("again", False)
    assert report_cache.report_json(db, request, lambda: "unused") == ("again", True)


@pytest.mark.parametrize("body", ["'not a zlib stream'", "1.5", "9000000000000000000"])
def test_an_entry_changed_by_hand_into_text_or_a_number_is_computed_again(seeded, body,
                                                                          engine):
    sqlite_only(engine, "a bytea column holds no text or number")
    db, _ = seeded
    request = _request(db, n_boot=5)
    report_cache.report_json(db, request, lambda: "first")
    with db.conn:
        db.execute(f"UPDATE report_cache SET body = {body}")
    assert report_cache.report_json(db, request, lambda: "again") == ("again", False)


def test_a_restore_never_repeats_a_fingerprint_seen_before_it(seeded, tmp_path):
    """Backup, change A, restore, change B: the same counts as after change A, but the
    dashboard (keyed by the fingerprint) must not take B's database for A's."""
    from concord.store import backup as backup_store

    db, db_path = seeded
    saved = tmp_path / "saved.db"
    backup_store.backup(db, saved)
    rating = "(SELECT MIN(id) FROM ratings)"
    with db.conn:
        db.execute(f"UPDATE ratings SET value = 0 WHERE id = {rating}")
    seen = store.fingerprint(db)
    db.close()
    backup_store.restore(db_path, saved, confirm=True)
    db = open_db(db_path)
    with db.conn:
        db.execute(f"UPDATE ratings SET value = 1 WHERE id = {rating}")
    assert store.fingerprint(db) != seen
    db.close()


def test_an_entry_that_would_expand_without_bound_is_computed_again(seeded):
    db, _ = seeded
    request = _request(db, n_boot=5)
    report_cache.report_json(db, request, lambda: "first")
    bomb = zlib.compress(b" " * (report_cache.MAX_RATIO * 100_000), 9)  # ~20 MB of spaces
    assert len(bomb) * report_cache.MAX_RATIO < 20_000_000
    with db.conn:
        db.execute("UPDATE report_cache SET body = ?", [bomb])
    assert report_cache.report_json(db, request, lambda: "again") == ("again", False)
    truncated = zlib.compress(b"abc" * 1000)[:-4]  # a stream cut short
    with db.conn:
        db.execute("UPDATE report_cache SET body = ?", [truncated])
    assert report_cache.report_json(db, request, lambda: "third") == ("third", False)


def test_the_dashboard_gets_the_report_stats_computed(seeded, monkeypatch):
    db, _ = seeded
    fresh = json.loads(report.report_json(report.study_report(
        db, _request(db, n_boot=20, n_perm=20))))
    calls = counting(monkeypatch)
    first = report.dashboard(db, _request(db, n_boot=20, n_perm=20))["report"]
    assert first == fresh
    assert report.dashboard(db, _request(db, n_boot=20, n_perm=20))["report"] == first
    assert len(calls) == 1


def test_two_stats_processes_at_once_agree_and_store_one_entry(seeded):
    db, db_path = seeded
    cmd = [sys.executable, "-m", "concord", "--db", str(db_path), "stats", "--study", "dash",
           "--json", "--n-boot", "20", "--n-perm", "20"]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    assert outs[0][0] == outs[1][0] and json.loads(outs[0][0])["meta"]["n_ratings"] > 0
    assert db.execute("SELECT COUNT(*) FROM report_cache").fetchone()[0] == 1


def test_a_likert_study_imported_from_csv_recomputes_after_each_import(tmp_path, capsys,
                                                                       monkeypatch):
    example = ROOT / "data" / "examples" / "likert"
    db = str(tmp_path / "likert.db")

    def run(*args) -> str:
        assert main(["--db", db, *args]) == 0
        return capsys.readouterr().out

    run("import-ratings", "--study", "likert-demo", "--format", "csv",
        str(example / "ratings.csv"))
    stats = ("stats", "--study", "likert-demo", "--json", "--n-boot", "20", "--n-perm", "20")
    first = run(*stats)
    monkeypatch.setattr(stats_cli, "_compute", lambda *a: pytest.fail("computed again"))
    assert run(*stats) == first
    monkeypatch.undo()
    # A latecomer who rated two images on the same 1-5 scale, then left.
    head, *rows = (example / "ratings.csv").read_text().splitlines()
    images = {tuple(r.split(",")[:2]): r.split(",") for r in rows}  # one row per image
    late = tmp_path / "late.csv"
    late.write_text("\n".join([head, *(",".join([*c[:2], "latecomer", *c[3:]])
                                       for c in list(images.values())[:2])]) + "\n")
    run("import-ratings", "--study", "likert-demo", "--format", "csv", str(late))
    after = run(*stats)
    assert json.loads(after)["meta"]["n_raters"] == json.loads(first)["meta"]["n_raters"] + 1
    assert after == run(*stats, "--no-cache")


def test_equal_options_are_one_entry_whatever_the_order_of_the_pair_settings():
    given = report_request.pair_overrides({"elo_scale": 300.0, "bt_prior": 0.5,
                                           "elo_base": None})  # None: the flag not given
    options = ReportOptions(pairs=given)
    assert options == ReportOptions(pairs=(("elo_scale", 300.0), ("bt_prior", 0.5)))
    assert hash(options) == hash(ReportOptions(pairs=(("elo_scale", 300.0),
                                                      ("bt_prior", 0.5))))
    assert report_cache.cache_key("s", options) == report_cache.cache_key(
        "s", ReportOptions(pairs=(("elo_scale", 300.0), ("bt_prior", 0.5))))
    assert options.key()["pairs"] == {"bt_prior": 0.5, "elo_scale": 300.0}
    assert ReportOptions().key()["pairs"] is None  # as the CLI keyed "no pair flags"
    assert report_cache.cache_key("s", options) != report_cache.cache_key(
        "s", ReportOptions())
