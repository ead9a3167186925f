"""Schema of the Concord database, one migration per change.

Never edit a migration that has shipped; add a new one. Ratings and rankings are
append-only: a change is a new revision, and the current value is a view.
"""

from __future__ import annotations

from sqlite_utils import Database, Migrations

migrations = Migrations("concord")

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


# The current revision is "no later revision exists": SQLite answers that with one lookup
# in the (image, rater, criterion, revision) index per row and can use a study_id filter,
# where the GROUP BY of the first views materialised every revision of every study.
_VIEWS_2 = """
DROP VIEW current_ratings;
DROP VIEW current_rankings;
CREATE VIEW current_ratings AS
SELECT r.* FROM ratings r
WHERE r.value IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM ratings x WHERE x.image_id = r.image_id AND x.rater_id = r.rater_id
    AND x.criterion = r.criterion AND x.revision > r.revision
);
CREATE VIEW current_rankings AS
SELECT k.* FROM rankings k
WHERE k.retracted = 0 AND NOT EXISTS (
    SELECT 1 FROM rankings x WHERE x.prompt_id = k.prompt_id AND x.rater_id = k.rater_id
    AND x.criterion = k.criterion AND x.revision > k.revision
);
"""


@migrations()
def m001_initial(db: Database) -> None:
    """Create every table of the first release."""
    _run_script(db, _SCHEMA_1)


@migrations()
def m002_current_views_by_lookup(db: Database) -> None:
    """Faster current_ratings / current_rankings views (same rows)."""
    _run_script(db, _VIEWS_2)


@migrations()
def m003_coverage_index(db: Database) -> None:
    """Covering index for per-item coverage (who has which item open or done).

    Choosing a rater's next item counts assignments per item; with this index SQLite
    reads the counts from the index in item order instead of scanning and sorting rows.
    """
    db.execute("CREATE INDEX assignments_coverage ON assignments(study_id, unit, item_id,"
               " status)")


_GOLD_UNITS = """
CREATE TABLE gold_new (
    image_id INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    unit TEXT NOT NULL DEFAULT 'image' CHECK (unit IN ('image', 'prompt')),
    criterion TEXT NOT NULL,
    expected REAL NOT NULL,
    tolerance REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (image_id, unit, criterion)
);
INSERT INTO gold_new (image_id, unit, criterion, expected, tolerance)
    SELECT image_id, 'image', criterion, expected, tolerance FROM gold;
DROP TABLE gold;
ALTER TABLE gold_new RENAME TO gold
"""


@migrations()
def m004_gold_units(db: Database) -> None:
    """Gold for rankings too: ``unit`` 'image' (an expected score of one image) or 'prompt'
    (the image of a ranking set that must get rank ``expected`` ± ``tolerance``)."""
    _run_script(db, _GOLD_UNITS)


def _run_script(db: Database, script: str) -> None:
    # sqlite3's executescript() commits first, which would break the
    # transaction the migration runs in; run statement by statement instead.
    for statement in script.split(";\n"):
        if statement.strip():
            db.execute(statement)


# Large ratings imports are written in short transactions as *pending* rows (``batch`` set to
# a pending import batch) that no reader sees; one quick publish step flips the batch.
# Readers therefore skip rows of pending batches; a new study created by a pending batch is
# hidden by name lookups too (concord/store/studies.py).
_IMPORT_BATCHES = """
CREATE TABLE import_batches (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    state TEXT NOT NULL CHECK (state IN ('pending', 'published')),
    new_study INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL DEFAULT '',
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started_at TEXT NOT NULL,
    heartbeat TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX import_batches_pending ON import_batches(state, study_id);
CREATE TABLE import_batch_items (
    batch_id INTEGER NOT NULL REFERENCES import_batches(id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('model', 'prompt', 'image', 'rater')),
    item_id INTEGER NOT NULL
);
CREATE INDEX import_batch_items_batch ON import_batch_items(batch_id, kind);
ALTER TABLE ratings ADD COLUMN batch INTEGER;
CREATE INDEX ratings_batch ON ratings(batch) WHERE batch IS NOT NULL;
DROP VIEW current_ratings;
CREATE VIEW current_ratings AS
SELECT r.* FROM ratings r
WHERE r.value IS NOT NULL
AND (r.batch IS NULL OR r.batch NOT IN (SELECT id FROM import_batches WHERE state = 'pending'))
AND NOT EXISTS (
    SELECT 1 FROM ratings x WHERE x.image_id = r.image_id AND x.rater_id = r.rater_id
    AND x.criterion = r.criterion AND x.revision > r.revision
    AND (x.batch IS NULL
         OR x.batch NOT IN (SELECT id FROM import_batches WHERE state = 'pending'))
)
"""


@migrations()
def m301_import_batches(db: Database) -> None:
    """Pending import batches: ratings imported in chunks stay invisible until published."""
    _run_script(db, _IMPORT_BATCHES)
