"""Attention checks while raters work: the first answer each rater gave to each gold item
(``gold_checks``), what a gold ranking set expects, and how a session is ended.

Only the first submission of a gold item is judged and kept: an undo and a second answer
cannot turn a failed check into a passed one.
"""

from __future__ import annotations

from sqlite_utils import Database

from concord.store.db import now


def record(db: Database, study_id: int, rater_id: int, unit: str, item_id: int,
           passed: bool) -> bool:
    """Keep the result of a rater's first answer to a gold item; False when one was kept
    before (the answer is then not judged again)."""
    cur = db.execute("INSERT INTO gold_checks (study_id, rater_id, unit, item_id,"
                     " passed, checked_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                     [study_id, rater_id, unit, item_id, int(passed), now()])
    return cur.rowcount == 1


def counts(db: Database, study_id: int, rater_id: int) -> tuple[int, int]:
    """(passed, failed) checks of one rater in a study."""
    row = db.execute("SELECT COALESCE(SUM(passed), 0), COALESCE(SUM(1 - passed), 0)"
                     " FROM gold_checks WHERE study_id = ? AND rater_id = ?",
                     [study_id, rater_id]).fetchone()
    return int(row[0]), int(row[1])


def all_counts(db: Database, study_id: int) -> dict[int, tuple[int, int]]:
    """(passed, failed) checks of every rater of a study, by rater id."""
    return {r[0]: (int(r[1]), int(r[2])) for r in db.execute(
        "SELECT rater_id, SUM(passed), SUM(1 - passed) FROM gold_checks WHERE study_id = ?"
        " GROUP BY rater_id", [study_id]).fetchall()}


def ranking_gold(db: Database, prompt_id: int) -> dict[int, tuple[float, float]]:
    """The gold images of a ranking set: image id -> (expected rank, tolerance)."""
    return {r[0]: (float(r[1]), float(r[2])) for r in db.execute(
        "SELECT g.image_id, g.expected, g.tolerance FROM gold g JOIN images i ON"
        " i.id = g.image_id WHERE i.prompt_id = ? AND g.unit = 'prompt'", [prompt_id])}


def end_session(db: Database, study_id: int, rater_id: int, why: str) -> bool:
    """End a rater's work in a study (``skips`` or ``checks``; the first reason stays) and
    give back the slots of the items they hold open. Returns whether it ended now."""
    db.execute("INSERT INTO onboarding (study_id, rater_id) VALUES (?, ?)"
               " ON CONFLICT DO NOTHING",
               [study_id, rater_id])
    cur = db.execute("UPDATE onboarding SET ended = ?, ended_at = ? WHERE study_id = ? AND"
                     " rater_id = ? AND ended IS NULL", [why, now(), study_id, rater_id])
    db.execute("UPDATE assignments SET status = 'released' WHERE study_id = ? AND"
               " rater_id = ? AND status = 'open'", [study_id, rater_id])
    return cur.rowcount == 1
