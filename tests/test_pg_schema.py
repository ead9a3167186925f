"""The PostgreSQL schema (concord/store/pg_schema.py) is the schema the SQLite migrations
make: same tables, columns, keys, indexes, views, change triggers, CHECKs and helper
functions. Without a PostgreSQL server only the text checks run."""

from __future__ import annotations

import sqlite3

import pytest

from concord.store import pg_schema
from concord.store.db import open_db
from concord.store.report_cache import _OWN

psycopg = pytest.importorskip("psycopg")



@pytest.fixture(scope="module")
def lite() -> sqlite3.Connection:
    """A database migrated by the SQLite migrations."""
    return open_db(":memory:").conn


def _names(conn: sqlite3.Connection, kind: str) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite!_%' ESCAPE '!'",
        [kind])}


def test_every_sqlite_table_and_view_is_in_the_ddl(lite):
    assert set(pg_schema.TABLES) == _names(lite, "table")
    assert set(pg_schema.VIEWS) == _names(lite, "view")
    for table in pg_schema.TABLES:
        assert f"CREATE TABLE {table} (" in pg_schema.DDL \
            or f'CREATE TABLE "{table}" (' in pg_schema.DDL


def test_every_sqlite_change_trigger_is_in_the_ddl(lite):
    for name in _names(lite, "trigger"):
        assert f'CREATE TRIGGER "{name}" ' in pg_schema.DDL
    assert not set(pg_schema.TRIGGERED) & set(_OWN)


def test_migration_names_are_those_sqlite_records(lite):
    applied = [r[0] for r in lite.execute(
        "SELECT name FROM _sqlite_migrations WHERE migration_set = ? ORDER BY id",
        [pg_schema.MIGRATION_SET])]
    assert list(pg_schema.MIGRATION_NAMES) == applied
    rows = pg_schema.migration_rows("2026-01-01 00:00:00+00:00")
    assert [r[1] for r in rows] == applied and {r[0] for r in rows} == {"concord"}


# --- With a server ---------------------------------------------------------------------
# The session's throw-away server (tests/conftest.py ``pg_server``).

@pytest.fixture(scope="module")
def pg(pg_server):
    """A fresh database holding the schema (a connection outside autocommit)."""
    url = pg_server.create_database("concord_schema")
    conn = psycopg.connect(url)
    with conn.transaction():
        conn.execute(pg_schema.DDL)
        conn.cursor().executemany(pg_schema.RECORD_MIGRATION, pg_schema.migration_rows())
    yield conn
    conn.close()
    pg_server.drop_database("concord_schema")


def _pg_columns(pg, table: str) -> list[tuple[str, bool, bool]]:
    return [tuple(r) for r in pg.execute(
        "SELECT attname, attnotnull, atthasdef OR attidentity <> '' FROM pg_attribute"
        " WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
        [f'"{table}"'])]


def test_columns_match_in_name_order_not_null_and_default(lite, pg):
    for table in pg_schema.TABLES:
        info = lite.execute(f'PRAGMA table_info("{table}")').fetchall()
        # A primary-key column is NOT NULL in PostgreSQL; SQLite's INTEGER PRIMARY KEY is
        # the rowid (never NULL), and its TEXT primary keys are NOT NULL by intent.
        expected = [(r[1], bool(r[3] or r[5]), r[4] is not None or (r[5] == 1 and r[2] ==
                    "INTEGER" and sum(x[5] > 0 for x in info) == 1)) for r in info]
        assert _pg_columns(pg, table) == expected, table
    for view in pg_schema.VIEWS:
        names = [r[1] for r in lite.execute(f"PRAGMA table_info({view})")]
        assert [c[0] for c in _pg_columns(pg, view)] == names, view


def _lite_keys(lite, table: str) -> set[tuple[str, ...]]:
    info = lite.execute(f'PRAGMA table_info("{table}")').fetchall()
    pk = tuple(r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))
    keys = {pk} if pk else set()
    for _, name, unique, origin, _ in lite.execute(f'PRAGMA index_list("{table}")'):
        if unique and origin in ("pk", "u"):
            keys.add(tuple(r[2] for r in lite.execute(f'PRAGMA index_info("{name}")')))
    return keys


def _lite_indexes(lite, table: str) -> dict[str, tuple]:
    return {name: (bool(unique), bool(partial), tuple(
                r[2] for r in lite.execute(f'PRAGMA index_info("{name}")')))
            for _, name, unique, origin, partial in lite.execute(
                f'PRAGMA index_list("{table}")') if origin == "c"}


_PG_INDEXES = """
SELECT c.relname, i.indisunique, i.indpred IS NOT NULL,
       ARRAY(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY k(n, o)
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n ORDER BY k.o),
       EXISTS (SELECT 1 FROM pg_constraint x WHERE x.conindid = i.indexrelid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = %s::regclass
"""


def test_keys_and_indexes_match(lite, pg):
    for table in pg_schema.TABLES:
        rows = pg.execute(_PG_INDEXES, [f'"{table}"']).fetchall()
        keys = {tuple(cols) for _, unique, _, cols, constraint in rows if constraint}
        assert keys == _lite_keys(lite, table), table
        named = {name: (unique, partial, tuple(cols))
                 for name, unique, partial, cols, constraint in rows if not constraint}
        assert named == _lite_indexes(lite, table), table


_DELETE_RULES = {"c": "CASCADE", "n": "SET NULL", "a": "NO ACTION"}


def test_foreign_keys_match(lite, pg):
    for table in pg_schema.TABLES:
        lite_fks: dict[int, list] = {}
        for r in lite.execute(f'PRAGMA foreign_key_list("{table}")'):
            lite_fks.setdefault(r[0], []).append(r)
        expected = {(rows[0][2], tuple(r[3] for r in rows), tuple(r[4] for r in rows),
                     rows[0][6]) for rows in lite_fks.values()}
        got = {(ref, tuple(src), tuple(dst), _DELETE_RULES[rule]) for ref, src, dst, rule in
               pg.execute(
                   "SELECT confrelid::regclass::text,"
                   " ARRAY(SELECT attname FROM unnest(conkey) WITH ORDINALITY k(n, o) JOIN"
                   " pg_attribute ON attrelid = conrelid AND attnum = k.n ORDER BY k.o),"
                   " ARRAY(SELECT attname FROM unnest(confkey) WITH ORDINALITY k(n, o) JOIN"
                   " pg_attribute ON attrelid = confrelid AND attnum = k.n ORDER BY k.o),"
                   " confdeltype FROM pg_constraint WHERE contype = 'f'"
                   " AND conrelid = %s::regclass", [f'"{table}"'])}
        assert got == expected, table


def test_change_triggers_are_on_every_fingerprinted_table(lite, pg):
    names = {r[0] for r in pg.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")}
    assert _names(lite, "trigger") <= names
    assert {f"data_changes_truncate_{t}" for t in pg_schema.TRIGGERED} <= names
    assert not {n for n in names if any(n.endswith(f"_{t}") for t in _OWN)}


def test_seed_rows_and_migrations(pg):
    assert pg.execute("SELECT id, n FROM data_changes").fetchall() == [(1, 0)]
    assert pg.execute("SELECT id, length(salt) FROM crowd_salt").fetchall() == [(1, 16)]
    names = [r[0] for r in pg.execute("SELECT name FROM _sqlite_migrations ORDER BY id")]
    assert names == list(pg_schema.MIGRATION_NAMES)


# Parent rows, then rows each engine must accept (True) or refuse (False) alike.
_SETUP = [
    "INSERT INTO studies (id, name, protocol, created_at) VALUES (1, 's', 'pair', 't')",
    "INSERT INTO raters (id, name, created_at) VALUES (1, 'r', 't')",
    "INSERT INTO models (id, study_id, name) VALUES (1, 1, 'm')",
    "INSERT INTO prompts (id, study_id, key, text) VALUES (1, 1, 'k', 'p')",
    "INSERT INTO images (id, study_id, prompt_id, model_id, sample, public_id)"
    " VALUES (1, 1, 1, 1, 0, 'a'), (2, 1, 1, 1, 1, 'b')",
    "INSERT INTO ratings (id, study_id, image_id, rater_id, criterion, value, revision,"
    " submission, action, created_at) VALUES (1, 1, 1, 1, 'c', 3, 1, 'sub', 'rate', 't')",
]
_CASES = [
    ("INSERT INTO studies (name, protocol, created_at) VALUES ('x', 'bogus', 't')", False),
    ("INSERT INTO studies (name, protocol, created_at) VALUES ('x', 'score', 't')", True),
    ("INSERT INTO pairs (study_id, prompt_id, image_a, image_b, created_at)"
     " VALUES (1, 1, 2, 1, 't')", False),
    ("INSERT INTO pairs (study_id, prompt_id, image_a, image_b, better, created_at)"
     " VALUES (1, 1, 1, 2, 1, 't')", True),
    ("INSERT INTO rating_checklists VALUES ('sub', 'c', 'r', 2, 3, '   ')", False),
    ("INSERT INTO rating_checklists VALUES ('sub', 'c', 'r', 2, 3, 'why')", True),
    ("INSERT INTO rating_checklists VALUES ('nosub', 'c', 'r', 2, 2, NULL)", False),
    ("INSERT INTO crowd_links (study_id, token_hash, platform, created_at, strict_ids)"
     " VALUES (1, 'h', 'none', 't', 2)", False),
    ("INSERT INTO data_changes (id, n) VALUES (2, 0)", False),
    ("INSERT INTO questionnaire_answers (study_id, rater_id, part, question, revision,"
     " submission, created_at) VALUES (1, 1, 'after', 'q', 0, 's', 't')", False),
    ("INSERT INTO gold_checks VALUES (1, 1, 'pair', 1, 1, 't')", True),
    ("INSERT INTO gold_checks VALUES (1, 1, 'pair', 2, 2, 't')", False),
    ("INSERT INTO onboarding (study_id, rater_id, ended) VALUES (1, 1, 'other')", False),
]


def _accepts(run, sql: str) -> bool:
    try:
        run(sql)
    except (sqlite3.IntegrityError, psycopg.errors.IntegrityError):
        return False
    return True


def test_checks_refuse_what_sqlite_refuses(pg):
    lite = open_db(":memory:").conn
    with pg.transaction(force_rollback=True):
        for sql in _SETUP:
            lite.execute(sql)
            pg.execute(sql)
        for sql, accepted in _CASES:
            assert _accepts(lite.execute, sql) is accepted, sql

            def in_savepoint(s: str) -> None:
                with pg.transaction():
                    pg.execute(s)
            assert _accepts(in_savepoint, sql) is accepted, sql


def test_counter_grows_by_the_rows_changed(pg):
    def n() -> int:
        return pg.execute("SELECT n FROM data_changes").fetchone()[0]

    with pg.transaction(force_rollback=True):
        pg.execute("INSERT INTO audit_log (at, actor, action) SELECT 't', 'a', 'x'"
                   " FROM generate_series(1, 5)")
        assert n() == 0  # inserts are counted by the row counts, not the counter
        pg.execute("UPDATE audit_log SET actor = 'b' WHERE id <= 3")
        assert n() == 3
        pg.execute("UPDATE audit_log SET actor = 'b' WHERE id > 100")
        assert n() == 3
        pg.execute("DELETE FROM audit_log WHERE id > 3")
        assert n() == 5
        pg.execute("INSERT INTO report_cache VALUES ('k', 'f', 't', '\\x00')")
        pg.execute("UPDATE report_cache SET fingerprint = 'g'")
        assert n() == 5  # the cache's own table is not counted
        pg.execute("TRUNCATE audit_log")
        assert n() == 6
        pg.execute("UPDATE data_changes SET n = 9223372036854775000")
        pg.execute("DELETE FROM marks")  # no row: no change
        pg.execute("UPDATE audit_log SET actor = 'c'")
        pg.execute("INSERT INTO audit_log (at, actor, action) VALUES ('t', 'a', 'x')")
        pg.execute("DELETE FROM audit_log")  # saturated: no overflow error
        assert n() == 9223372036854775000


# The helper functions answer as SQLite's built-ins do.
_SAME = [
    "SELECT group_concat(x), group_concat(x, '|') FROM (SELECT 1 AS x UNION ALL SELECT NULL"
    " UNION ALL SELECT 3) t",
    "SELECT group_concat(x) FROM (SELECT 1 AS x) t WHERE x > 1",
    "SELECT json_group_array(x), json_group_object('k' || x, 'v' || x) FROM (SELECT 1 AS x"
    " UNION ALL SELECT 2) t",
    "SELECT json_group_array(x) FROM (SELECT 1 AS x) t WHERE x > 1",
    "SELECT json_object('uid', substr('ab/cd', instr('ab/cd', '/') + 1)), instr('ab', 'z')",
    "SELECT printf('import-%d-v%012d', 7, 42), printf('%5d|%05d|%d%%', -3, -3, 4)",
    # the two-integer form the imports use, and formats it hands to the general printf
    "SELECT printf('import-%d-%012d', 7, 42), printf('import-%d-k%012d', 12, 3),"
    " printf('x%dy%d', 1, 2), printf('%05d-%d', 3, 4), printf('a%d-%012d', -1, 5),"
    " printf('a%d-%012d', 1, -5), printf('%d%%-%012d', 1, 2)",
    "SELECT julianday('2026-11-28T18:09:42.123456+00:00'), julianday('2026-11-28 18:09:42'),"
    " julianday('2026-11-28T20:09:42+02:00'), julianday('2026-11-28'), julianday('soon')",
    "SELECT max(1, 2), min(1, 2), max(1, NULL), ifnull(NULL, 'x')",
    "SELECT length(hex(randomblob(12))), length(randomblob(40))",
]


@pytest.mark.parametrize("sql", _SAME)
def test_helper_functions_answer_as_sqlite(pg, sql):
    lite = open_db(":memory:").conn
    assert pg.execute(sql).fetchall() == [tuple(r) for r in lite.execute(sql)]
