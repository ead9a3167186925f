"""Migrations of the crowd-integrity branch, numbered from 1201 so they never clash.

A crowd study must pay for work and nothing else, and one person must not act as another:
every visit through a study link is logged (``crowd_joins``: the outcome, a keyed hash of
the client address), every platform session is kept (``crowd_sessions``: a participant's
STUDY_ID / SESSION_ID are never overwritten), a link may relax the platform's participant
id format (``crowd_links.strict_ids``; links made before accepted any id and keep doing
so, so no participant who joined through them is locked out), the first answer to each
attention check is kept (``gold_checks``: an undo cannot change it), and a rater whose
session was ended by too many skips or failed checks says so (``onboarding.ended``).
"""

from __future__ import annotations

from sqlite_utils import Database

from concord.store.migrations.script import run_script

_INTEGRITY = """
ALTER TABLE crowd_links ADD COLUMN strict_ids INTEGER NOT NULL DEFAULT 1
    CHECK (strict_ids IN (0, 1));
UPDATE crowd_links SET strict_ids = 0;
ALTER TABLE onboarding ADD COLUMN ended TEXT CHECK (ended IN ('skips', 'checks'));
ALTER TABLE onboarding ADD COLUMN ended_at TEXT;
CREATE TABLE crowd_sessions (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    link_id INTEGER REFERENCES crowd_links(id) ON DELETE SET NULL,
    params TEXT NOT NULL DEFAULT '{}',
    client TEXT,
    started_at TEXT NOT NULL
);
CREATE INDEX crowd_sessions_rater ON crowd_sessions(rater_id, id);
INSERT INTO crowd_sessions (study_id, rater_id, link_id, params, started_at)
    SELECT study_id, rater_id, link_id, params, joined_at FROM crowd_participants;
CREATE TABLE crowd_joins (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    link_id INTEGER REFERENCES crowd_links(id) ON DELETE SET NULL,
    participant_id TEXT,
    client TEXT,
    outcome TEXT NOT NULL
        CHECK (outcome IN ('joined', 'resumed', 'refused', 'full', 'busy', 'invalid')),
    at TEXT NOT NULL
);
CREATE INDEX crowd_joins_study ON crowd_joins(study_id, outcome, at);
CREATE TABLE crowd_salt (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    salt BLOB NOT NULL
);
INSERT INTO crowd_salt (id, salt) VALUES (1, randomblob(16));
CREATE TABLE gold_checks (
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    unit TEXT NOT NULL CHECK (unit IN ('image', 'prompt', 'pair')),
    item_id INTEGER NOT NULL,
    passed INTEGER NOT NULL CHECK (passed IN (0, 1)),
    checked_at TEXT NOT NULL,
    PRIMARY KEY (study_id, rater_id, unit, item_id)
)
"""


def m1201_crowd_integrity(db: Database) -> None:
    """Join log, platform sessions, id format per link, first answers to attention checks
    and ended sessions (see the module doc); the report cache's change triggers of the new
    tables (concord.store.report_cache)."""
    from concord.store import report_cache

    run_script(db, _INTEGRITY)
    report_cache.install_change_triggers(db)
