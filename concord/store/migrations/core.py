"""Migrations of the core after the first release: m002-m005 and m201."""

from __future__ import annotations

from sqlite_utils import Database

from concord.store.migrations.script import run_script

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


def m002_current_views_by_lookup(db: Database) -> None:
    """Faster current_ratings / current_rankings views (same rows)."""
    run_script(db, _VIEWS_2)


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


def m004_gold_units(db: Database) -> None:
    """Gold for rankings too: ``unit`` 'image' (an expected score of one image) or 'prompt'
    (the image of a ranking set that must get rank ``expected`` ± ``tolerance``)."""
    run_script(db, _GOLD_UNITS)


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


def m005_leases_and_drafts(db: Database) -> None:
    """Assignments are leases: an open assignment older than the study's lease stops
    counting toward k, and a lease that was given away is ``released``. ``drafts`` keeps a
    ranking in progress across reloads."""
    run_script(db, _LEASES)


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


def m201_rater_exclusions(db: Database) -> None:
    """Raters a researcher left out of a study's statistics and exports (reversible: the
    row is deleted on re-inclusion; both actions are in the audit log)."""
    run_script(db, _RATER_EXCLUSIONS)

