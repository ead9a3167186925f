"""Checklist answers: the ticks behind a rating, the derived value and any override.

Rows hang off a rating submission (``ratings.submission`` + criterion), so a rating's
ticks are current exactly when the rating is: an undo or an edit adds a new submission,
and the views below follow ``current_ratings``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlite_utils import Database

from concord.store.imports.batches import visible


@dataclass(frozen=True, slots=True)
class Answer:
    """One criterion's checklist answer in one submission."""

    criterion: str
    derived: float
    final: float
    reason: str | None
    ticks: tuple[tuple[str, bool], ...]  # (condition id, ticked) in the rubric's order


def insert(db: Database, submission: str, rubric: str, answers: Iterable[Answer]) -> None:
    """Store the answers of a submission whose ratings rows were just written (inside the
    caller's transaction). A replayed submission stored nothing in ``ratings`` and must
    not get here."""
    for a in answers:
        db.execute("INSERT INTO rating_checklists (submission, criterion, rubric, derived,"
                   " final, reason) VALUES (?, ?, ?, ?, ?, ?)",
                   [submission, a.criterion, rubric, a.derived, a.final, a.reason])
        db.conn.executemany(
            "INSERT INTO rating_ticks (submission, criterion, condition, ticked, position)"
            " VALUES (?, ?, ?, ?, ?)",
            [(submission, a.criterion, cid, int(on), i) for i, (cid, on) in enumerate(a.ticks)])


def last_answers(db: Database, image_id: int, rater_id: int) -> dict[str, Answer]:
    """The checklist answers of a rater's latest non-empty rating per criterion of one
    image, even if undone since (what an edit or an undo shows again)."""
    rows = db.execute(
        "SELECT r.criterion, k.derived, k.final, k.reason, t.condition, t.ticked"
        " FROM ratings r JOIN rating_checklists k ON k.submission = r.submission"
        " AND k.criterion = r.criterion"
        " LEFT JOIN rating_ticks t ON t.submission = k.submission AND t.criterion = k.criterion"
        " WHERE r.image_id = ? AND r.rater_id = ? AND r.value IS NOT NULL"
        f" AND {visible('r')} AND NOT EXISTS (SELECT 1 FROM ratings x"
        " WHERE x.image_id = r.image_id AND x.rater_id = r.rater_id"
        " AND x.criterion = r.criterion AND x.value IS NOT NULL AND x.revision > r.revision"
        f" AND {visible('x')}) ORDER BY r.criterion, t.position", [image_id, rater_id],
    ).fetchall()
    out: dict[str, Answer] = {}
    for criterion, derived, final, reason, condition, ticked in rows:
        prev = out.get(criterion)
        ticks = (prev.ticks if prev else ()) + (((condition, bool(ticked)),)
                                                if condition is not None else ())
        out[criterion] = Answer(criterion, derived, final, reason, ticks)
    return out


_CURRENT = """
SELECT c.image_id, i.public_id, p.key AS prompt_id, p.dimension, m.name AS model, i.sample,
       rt.name AS rater, c.criterion, k.rubric, t.condition, t.ticked, k.derived, k.final,
       k.reason, c.submission, c.created_at AS time
FROM rating_checklists k
CROSS JOIN current_ratings c
JOIN rating_ticks t ON t.submission = k.submission AND t.criterion = k.criterion
JOIN images i ON i.id = c.image_id
JOIN prompts p ON p.id = i.prompt_id
JOIN models m ON m.id = i.model_id
JOIN raters rt ON rt.id = c.rater_id
WHERE c.submission = k.submission AND c.criterion = k.criterion
  AND c.study_id = ? AND c.value IS NOT NULL
ORDER BY p.position, m.name, i.sample, rt.name, c.criterion, t.position
"""


def current_ticks(db: Database, study_id: int) -> list[dict]:
    """One row per condition of every current rating that came with a checklist:
    ``image_id, public_id, prompt_id, dimension, model, sample, rater, criterion, rubric, condition,
    ticked (0/1), derived, final, reason, submission, time``."""
    # Checklist answers are few: start from them (CROSS JOIN keeps that order), never scan a
    # large study's ratings for none.
    return list(db.query(_CURRENT, [study_id]))
