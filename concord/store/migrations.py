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


_LEASES = """
CREATE TABLE assignments_new (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    unit TEXT NOT NULL CHECK (unit IN ('image', 'prompt')),
    item_id INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('open', 'done', 'skipped', 'released')),
    opened_at TEXT NOT NULL,
    done_at TEXT,
    UNIQUE (study_id, rater_id, unit, item_id)
);
INSERT INTO assignments_new SELECT id, study_id, rater_id, unit, item_id, status, opened_at,
    done_at FROM assignments;
DROP TABLE assignments;
ALTER TABLE assignments_new RENAME TO assignments;
CREATE INDEX assignments_item ON assignments(study_id, unit, item_id);
CREATE INDEX assignments_coverage ON assignments(study_id, unit, item_id, status, opened_at);
CREATE TABLE drafts (
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    unit TEXT NOT NULL CHECK (unit IN ('image', 'prompt')),
    item_id INTEGER NOT NULL,
    data TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (study_id, rater_id, unit, item_id)
)
"""


@migrations()
def m005_leases_and_drafts(db: Database) -> None:
    """Assignments are leases: an open assignment older than the study's lease stops
    counting toward k, and a lease that was given away is ``released``. ``drafts`` keeps a
    ranking in progress across reloads."""
    _run_script(db, _LEASES)


def _run_script(db: Database, script: str) -> None:
    # sqlite3's executescript() commits first, which would break the
    # transaction the migration runs in; run statement by statement instead.
    for statement in script.split(";\n"):
        if statement.strip():
            db.execute(statement)


_RATER_EXCLUSIONS = """
CREATE TABLE rater_exclusions (
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    reason TEXT NOT NULL,
    actor TEXT NOT NULL,
    excluded_at TEXT NOT NULL,
    PRIMARY KEY (study_id, rater_id)
)
"""


@migrations()
def m201_rater_exclusions(db: Database) -> None:
    """Raters a researcher left out of a study's statistics and exports (reversible: the
    row is deleted on re-inclusion; both actions are in the audit log)."""
    _run_script(db, _RATER_EXCLUSIONS)


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


@migrations()
def m101_run_tracking(db: Database) -> None:
    """Scoring runs that can be watched and trusted: status, pid and host, heartbeat,
    progress (``n_total``), the hash of the score-changing options (also on every score,
    so a rerun with other options rescores), the shard, the error and the log file.
    Runs that never finished become 'stale'."""
    _run_script(db, _RUN_TRACKING)


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


@migrations()
def m102_score_staging(db: Database) -> None:
    """Imported scores are staged in bounded chunks, then published chunk by chunk, so a
    long import never holds the write lock for long and a killed one is finished or
    discarded by the next (see concord.store.score_staging)."""
    _run_script(db, _SCORE_STAGING)


_TIFA_RENAME = """
UPDATE metric_scores SET metric = 'geneval2-tifa'
    WHERE metric = 'tifa' AND run_id IN (SELECT id FROM runs WHERE metric = 'tifa');
UPDATE runs SET metric = 'geneval2-tifa' WHERE metric = 'tifa'
"""


@migrations()
def m103_geneval2_tifa_name(db: Database) -> None:
    """The evaluator that was called ``tifa`` is GenEval 2's binary TIFA: its runs and the
    scores they wrote are renamed ``geneval2-tifa``. Imported ``tifa`` scores (no run) keep
    their name: they may come from the TIFA benchmark's own protocol."""
    _run_script(db, _TIFA_RENAME)



# Migrations of the pairwise A/B branch are numbered from 601.
@migrations(transactional=False)
def m601_pairs(db: Database) -> None:
    """The pairwise A/B protocol: protocol ``pair`` and unit ``pair`` (both tables rebuilt
    with foreign keys off), scheduled ``pairs`` (gold: ``better``) and append-only
    ``pair_judgments`` with the left/right placement shown (concord.store.schema_pairs)."""
    from concord.store.schema_pairs import apply_pairs

    apply_pairs(db, _run_script)


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


@migrations()
def m301_import_batches(db: Database) -> None:
    """Pending import batches: ratings imported in chunks stay invisible until published."""
    _run_script(db, _IMPORT_BATCHES)


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


@migrations()
def m701_crowd_studies(db: Database) -> None:
    """Crowd studies: study links for self sign-up (only the token's hash is stored; the
    platform and the completion / screen-out codes are the link's), one rater per
    (study, platform, participant id) with the platform's parameters, each rater's consent
    and practice (qualification) result, and the practice answers (kept apart from the
    ratings: practice is not data)."""
    _run_script(db, _CROWD)


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


@migrations()
def m801_rating_checklists(db: Database) -> None:
    """Rubric checklists: per rating submission and criterion, the value the rubric's
    rules derived from the ticks, the final value (also in ``ratings``) and the reason for
    an override; and every condition's tick (true or false), in the rubric's order."""
    _run_script(db, _CHECKLISTS)


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


@migrations()
def m901_adjudications(db: Database) -> None:
    """Adjudicated values of disagreed items (image scores, prompt rankings, pairs), apart
    from the raw labels; ``value`` is JSON (a score, a list of models best first, or a pair
    outcome), NULL when cleared (concord.store.adjudications)."""
    _run_script(db, _ADJUDICATIONS)
