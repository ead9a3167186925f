"""Migrations of the later branches: import batches (m301), crowd (m701), checklists (m801),
adjudication (m901) and the report cache (m1001); pairs (m601) are in :mod:`.pairs`."""

from __future__ import annotations

from sqlite_utils import Database

from concord.store.migrations.script import run_script

# Migrations of the import branch are numbered from 301.
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


def m301_import_batches(db: Database) -> None:
    """Pending import batches: ratings imported in chunks stay invisible until published."""
    run_script(db, _IMPORT_BATCHES)


# Migrations of the crowd branch are numbered from 701 so they never clash with others.
_CROWD = """
CREATE TABLE crowd_links (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    platform TEXT NOT NULL CHECK (platform IN ('prolific', 'mturk', 'none')),
    completion_code TEXT,
    completion_url TEXT,
    screenout_code TEXT,
    screenout_url TEXT,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE INDEX crowd_links_study ON crowd_links(study_id);
CREATE TABLE crowd_participants (
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    platform TEXT NOT NULL,
    participant_id TEXT NOT NULL,
    rater_id INTEGER NOT NULL UNIQUE REFERENCES raters(id) ON DELETE CASCADE,
    link_id INTEGER REFERENCES crowd_links(id) ON DELETE SET NULL,
    params TEXT NOT NULL DEFAULT '{}',
    joined_at TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    PRIMARY KEY (study_id, platform, participant_id)
);
CREATE TABLE onboarding (
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    consented_at TEXT,
    practice_state TEXT NOT NULL DEFAULT 'pending'
        CHECK (practice_state IN ('pending', 'passed', 'failed')),
    practice_correct INTEGER,
    practice_total INTEGER,
    practice_done_at TEXT,
    completed_at TEXT,
    PRIMARY KEY (study_id, rater_id)
);
CREATE TABLE practice_answers (
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    image_id INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    opened_at TEXT NOT NULL,
    answered_at TEXT,
    submission TEXT UNIQUE,
    answer TEXT,
    correct INTEGER,
    seconds REAL,
    PRIMARY KEY (study_id, rater_id, image_id)
)
"""


def m701_crowd_studies(db: Database) -> None:
    """Crowd studies: study links for self sign-up (only the token's hash is stored; the
    platform and the completion / screen-out codes are the link's), one rater per
    (study, platform, participant id) with the platform's parameters, each rater's consent
    and practice (qualification) result, and the practice answers (kept apart from the
    ratings: practice is not data)."""
    run_script(db, _CROWD)


# Migrations of the checklist branch are numbered from 801 so they never clash with others.
_CHECKLISTS = """
CREATE TABLE rating_checklists (
    submission TEXT NOT NULL,
    criterion TEXT NOT NULL,
    rubric TEXT NOT NULL,
    derived REAL NOT NULL,
    final REAL NOT NULL,
    reason TEXT,
    PRIMARY KEY (submission, criterion),
    FOREIGN KEY (submission, criterion) REFERENCES ratings(submission, criterion)
        ON DELETE CASCADE,
    CHECK (final = derived OR (reason IS NOT NULL AND length(trim(reason)) > 0))
);
CREATE TABLE rating_ticks (
    submission TEXT NOT NULL,
    criterion TEXT NOT NULL,
    condition TEXT NOT NULL,
    ticked INTEGER NOT NULL CHECK (ticked IN (0, 1)),
    position INTEGER NOT NULL,
    PRIMARY KEY (submission, criterion, condition),
    FOREIGN KEY (submission, criterion) REFERENCES rating_checklists(submission, criterion)
        ON DELETE CASCADE
)
"""


def m801_rating_checklists(db: Database) -> None:
    """Rubric checklists: per rating submission and criterion, the value the rubric's
    rules derived from the ticks, the final value (also in ``ratings``) and the reason for
    an override; and every condition's tick (true or false), in the rubric's order."""
    run_script(db, _CHECKLISTS)


# Migrations of the adjudication branch are numbered from 901.
# An adjudicated value is a researcher's decision on an item the raters disagree on. It is
# kept apart from the ratings (which stay exactly as the raters gave them) and, like them,
# append-only: a change is a new row, the current value is the item's latest row, and a
# row without value clears it.
_ADJUDICATIONS = """
CREATE TABLE adjudications (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    unit TEXT NOT NULL CHECK (unit IN ('image', 'prompt', 'pair')),
    item_id INTEGER NOT NULL,
    criterion TEXT NOT NULL,
    value TEXT,
    note TEXT NOT NULL DEFAULT '',
    actor TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX adjudications_item ON adjudications(study_id, unit, item_id, criterion, id)
"""


def m901_adjudications(db: Database) -> None:
    """Adjudicated values of disagreed items (image scores, prompt rankings, pairs), apart
    from the raw labels; ``value`` is JSON (a score, a list of models best first, or a pair
    outcome), NULL when cleared (concord.store.adjudications)."""
    run_script(db, _ADJUDICATIONS)


# Migrations of the report-cache branch are numbered from 1001.
# Frozen DDL: the counter, the cache, and an UPDATE and a DELETE trigger on each table there
# was when this migration shipped (every table of m001-m901 and sqlite-utils' migrations
# table; a later migration writes out the triggers of the tables it adds, as m1201 does).
_REPORT_CACHE = """
CREATE TABLE data_changes (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n INTEGER NOT NULL
);
INSERT INTO data_changes (id, n) VALUES (1, 0);
CREATE TABLE report_cache (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    created_at TEXT NOT NULL,
    body BLOB NOT NULL
)
"""
_TRIGGERED = (
    "_sqlite_migrations", "adjudications", "assignments", "audit_log", "crowd_links",
    "crowd_participants", "drafts", "gold", "images", "import_batch_items", "import_batches",
    "marks", "metric_scores", "models", "onboarding", "pair_judgments", "pairs",
    "practice_answers", "prompts", "questions", "ranking_items", "rankings",
    "rater_exclusions", "raters", "rating_checklists", "rating_ticks", "ratings", "runs",
    "score_imports", "score_staging", "studies", "study_raters",
)


def m1001_report_cache(db: Database) -> None:
    """Computed reports kept while the data is unchanged: ``report_cache``, the change
    counter ``data_changes`` and an UPDATE and a DELETE trigger on every table that raise it
    (concord.store.report_cache)."""
    run_script(db, _REPORT_CACHE)
    for table in _TRIGGERED:
        for op in ("UPDATE", "DELETE"):
            db.execute(f'CREATE TRIGGER "data_changes_{op.lower()}_{table}" AFTER {op} ON '
                       f'"{table}" BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END')
