"""Migrations of the imported-labels branch (numbered from 1301): pair judgments and
rankings collected elsewhere are written as pending rows of an import batch, like ratings
(m301), and stay invisible until the batch is published (m1301); a rater's free-text
comment on an item is kept with the revision it came with (m1302)."""

from __future__ import annotations

from sqlite_utils import Database

from concord.store.migrations.script import run_script

# Frozen DDL: this migration never reads live module code, so editing a module later
# cannot change what it did. ``pairs.batch`` marks pairs a batch created (in studies
# without image files only: they are never served to raters); the current views skip
# rows of pending batches, as current_ratings does.
_IMPORTED_LABELS = """
ALTER TABLE rankings ADD COLUMN batch INTEGER;
CREATE INDEX rankings_batch ON rankings(batch) WHERE batch IS NOT NULL;
ALTER TABLE pair_judgments ADD COLUMN batch INTEGER;
CREATE INDEX pair_judgments_batch ON pair_judgments(batch) WHERE batch IS NOT NULL;
ALTER TABLE pairs ADD COLUMN batch INTEGER;
CREATE INDEX pairs_batch ON pairs(batch) WHERE batch IS NOT NULL;
DROP VIEW current_rankings;
CREATE VIEW current_rankings AS
SELECT k.* FROM rankings k
WHERE k.retracted = 0
AND (k.batch IS NULL OR k.batch NOT IN (SELECT id FROM import_batches WHERE state = 'pending'))
AND NOT EXISTS (
    SELECT 1 FROM rankings x WHERE x.prompt_id = k.prompt_id AND x.rater_id = k.rater_id
    AND x.criterion = k.criterion AND x.revision > k.revision
    AND (x.batch IS NULL
         OR x.batch NOT IN (SELECT id FROM import_batches WHERE state = 'pending'))
);
DROP VIEW current_pair_judgments;
CREATE VIEW current_pair_judgments AS
SELECT j.* FROM pair_judgments j
WHERE j.outcome IS NOT NULL
AND (j.batch IS NULL OR j.batch NOT IN (SELECT id FROM import_batches WHERE state = 'pending'))
AND NOT EXISTS (
    SELECT 1 FROM pair_judgments x WHERE x.pair_id = j.pair_id AND x.rater_id = j.rater_id
    AND x.criterion = j.criterion AND x.revision > j.revision
    AND (x.batch IS NULL
         OR x.batch NOT IN (SELECT id FROM import_batches WHERE state = 'pending'))
)
"""


def m1301_imported_labels(db: Database) -> None:
    """Rankings, pair judgments and pairs gain ``batch`` (pending import rows are
    invisible); ``current_rankings`` and ``current_pair_judgments`` skip pending rows."""
    run_script(db, _IMPORTED_LABELS)


# One comment per submission (the rating, ranking or pair judgment revision it came with),
# so an edit's comment is a new row and the history keeps the old one; ``batch`` as for
# the labels (an import's comments are invisible until it is published). The report
# cache's change triggers are written out here, as m1001 makes them for every table.
_COMMENTS = """
CREATE TABLE comments (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    unit TEXT NOT NULL CHECK (unit IN ('image', 'prompt', 'pair')),
    item_id INTEGER NOT NULL,
    submission TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL,
    batch INTEGER
);
CREATE INDEX comments_item ON comments(study_id, unit, item_id, rater_id);
CREATE TRIGGER "data_changes_update_comments" AFTER UPDATE ON "comments"
BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER "data_changes_delete_comments" AFTER DELETE ON "comments"
BEGIN UPDATE data_changes SET n = n + 1 WHERE id = 1; END
"""


def m1302_comments(db: Database) -> None:
    """Free-text comments of raters, one per label revision (``comments``)."""
    run_script(db, _COMMENTS)
