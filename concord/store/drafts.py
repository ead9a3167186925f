"""Work in progress kept across reloads (a ranking being built), one per rater and item."""

from __future__ import annotations

from sqlite_utils import Database

from concord.store.db import now


def save(db: Database, study_id: int, rater_id: int, unit: str, item_id: int, data: str) -> None:
    """Keep (or replace) a rater's draft of one item."""
    db.execute(
        "INSERT INTO drafts (study_id, rater_id, unit, item_id, data, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (study_id, rater_id, unit, item_id)"
        " DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
        [study_id, rater_id, unit, item_id, data, now()])


def load(db: Database, study_id: int, rater_id: int, unit: str, item_id: int) -> str | None:
    """A rater's draft of one item, if any."""
    row = db.execute("SELECT data FROM drafts WHERE study_id = ? AND rater_id = ? AND unit = ?"
                     " AND item_id = ?", [study_id, rater_id, unit, item_id]).fetchone()
    return row[0] if row else None


def drop(db: Database, study_id: int, rater_id: int, unit: str, item_id: int) -> None:
    """Forget a draft (the item was submitted or skipped)."""
    db.execute("DELETE FROM drafts WHERE study_id = ? AND rater_id = ? AND unit = ? AND"
               " item_id = ?", [study_id, rater_id, unit, item_id])
