"""Migration of the pairwise A/B branch (numbered from 601): the pair protocol and tables.

Frozen: this module holds everything the migration does and imports no other module of
Concord but the script runner, so editing Concord later cannot change what it did.

Two CHECK constraints must admit the new protocol and unit: ``studies.protocol`` gains
``'pair'`` and ``assignments.unit`` gains ``'pair'``. SQLite cannot change a CHECK in
place, so both tables are rebuilt (create, copy, drop, rename), following SQLite's
documented procedure: with foreign keys off, or dropping ``studies`` would delete every
study's rows through ON DELETE CASCADE. The new table is made from the table's own
stored ``CREATE`` statement, so columns added by other migrations are kept.
"""

from __future__ import annotations

import re

from sqlite_utils import Database

from concord.store.migrations.script import run_script

_CHANGES = {
    "studies": ("CHECK (protocol IN ('score', 'rank', 'both'))",
                "CHECK (protocol IN ('score', 'rank', 'both', 'pair'))"),
    "assignments": ("CHECK (unit IN ('image', 'prompt'))",
                    "CHECK (unit IN ('image', 'prompt', 'pair'))"),
}

# A pair is two images of one prompt, image_a < image_b (store ids), from different
# models; ``better`` is set for a gold pair (the image known to be better). A judgment
# stores the placement the rater saw (left_image, right_image) and the outcome; NULL
# outcome = an undo. Revisions are append-only, as ratings and rankings are.
_PAIR_TABLES = """
CREATE TABLE pairs (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    prompt_id INTEGER NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
    image_a INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    image_b INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    better INTEGER REFERENCES images(id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    CHECK (image_a < image_b),
    CHECK (better IS NULL OR better = image_a OR better = image_b),
    UNIQUE (image_a, image_b)
);
CREATE INDEX pairs_study ON pairs(study_id, prompt_id);
CREATE TABLE pair_judgments (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    pair_id INTEGER NOT NULL REFERENCES pairs(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    criterion TEXT NOT NULL,
    left_image INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    right_image INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    outcome TEXT CHECK (outcome IS NULL OR outcome IN ('left', 'right', 'tie', 'both_bad')),
    revision INTEGER NOT NULL,
    submission TEXT NOT NULL UNIQUE,
    action TEXT NOT NULL CHECK (action IN ('judge', 'edit', 'undo', 'import')),
    seconds REAL,
    created_at TEXT NOT NULL,
    CHECK (left_image != right_image),
    UNIQUE (pair_id, rater_id, criterion, revision)
);
CREATE INDEX pair_judgments_study ON pair_judgments(study_id);
CREATE VIEW current_pair_judgments AS
SELECT j.* FROM pair_judgments j
WHERE j.outcome IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM pair_judgments x WHERE x.pair_id = j.pair_id AND x.rater_id = j.rater_id
    AND x.criterion = j.criterion AND x.revision > j.revision
)
"""


def m601_pairs(db: Database) -> None:
    """The pairwise A/B protocol: protocol ``pair`` and unit ``pair`` (both tables rebuilt
    with foreign keys off), scheduled ``pairs`` (gold: ``better``) and append-only
    ``pair_judgments`` with the left/right placement shown, in one transaction.

    Runs outside sqlite-utils' transaction (``PRAGMA foreign_keys`` cannot change inside
    one) and is idempotent, so a crash between its commit and the migration's record
    only makes the next open record it.
    """
    conn = db.conn
    if conn.in_transaction:
        raise RuntimeError("migration m601 must start outside a transaction")
    keys_on = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table in _CHANGES:
                _rebuilt(db, table)
            # Rows are copied with their ids, so every reference still holds.
            if not db["pairs"].exists():
                run_script(db, _PAIR_TABLES)
        except BaseException:
            conn.rollback()
            raise
        conn.execute("COMMIT")
    finally:
        conn.execute(f"PRAGMA foreign_keys = {'ON' if keys_on else 'OFF'}")


def _rebuilt(db: Database, table: str) -> None:
    """Rebuild ``table`` with its CHECK widened; its rows, ids and indexes are kept."""
    old, new = _CHANGES[table]
    sql = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                     [table]).fetchone()[0]
    if new in sql:
        return  # already done (a migration interrupted after its commit)
    if old not in sql:
        raise RuntimeError(f"migration m601: {table} has no {old!r} to widen")
    create = re.sub(rf'^CREATE TABLE\s+"?{table}"?', f"CREATE TABLE {table}_new",
                    sql.replace(old, new), count=1)
    indexes = [r[0] for r in db.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT"
        " NULL", [table]).fetchall()]
    db.execute(create)
    db.execute(f"INSERT INTO {table}_new SELECT * FROM {table}")
    db.execute(f"DROP TABLE {table}")
    db.execute(f"ALTER TABLE {table}_new RENAME TO {table}")
    for index in indexes:
        db.execute(index)
