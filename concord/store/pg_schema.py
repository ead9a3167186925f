"""Concord's schema for PostgreSQL: the schema the SQLite migrations produce today, made at
once (a PostgreSQL database is created at the current schema, never upgraded).

``DDL`` creates, in one transaction, the SQLite helper functions the store's queries use
(``group_concat``, ``julianday``, ``printf``, ...), every table, index and view of the
SQLite schema with the same names and columns (``pg_schema.sql``, which documents the type
mapping), the change counter's trigger function and, on every table the report cache
fingerprints, its ``data_changes_update_<table>`` / ``data_changes_delete_<table>``
triggers (plus ``data_changes_truncate_<table>``). Run it as one script
(``cursor.execute(DDL)`` without parameters): function bodies hold semicolons.

After it, the engine records the migrations the schema stands for: one
``_sqlite_migrations`` row per name of :data:`MIGRATION_NAMES`, in order, with
``migration_set`` :data:`MIGRATION_SET` (:data:`RECORD_MIGRATION` with
:func:`migration_rows`), so the guard that compares applied and known migrations reads
the same answer from both engines.
"""

from __future__ import annotations

import datetime as dt
import re
from importlib.resources import files

from concord.store.migrations import _STEPS, migrations
from concord.store.report_cache import _OPS, _OWN, _trigger_name

MIGRATION_SET = migrations.name
# The migrations the schema stands for, in the order SQLite applies them.
MIGRATION_NAMES: tuple[str, ...] = tuple(step.__name__ for step in _STEPS)
# The migrations pg_schema.sql stood for when it was written (frozen, as migrations are). A
# migration added after them brings PostgreSQL's own DDL in UPGRADES under its name: a new
# database runs pg_schema.sql then every upgrade in order, an older one (concord.store.
# pg_open) the upgrades it lacks. tests/test_pg_schema.py fails until a new migration has
# its entry, so no PostgreSQL database is left behind by a release.
BASE: tuple[str, ...] = (
    "m001_initial", "m002_current_views_by_lookup", "m003_coverage_index", "m004_gold_units",
    "m005_leases_and_drafts", "m201_rater_exclusions", "m101_run_tracking",
    "m102_score_staging", "m103_geneval2_tifa_name", "m601_pairs", "m301_import_batches",
    "m701_crowd_studies", "m801_rating_checklists", "m901_adjudications",
    "m1001_report_cache", "m1101_signin_failures", "m1201_crowd_integrity",
    "m1301_imported_labels", "m1302_comments", "m1401_research_sessions",
    "m1402_questionnaire_answers",
)
UPGRADES: dict[str, str] = {}
RECORD_MIGRATION = ('INSERT INTO "_sqlite_migrations" (migration_set, name, applied_at)'
                    " VALUES (%s, %s, %s)")

_TABLES_SQL = files("concord.store").joinpath("pg_schema.sql").read_text(encoding="utf-8")
# Every table the SQL file creates, in its order (names bare or double-quoted).
TABLES: tuple[str, ...] = tuple(
    re.findall(r'^CREATE TABLE "?(\w+)"? \(', _TABLES_SQL, flags=re.MULTILINE))
VIEWS: tuple[str, ...] = tuple(
    re.findall(r"^CREATE VIEW (\w+) AS", _TABLES_SQL, flags=re.MULTILINE))
# The tables whose changes the counter counts: all but the report cache's own.
TRIGGERED: tuple[str, ...] = tuple(t for t in TABLES if t not in _OWN)


def triggers_sql(table: str) -> str:
    """The change-counter triggers of ``table``: the UPDATE and DELETE ones under the names
    SQLite gives them (report_cache checks them by name), and one on TRUNCATE."""
    rows = [f'CREATE TRIGGER "{_trigger_name(table, op)}" AFTER {op} ON "{table}"\n'
            "    REFERENCING OLD TABLE AS changed_rows\n"
            "    FOR EACH STATEMENT EXECUTE FUNCTION concord_data_changed();"
            for op in _OPS]
    rows.append(f'CREATE TRIGGER "data_changes_truncate_{table}" AFTER TRUNCATE ON "{table}"'
                "\n    FOR EACH STATEMENT EXECUTE FUNCTION concord_data_changed();")
    return "\n".join(rows)


DDL: str = _TABLES_SQL + "\n" + "\n".join(triggers_sql(t) for t in TRIGGERED) + "\n"


def migration_rows(applied_at: str | None = None) -> list[tuple[str, str, str]]:
    """The ``_sqlite_migrations`` rows of a new database, for :data:`RECORD_MIGRATION`:
    (migration set, name, applied at) per migration, the time written as sqlite-utils
    writes it (``str`` of an aware UTC datetime)."""
    at = applied_at or str(dt.datetime.now(dt.UTC))
    return [(MIGRATION_SET, name, at) for name in MIGRATION_NAMES]


def upgrades_after(applied: int) -> list[tuple[str, str]]:
    """(name, DDL) of the migrations after the first ``applied`` ones (all of them past
    :data:`BASE`), in order."""
    return [(name, UPGRADES[name]) for name in MIGRATION_NAMES[max(applied, len(BASE)):]]
