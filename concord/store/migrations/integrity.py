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

# Frozen DDL (no live module code): the tables, then the report cache's UPDATE and DELETE
# triggers of the four new tables.
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
);
CREATE TRIGGER "data_changes_update_crowd_joins" AFTER UPDATE ON "crowd_joins"
BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER "data_changes_delete_crowd_joins" AFTER DELETE ON "crowd_joins"
BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER "data_changes_update_crowd_salt" AFTER UPDATE ON "crowd_salt"
BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER "data_changes_delete_crowd_salt" AFTER DELETE ON "crowd_salt"
BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER "data_changes_update_crowd_sessions" AFTER UPDATE ON "crowd_sessions"
BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER "data_changes_delete_crowd_sessions" AFTER DELETE ON "crowd_sessions"
BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER "data_changes_update_gold_checks" AFTER UPDATE ON "gold_checks"
BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER "data_changes_delete_gold_checks" AFTER DELETE ON "gold_checks"
BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END
"""


def m1201_crowd_integrity(db: Database) -> None:
    """Join log, platform sessions, id format per link, first answers to attention checks
    and ended sessions (see the module doc); the report cache's change triggers of the new
    tables (concord.store.report_cache), written out in the DDL."""
    run_script(db, _INTEGRITY)
