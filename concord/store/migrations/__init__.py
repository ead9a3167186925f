"""Schema of the Concord database, one migration per change.

Never edit a migration that has shipped; add a new one. Ratings and rankings are
append-only: a change is a new revision, and the current value is a view.

The migrations live in this package's modules (:mod:`.initial`, :mod:`.core`,
:mod:`.metrics`, :mod:`.pairs`, :mod:`.branches`, :mod:`.hardening`, :mod:`.integrity`,
:mod:`.labels`, :mod:`.sessions`); ``migrations`` below registers them in the order they
are applied. Databases record the names of the migrations applied to them, so a shipped
migration is never renamed, reordered or edited: a new one goes at the end of
``_STEPS``. Each migration holds its own DDL (a new table's report-cache triggers
included, see m1302) and calls no other module of Concord but ``script.run_script``:
editing a module must never edit what a shipped migration does.
``tests/test_schema_frozen.py`` checks every migration against what it did when it
shipped (``tests/data/schema-steps.json``).

PostgreSQL databases are made from ``concord/store/pg_schema.sql`` (the schema these
migrations produced up to ``pg_schema.BASE``); a new migration also gives PostgreSQL's DDL
in ``pg_schema.UPGRADES`` under its name (tests/test_pg_engine.py and
tests/test_pg_schema.py fail until it does and the two schemas agree).
"""

from __future__ import annotations

from sqlite_utils import Migrations

from concord.store.migrations import (
    branches,
    core,
    hardening,
    initial,
    integrity,
    labels,
    metrics,
    pairs,
    sessions,
)

migrations = Migrations("concord")

# Application order (branch migrations are numbered by branch, so the names are not sorted).
_STEPS = (
    initial.m001_initial,
    core.m002_current_views_by_lookup,
    core.m003_coverage_index,
    core.m004_gold_units,
    core.m005_leases_and_drafts,
    core.m201_rater_exclusions,
    metrics.m101_run_tracking,
    metrics.m102_score_staging,
    metrics.m103_geneval2_tifa_name,
    pairs.m601_pairs,
    branches.m301_import_batches,
    branches.m701_crowd_studies,
    branches.m801_rating_checklists,
    branches.m901_adjudications,
    branches.m1001_report_cache,
    hardening.m1101_signin_failures,
    integrity.m1201_crowd_integrity,
    labels.m1301_imported_labels,
    labels.m1302_comments,
    sessions.m1401_research_sessions,
    sessions.m1402_questionnaire_answers,
)
# m601 rebuilds tables with foreign keys off, which SQLite ignores inside a transaction.
_OUTSIDE_TRANSACTION = frozenset({pairs.m601_pairs})

for _step in _STEPS:
    migrations(transactional=_step not in _OUTSIDE_TRANSACTION)(_step)

__all__ = ["migrations"]
