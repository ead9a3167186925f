"""The first release's schema (m001): every table, index and view it created."""

from __future__ import annotations

from sqlite_utils import Database

from concord.store.migrations.script import run_script

_SCHEMA_1 = """
CREATE TABLE studies (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    protocol TEXT NOT NULL CHECK (protocol IN ('score', 'rank', 'both')),
    rubric TEXT,
    root TEXT,
    settings TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
);
CREATE TABLE models (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    meta TEXT NOT NULL DEFAULT '{}',
    UNIQUE (study_id, name)
);
CREATE TABLE prompts (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    text TEXT NOT NULL,
    benchmark TEXT,
    dimension TEXT,
    skills TEXT,
    atom_count INTEGER,
    paraphrase_group TEXT,
    variant TEXT,
    source_image TEXT,
    instruction TEXT,
    meta TEXT NOT NULL DEFAULT '{}',
    position INTEGER NOT NULL DEFAULT 0,
    rank_set INTEGER NOT NULL DEFAULT 1,
    UNIQUE (study_id, key)
);
CREATE TABLE questions (
    id INTEGER PRIMARY KEY,
    prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
    qkey TEXT NOT NULL,
    text TEXT NOT NULL,
    answer TEXT,
    skill TEXT,
    position INTEGER NOT NULL,
    UNIQUE (prompt_id, qkey)
);
CREATE TABLE images (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
    model_id INTEGER NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    sample INTEGER NOT NULL DEFAULT 0,
    path TEXT,
    sha256 TEXT,
    bytes INTEGER,
    width INTEGER,
    height INTEGER,
    public_id TEXT NOT NULL UNIQUE,
    UNIQUE (prompt_id, model_id, sample)
);
CREATE INDEX images_study ON images(study_id);
CREATE TABLE raters (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL DEFAULT 'rater' CHECK (role IN ('rater', 'researcher')),
    token_hash TEXT UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE TABLE study_raters (
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    added_at TEXT NOT NULL,
    PRIMARY KEY (study_id, rater_id)
);
CREATE TABLE assignments (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    unit TEXT NOT NULL CHECK (unit IN ('image', 'prompt')),
    item_id INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('open', 'done', 'skipped')),
    opened_at TEXT NOT NULL,
    done_at TEXT,
    UNIQUE (study_id, rater_id, unit, item_id)
);
CREATE INDEX assignments_item ON assignments(study_id, unit, item_id);
CREATE TABLE ratings (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    image_id INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    criterion TEXT NOT NULL,
    value REAL,
    revision INTEGER NOT NULL,
    submission TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('rate', 'edit', 'undo', 'import')),
    seconds REAL,
    created_at TEXT NOT NULL,
    UNIQUE (image_id, rater_id, criterion, revision),
    UNIQUE (submission, criterion)
);
CREATE INDEX ratings_study ON ratings(study_id);
CREATE TABLE rankings (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    criterion TEXT NOT NULL,
    revision INTEGER NOT NULL,
    submission TEXT NOT NULL UNIQUE,
    action TEXT NOT NULL CHECK (action IN ('rank', 'edit', 'undo', 'import')),
    retracted INTEGER NOT NULL DEFAULT 0,
    display_order TEXT NOT NULL DEFAULT '[]',
    seconds REAL,
    created_at TEXT NOT NULL,
    UNIQUE (prompt_id, rater_id, criterion, revision)
);
CREATE INDEX rankings_study ON rankings(study_id);
CREATE TABLE ranking_items (
    ranking_id INTEGER NOT NULL REFERENCES rankings(id) ON DELETE CASCADE,
    image_id INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    rank REAL NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (ranking_id, image_id)
);
CREATE TABLE marks (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    unit TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('skip', 'flag')),
    note TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE TABLE gold (
    image_id INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    criterion TEXT NOT NULL,
    expected REAL NOT NULL,
    tolerance REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (image_id, criterion)
);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    metric TEXT NOT NULL,
    judge TEXT NOT NULL DEFAULT '',
    params TEXT NOT NULL DEFAULT '{}',
    started_at TEXT NOT NULL,
    finished_at TEXT,
    n_scored INTEGER NOT NULL DEFAULT 0,
    n_errors INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE metric_scores (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    image_id INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    metric TEXT NOT NULL,
    judge TEXT NOT NULL DEFAULT '',
    question_id TEXT NOT NULL DEFAULT '',
    value REAL,
    details TEXT NOT NULL DEFAULT '{}',
    run_id TEXT,
    error TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (image_id, metric, judge, question_id)
);
CREATE INDEX metric_scores_study ON metric_scores(study_id, metric);
CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    study TEXT,
    detail TEXT NOT NULL DEFAULT '{}'
);
CREATE VIEW current_ratings AS
SELECT r.* FROM ratings r
JOIN (
    SELECT image_id, rater_id, criterion, MAX(revision) AS revision
    FROM ratings GROUP BY image_id, rater_id, criterion
) last USING (image_id, rater_id, criterion, revision)
WHERE r.value IS NOT NULL;
CREATE VIEW current_rankings AS
SELECT k.* FROM rankings k
JOIN (
    SELECT prompt_id, rater_id, criterion, MAX(revision) AS revision
    FROM rankings GROUP BY prompt_id, rater_id, criterion
) last USING (prompt_id, rater_id, criterion, revision)
WHERE k.retracted = 0;
"""


def m001_initial(db: Database) -> None:
    """Create every table of the first release."""
    run_script(db, _SCHEMA_1)

