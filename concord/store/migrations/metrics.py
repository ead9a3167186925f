"""Migrations of the metrics branch (m101-m103): run tracking, score staging, names."""

from __future__ import annotations

from sqlite_utils import Database

from concord.store.migrations.script import run_script

# Migrations of the metrics branch are numbered from 101 so they never clash with others.
_RUN_TRACKING = """
ALTER TABLE runs ADD COLUMN status TEXT NOT NULL DEFAULT 'done'
    CHECK (status IN ('running', 'done', 'failed', 'cancelled', 'stale'));
ALTER TABLE runs ADD COLUMN pid INTEGER;
ALTER TABLE runs ADD COLUMN host TEXT;
ALTER TABLE runs ADD COLUMN heartbeat_at TEXT;
ALTER TABLE runs ADD COLUMN n_total INTEGER;
ALTER TABLE runs ADD COLUMN options_key TEXT;
ALTER TABLE runs ADD COLUMN shard TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN error TEXT;
ALTER TABLE runs ADD COLUMN log_path TEXT;
UPDATE runs SET status = 'stale' WHERE finished_at IS NULL;
CREATE INDEX runs_by_target ON runs(study_id, metric, judge, status);
ALTER TABLE metric_scores ADD COLUMN options_key TEXT
"""


def m101_run_tracking(db: Database) -> None:
    """Scoring runs that can be watched and trusted: status, pid and host, heartbeat,
    progress (``n_total``), the hash of the score-changing options (also on every score,
    so a rerun with other options rescores), the shard, the error and the log file.
    Runs that never finished become 'stale'."""
    run_script(db, _RUN_TRACKING)


_SCORE_STAGING = """
CREATE TABLE score_imports (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    source TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('staging', 'publishing')),
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    n_rows INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE TABLE score_staging (
    id INTEGER PRIMARY KEY,
    import_id INTEGER NOT NULL REFERENCES score_imports(id) ON DELETE CASCADE,
    image_id INTEGER NOT NULL,
    metric TEXT NOT NULL,
    judge TEXT NOT NULL,
    question_id TEXT NOT NULL,
    value REAL,
    details TEXT NOT NULL,
    run_id TEXT,
    error TEXT,
    options_key TEXT
);
CREATE INDEX score_staging_import ON score_staging(import_id, id)
"""


def m102_score_staging(db: Database) -> None:
    """Imported scores are staged in bounded chunks, then published chunk by chunk, so a
    long import never holds the write lock for long and a killed one is finished or
    discarded by the next (see concord.store.imports.score_staging)."""
    run_script(db, _SCORE_STAGING)


_TIFA_RENAME = """
UPDATE metric_scores SET metric = 'geneval2-tifa'
    WHERE metric = 'tifa' AND run_id IN (SELECT id FROM runs WHERE metric = 'tifa');
UPDATE runs SET metric = 'geneval2-tifa' WHERE metric = 'tifa'
"""


def m103_geneval2_tifa_name(db: Database) -> None:
    """The evaluator that was called ``tifa`` is GenEval 2's binary TIFA: its runs and the
    scores they wrote are renamed ``geneval2-tifa``. Imported ``tifa`` scores (no run) keep
    their name: they may come from the TIFA benchmark's own protocol."""
    run_script(db, _TIFA_RENAME)

