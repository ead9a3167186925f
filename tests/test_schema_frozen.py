"""Shipped migrations are frozen: each does to the schema what it did when it shipped
(``tests/data/schema-steps.json``, written by the migrations as they were before any was
frozen), holds its own DDL, and a database migrated one step at a time equals a new one."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest
from sqlite_utils import Database

from concord.store import open_db
from concord.store import report_cache as cache_store
from concord.store.migrations import migrations
from tests import schema_steps
from tests.helpers import ROOT

MIGRATIONS = ROOT / "concord" / "store" / "migrations"


def _names() -> list[str]:
    return [m.name for m in migrations.pending(Database(sqlite3.connect(":memory:")))]


def test_every_migration_does_what_it_did_when_it_shipped():
    shipped = schema_steps.load()
    now = {e["name"]: e for e in schema_steps.steps(migrations)}
    missing = [n for n in _names() if n not in {e["name"] for e in shipped}]
    assert not missing, (f"migration(s) {missing} have no entry in {schema_steps.SNAPSHOT}:"
                         " run `python tests/schema_steps.py --append` once they ship")
    for entry in shipped:
        assert now[entry["name"]] == entry, entry["name"]


def _final(entries: list[dict]) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in entries:
        for key in entry["dropped"]:
            del out[key]
        out.update(entry["set"])
    return out


def test_a_database_the_shipped_migrations_made_opens_unchanged(tmp_path):
    path = tmp_path / "shipped.db"
    conn = sqlite3.connect(path)
    old = Database(conn)
    migrations.ensure_migrations_table(old)  # sqlite-utils' (m1001 put triggers on it)
    made = _final(schema_steps.load())
    for kind in ("table", "index", "view", "trigger"):  # what each one refers to first
        for key, sql in made.items():
            if key.startswith(f"{kind} "):
                conn.execute(sql)
    for name in _names():
        old["_sqlite_migrations"].insert({"migration_set": migrations.name, "name": name,
                                          "applied_at": "2025-01-01 00:00:00+00:00"})
    conn.commit()
    conn.close()
    db = open_db(path)  # the guard compares every object's SQL with this version's
    assert migrations.pending(db) == []
    assert schema_steps.objects(db.conn) == made
    db.close()


def test_a_new_database_equals_one_migrated_step_by_step_from_an_empty_file(tmp_path):
    path = tmp_path / "steps.db"
    path.touch()
    names = _names()
    for following in [*names[1:], None]:
        db = open_db(path, migrate=False)  # the guard checks each intermediate schema
        migrations.apply(db, stop_before=following)
        db.close()
    stepped = open_db(path)
    fresh = open_db(tmp_path / "fresh.db")
    assert [m.name for m in migrations.applied(stepped)] == names
    assert schema_steps.objects(stepped.conn) == schema_steps.objects(fresh.conn)
    assert sorted(_exact(stepped)) == sorted(_exact(fresh))


def _exact(db: Database) -> list[tuple[str, str, str]]:
    """Every schema object's SQL as SQLite stores it (no evening out)."""
    return db.execute("SELECT type, name, sql FROM sqlite_master WHERE tbl_name != "
                      "'_sqlite_migrations' OR type = 'trigger'").fetchall()


def test_every_table_has_the_change_triggers_the_report_cache_expects(tmp_path):
    db = open_db(tmp_path / "c.db")
    assert cache_store.untriggered(db) == []
    triggers = {k: v for k, v in schema_steps.objects(db.conn).items()
                if k.startswith("trigger ")}
    for key, sql in triggers.items():
        table = sql.split(" ON ")[1].split()[0]
        expected = Database(sqlite3.connect(":memory:"))
        expected.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY)")
        expected.execute("CREATE TABLE data_changes (id INTEGER PRIMARY KEY, n INTEGER)")
        for statement in cache_store.trigger_sql(table).split(";\n"):
            expected.execute(statement)
        assert schema_steps.objects(expected.conn)[key] == sql, key


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


@pytest.mark.parametrize("path", sorted(MIGRATIONS.glob("*.py")), ids=lambda p: p.name)
def test_a_migration_calls_no_live_module_code(path):
    """A migration that called a module of Concord would change when that module does."""
    allowed = {"concord.store.migrations.script"}
    if path.name == "__init__.py":
        allowed |= {"concord.store.migrations"}
    ours = {m for m in _imports(path) if m.startswith("concord")}
    assert ours <= allowed, ours - allowed


def test_the_data_model_maps_every_table_and_view_with_its_migration(tmp_path):
    text = (ROOT / "docs" / "data-model.md").read_text(encoding="utf-8")
    section = text.split("## Schema map", 1)[1].split("\n## ", 1)[0]
    mapped = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            name = line.split("`")[1]
            mapped[name] = line.split("|")[3].strip().split("`")[1::2]
    db = open_db(tmp_path / "c.db")
    schema = {r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE "
        "'sqlite!_%' ESCAPE '!'")}
    assert sorted(mapped) == sorted(schema)
    made: dict[str, list[str]] = {}
    for entry in schema_steps.load():
        for key in entry["set"]:
            kind, name = key.split(" ", 1)
            if kind in ("table", "view"):
                made.setdefault(name, []).append(entry["name"])
    for name, migrations_named in mapped.items():
        assert migrations_named == made.get(name, []), name
