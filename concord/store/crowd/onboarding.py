"""Each rater's way into a study: consent, the practice block, completion; and the
server-side times the time and pay report adds up."""

from __future__ import annotations

from dataclasses import dataclass

from sqlite_utils import Database

from concord.store.db import dumps, loads, now


@dataclass(frozen=True, slots=True)
class Onboarding:
    """A rater's consent and practice state in one study."""

    consented_at: str | None = None
    practice_state: str = "pending"
    practice_correct: int | None = None
    practice_total: int | None = None
    completed_at: str | None = None
    ended: str | None = None  # 'skips' or 'checks': the session was ended (screened out)
    ended_at: str | None = None


_STATE = ("consented_at, practice_state, practice_correct, practice_total, completed_at,"
          " ended, ended_at")


def get(db: Database, study_id: int, rater_id: int) -> Onboarding:
    """The rater's state (an empty one before they did anything)."""
    row = db.execute(f"SELECT {_STATE} FROM onboarding WHERE study_id = ? AND rater_id = ?",
                     [study_id, rater_id]).fetchone()
    return Onboarding(*row) if row else Onboarding()


def _ensure(db: Database, study_id: int, rater_id: int) -> None:
    db.execute("INSERT INTO onboarding (study_id, rater_id) VALUES (?, ?)"
               " ON CONFLICT DO NOTHING",
                [study_id, rater_id])


def consent(db: Database, study_id: int, rater_id: int) -> str:
    """Record the acceptance (the first one counts); returns its time."""
    _ensure(db, study_id, rater_id)
    db.execute("UPDATE onboarding SET consented_at = COALESCE(consented_at, ?)"
               " WHERE study_id = ? AND rater_id = ?", [now(), study_id, rater_id])
    return str(get(db, study_id, rater_id).consented_at)


def set_practice_result(db: Database, study_id: int, rater_id: int, correct: int,
                        total: int, passed: bool) -> None:
    """Close the practice block with its score."""
    _ensure(db, study_id, rater_id)
    db.execute("UPDATE onboarding SET practice_state = ?, practice_correct = ?,"
               " practice_total = ?, practice_done_at = ? WHERE study_id = ? AND rater_id = ?",
               ["passed" if passed else "failed", correct, total, now(), study_id, rater_id])


def mark_completed(db: Database, study_id: int, rater_id: int) -> None:
    """The first time the rater was shown the completion screen."""
    _ensure(db, study_id, rater_id)
    db.execute("UPDATE onboarding SET completed_at = COALESCE(completed_at, ?)"
               " WHERE study_id = ? AND rater_id = ?", [now(), study_id, rater_id])


def practice_images(db: Database, study_id: int, n: int) -> list[int]:
    """The study's practice pool: its first ``n`` scoring gold images (by import order)."""
    return [r[0] for r in db.execute(
        "SELECT DISTINCT g.image_id FROM gold g JOIN images i ON i.id = g.image_id"
        " WHERE i.study_id = ? AND g.unit = 'image' AND i.path IS NOT NULL"
        " ORDER BY g.image_id LIMIT ?", [study_id, n]).fetchall()]


def gold_of(db: Database, image_id: int) -> dict[str, tuple[float, float]]:
    """Expected value and tolerance per criterion of a gold image."""
    return {r[0]: (r[1], r[2]) for r in db.execute(
        "SELECT criterion, expected, tolerance FROM gold WHERE image_id = ? AND unit = 'image'"
        " ORDER BY criterion", [image_id]).fetchall()}


@dataclass(frozen=True, slots=True)
class PracticeRow:
    """One practice item of one rater."""

    image_id: int
    position: int
    opened_at: str
    answer: dict[str, float] | None
    correct: bool | None
    submission: str | None


def practice_rows(db: Database, study_id: int, rater_id: int) -> list[PracticeRow]:
    """The rater's practice items opened so far, in order."""
    return [PracticeRow(r[0], r[1], r[2], loads(r[3]), None if r[4] is None else bool(r[4]),
                        r[5])
            for r in db.execute(
                "SELECT image_id, position, opened_at, answer, correct, submission"
                " FROM practice_answers WHERE study_id = ? AND rater_id = ? ORDER BY position",
                [study_id, rater_id]).fetchall()]


def open_practice(db: Database, study_id: int, rater_id: int, image_id: int,
                  position: int) -> None:
    """Serve a practice item (its time starts now); a second call changes nothing."""
    db.execute("INSERT INTO practice_answers (study_id, rater_id, image_id,"
               " position, opened_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
               [study_id, rater_id, image_id, position, now()])


def answer_practice(db: Database, study_id: int, rater_id: int, image_id: int,
                    answer: dict[str, float], correct: bool, seconds: float,
                    submission: str) -> None:
    """Store the answer to a practice item (once: the caller checks it is unanswered)."""
    db.execute("UPDATE practice_answers SET answer = ?, correct = ?, seconds = ?,"
               " submission = ?, answered_at = ? WHERE study_id = ? AND rater_id = ?"
               " AND image_id = ? AND answer IS NULL",
               [dumps(answer), int(correct), seconds, submission, now(), study_id, rater_id,
                image_id])


def states(db: Database, study_id: int) -> dict[int, Onboarding]:
    """Every rater's onboarding state in a study, by rater id."""
    return {r[0]: Onboarding(*r[1:]) for r in db.execute(
        f"SELECT rater_id, {_STATE} FROM onboarding WHERE study_id = ?", [study_id]).fetchall()}


def timed_work(db: Database, study_id: int) -> list[tuple[int, str, float | None]]:
    """Every timed piece of work in a study: ``(rater_id, kind, seconds)``.

    ``kind`` is ``rating`` (one per submission, not per criterion), ``ranking``, ``pair``
    (a pair judgment), ``skip`` (seconds from serving the item to the skip) or
    ``practice``. Edits and undos carry no time on item and are left out.
    """
    sql = (
        "SELECT rater_id, 'rating', MAX(seconds) FROM ratings WHERE study_id = :s"
        " AND action = 'rate' GROUP BY rater_id, submission"
        " UNION ALL SELECT rater_id, 'ranking', seconds FROM rankings WHERE study_id = :s"
        " AND action = 'rank'"
        " UNION ALL SELECT rater_id, 'pair', seconds FROM pair_judgments WHERE study_id = :s"
        " AND action = 'judge'"
        " UNION ALL SELECT rater_id, 'skip', (julianday(done_at) - julianday(opened_at))"
        " * 86400.0 FROM assignments WHERE study_id = :s AND status = 'skipped'"
        " UNION ALL SELECT rater_id, 'practice', seconds FROM practice_answers"
        " WHERE study_id = :s AND answer IS NOT NULL"
    )
    return [(r[0], r[1], r[2]) for r in db.execute(sql, {"s": study_id}).fetchall()]


def done_count(db: Database, study_id: int, rater_id: int, unit: str) -> int:
    """Items of one unit one rater has done in a study (scored images, ranked prompts or
    judged pairs)."""
    return int(db.execute("SELECT COUNT(*) FROM assignments WHERE study_id = ? AND"
                          " rater_id = ? AND unit = ? AND status = 'done'",
                          [study_id, rater_id, unit]).fetchone()[0])


def done_counts(db: Database, study_id: int) -> dict[int, int]:
    """Items each rater has done in a study (scored images, ranked prompts and judged
    pairs)."""
    return {r[0]: r[1] for r in db.execute(
        "SELECT rater_id, COUNT(*) FROM assignments WHERE study_id = ? AND status = 'done'"
        " GROUP BY rater_id", [study_id]).fetchall()}


def done_by_unit(db: Database, study_id: int) -> dict[tuple[int, str], int]:
    """Done items of each rater and unit in a study: (rater id, unit) -> count."""
    return {(r[0], r[1]): r[2] for r in db.execute(
        "SELECT rater_id, unit, COUNT(*) FROM assignments WHERE study_id = ? AND"
        " status = 'done' GROUP BY rater_id, unit", [study_id]).fetchall()}


def last_activity(db: Database, study_id: int) -> dict[int, str]:
    """When each rater of a study last did anything there (opened, answered, skipped an
    item, answered a practice item, consented, came through the study link)."""
    sql = (
        "SELECT rater_id, MAX(t) FROM ("
        " SELECT rater_id, opened_at AS t FROM assignments WHERE study_id = :s"
        " UNION ALL SELECT rater_id, done_at FROM assignments WHERE study_id = :s"
        " UNION ALL SELECT rater_id, opened_at FROM practice_answers WHERE study_id = :s"
        " UNION ALL SELECT rater_id, answered_at FROM practice_answers WHERE study_id = :s"
        " UNION ALL SELECT rater_id, consented_at FROM onboarding WHERE study_id = :s"
        " UNION ALL SELECT rater_id, last_seen_at FROM crowd_participants WHERE study_id = :s"
        ") AS e WHERE t IS NOT NULL GROUP BY rater_id"
    )
    return {r[0]: r[1] for r in db.execute(sql, {"s": study_id}).fetchall()}
