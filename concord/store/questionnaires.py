"""Questionnaire answers (concord.services.questionnaire): appended, never changed."""

from __future__ import annotations

import json
from typing import Any

from sqlite_utils import Database

from concord.store.db import now


def answered(db: Database, study_id: int, rater_id: int, part: str) -> set[str]:
    """The questions of a part this rater has an answer row for (blank ones too)."""
    return {r[0] for r in db.execute(
        "SELECT DISTINCT question FROM questionnaire_answers WHERE study_id = ? AND"
        " rater_id = ? AND part = ?", [study_id, rater_id, part])}


def stored(db: Database, submission: str) -> bool:
    """Whether a submission is in already (a double click, a replayed request)."""
    return db.execute("SELECT 1 FROM questionnaire_answers WHERE submission = ? LIMIT 1",
                      [submission]).fetchone() is not None


def add(db: Database, study_id: int, rater_id: int, part: str, values: dict[str, Any],
        submission: str) -> None:
    """One new revision per question (inside the caller's transaction)."""
    stamp = now()
    for question, value in values.items():
        db.execute(
            "INSERT INTO questionnaire_answers (study_id, rater_id, part, question, answer,"
            " revision, submission, created_at) VALUES (?, ?, ?, ?, ?, (SELECT"
            " COALESCE(MAX(revision), 0) + 1 FROM questionnaire_answers WHERE study_id = ?"
            " AND rater_id = ? AND question = ?), ?, ?)",
            [study_id, rater_id, part, question,
             None if value is None else json.dumps(value, ensure_ascii=False),
             study_id, rater_id, question, submission, stamp])


def current(db: Database, study_id: int, rater_id: int | None = None) -> list[dict]:
    """The latest answer of each rater (or one) to each question: ``rater_id, rater,
    part, question, answer`` (decoded), ``revision``, ``created_at``; by rater, then
    in the order they were given."""
    where, args = ("AND a.rater_id = ?", [study_id, rater_id]) if rater_id is not None \
        else ("", [study_id])
    rows = db.execute(
        "SELECT a.rater_id, r.name, a.part, a.question, a.answer, a.revision, a.created_at"
        " FROM questionnaire_answers a JOIN raters r ON r.id = a.rater_id"
        " WHERE a.study_id = ? " + where + " AND a.revision = (SELECT MAX(x.revision) FROM"
        " questionnaire_answers x WHERE x.study_id = a.study_id AND x.rater_id = a.rater_id"
        " AND x.question = a.question) ORDER BY r.name, a.id", args).fetchall()
    return [{"rater_id": r[0], "rater": r[1], "part": r[2], "question": r[3],
             "answer": None if r[4] is None else json.loads(r[4]), "revision": r[5],
             "created_at": r[6]} for r in rows]
