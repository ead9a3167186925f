"""A study's questionnaire (concord.questionnaire) as raters answer it: which part is still
open for a rater, their answers checked and stored (a part answered again adds
revisions), and the answers per participant for the researcher and the exports.

The answers never enter the rating statistics: no report reads this table, and the label
exports leave it out; ``export --format questionnaire`` writes them on their own.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

from concord.errors import ConcordError
from concord.questionnaire import PARTS, Question, Questionnaire
from concord.questionnaire_answers import check_all
from concord.services.labelling import common, gate
from concord.store import questionnaires as store
from concord.store import studies as study_store
from concord.store.crowd import links as crowd_store
from concord.store.db import transaction

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ["rater", "participant_id", "part", "question", "kind", "text", "answer",
           "answer_json", "revision", "time"]


class AnswersRefused(ConcordError):
    """Answers that do not fit their questions: ``problems`` has one line per question."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def of_study(db: Database, study_name: str) -> Questionnaire:
    """The study's questions."""
    return Questionnaire.of(study_store.get_study(db, study_name).settings)


def open_part(db: Database, study_name: str, rater_id: int, part: str) -> tuple[Question, ...]:
    """The questions of ``part`` when some of them are still unanswered by this rater
    (all of the part, to answer together), else ()."""
    study = common.member_study(db, study_name, rater_id)
    asked = Questionnaire.of(study.settings).part(part)
    if not asked:
        return ()
    done = store.answered(db, study.id, rater_id, part)
    return asked if any(q.id not in done for q in asked) else ()


def submit(db: Database, study_name: str, rater_id: int, part: str, given: dict[str, Any], *,
           submission: str) -> bool:
    """Check and store a rater's answers to ``part``; False when this submission was stored
    before (nothing is stored twice).

    Raises:
        AnswersRefused: a required question left blank or an answer that does not fit
            (nothing is stored).
        ConcordError: no such part, or the rater may not answer (revoked, session ended).
    """
    if part not in PARTS:
        raise ConcordError(f"no questionnaire part {part!r} (known: {', '.join(PARTS)})")
    study = common.member_study(db, study_name, rater_id)
    asked = Questionnaire.of(study.settings).part(part)
    answered = check_all(asked, given)
    if answered.problems:
        raise AnswersRefused(answered.problems)
    with transaction(db):
        gate.check_open(db, study, rater_id)  # a session that was ended stores nothing
        if store.stored(db, submission):
            return False
        store.add(db, study.id, rater_id, part, answered.values, submission)
    return True


def answers(db: Database, study_name: str) -> list[dict[str, Any]]:
    """Every rater's current answers, one row per question (:data:`COLUMNS`): the
    question's kind and text beside the answer (a list for multiple choice)."""
    study = study_store.get_study(db, study_name)
    asked = Questionnaire.of(study.settings)
    by_id = {q.id: q for p in PARTS for q in asked.part(p)}
    pids = {}
    out = []
    for row in store.current(db, study.id):
        rid = row["rater_id"]
        if rid not in pids:
            part = crowd_store.participant_of(db, rid)
            pids[rid] = part.participant_id if part else ""
        q = by_id.get(row["question"])
        out.append({"rater": row["rater"], "participant_id": pids[rid], "part": row["part"],
                    "question": row["question"], "kind": q.kind if q else "",
                    "text": q.text if q else "", "answer": row["answer"],
                    "answer_json": json.dumps(row["answer"], ensure_ascii=False),
                    "revision": row["revision"], "time": row["created_at"]})
    return out


def answers_frame(db: Database, study_name: str) -> pd.DataFrame:
    """:func:`answers` as a table for the exports: ``answer`` as one cell of text
    (:func:`answer_text`), ``answer_json`` the exact value (a list for multiple choice, a
    number for a number or a Likert point, null for a blank)."""
    import pandas as pd

    frame = pd.DataFrame(answers(db, study_name), columns=COLUMNS)
    frame["answer"] = frame["answer"].map(answer_text)
    return frame


def answer_text(value: Any) -> str:
    """An answer as one cell of text: multiple choices joined by "; ", blank as ""."""
    if value is None:
        return ""
    return "; ".join(value) if isinstance(value, list) else str(value)


def per_participant(db: Database, study_name: str) -> list[dict[str, Any]]:
    """One row per rater who answered: ``rater``, ``participant_id`` and a column per
    question (its current answer; multiple choices joined by "; ")."""
    rows: dict[str, dict[str, Any]] = {}
    for a in answers(db, study_name):
        row = rows.setdefault(a["rater"], {"rater": a["rater"],
                                           "participant_id": a["participant_id"]})
        value = a["answer"]
        row[a["question"]] = answer_text(value) if isinstance(value, list) else value
    return list(rows.values())
