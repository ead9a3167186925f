"""Automatic metric scores and the runs that produced them."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlite_utils import Database

from concord.plan import Question
from concord.store.db import dumps, loads, now, transaction


@dataclass(frozen=True, slots=True)
class ScoringItem:
    """One image to score, with what any metric may need about its prompt."""

    image_id: int
    prompt_id: str
    prompt: str
    model: str
    sample: int
    path: str | None
    dimension: str | None
    variant: str | None
    paraphrase_group: str | None
    atom_count: int | None
    meta: dict[str, Any] = field(default_factory=dict)
    questions: tuple[Question, ...] = ()


@dataclass(frozen=True, slots=True)
class ScoreRow:
    """One metric value to store; ``value`` None with ``error`` set records a failure."""

    image_id: int
    metric: str
    judge: str
    question_id: str
    value: float | None
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    options_key: str | None = None


def scoring_items(db: Database, study_id: int) -> list[ScoringItem]:
    """Every image of a study (ordered by prompt position, model, sample), with questions.

    ``path`` is relative to the study root; None for images imported without a file.
    """
    questions: dict[int, list[Question]] = {}
    for q in db.query(
        "SELECT q.* FROM questions q JOIN prompts p ON p.id = q.prompt_id"
        " WHERE p.study_id = ? ORDER BY q.prompt_id, q.position",
        [study_id],
    ):
        questions.setdefault(q["prompt_id"], []).append(
            Question(q["qkey"], q["text"], q["answer"], q["skill"])
        )
    sql = (
        "SELECT i.id, i.sample, i.path, p.id AS pid, p.key, p.text, p.dimension, p.variant,"
        " p.paraphrase_group, p.atom_count, p.meta, m.name AS model FROM images i"
        " JOIN prompts p ON p.id = i.prompt_id JOIN models m ON m.id = i.model_id"
        " WHERE i.study_id = ? ORDER BY p.position, m.id, i.sample"
    )
    return [
        ScoringItem(
            image_id=r["id"], prompt_id=r["key"], prompt=r["text"], model=r["model"],
            sample=r["sample"], path=r["path"], dimension=r["dimension"],
            variant=r["variant"], paraphrase_group=r["paraphrase_group"],
            atom_count=r["atom_count"], meta=loads(r["meta"], {}),
            questions=tuple(questions.get(r["pid"], ())),
        )
        for r in db.query(sql, [study_id])
    ]


def scored_keys(db: Database, study_id: int, metric: str, judge: str,
                options_key: str | None = None) -> set[tuple[int, str]]:
    """(image_id, question_id) pairs that hold a value scored with these options.

    Errors are retried, and so is a value computed with other score-changing options
    (``options_key``; NULL for imported rows and rows from before keys were recorded).
    """
    return {
        (r["image_id"], r["question_id"])
        for r in db.query(
            "SELECT image_id, question_id FROM metric_scores WHERE study_id = ? AND metric = ?"
            " AND judge = ? AND value IS NOT NULL AND options_key IS NOT DISTINCT FROM ?",
            [study_id, metric, judge, options_key],
        )
    }


def has_questions(db: Database, study_id: int) -> bool:
    """Whether any prompt of the study has questions."""
    return bool(db.execute(
        "SELECT EXISTS (SELECT 1 FROM questions q JOIN prompts p ON p.id = q.prompt_id"
        " WHERE p.study_id = ?)", [study_id]).fetchone()[0])


def write_scores(db: Database, study_id: int, rows: Iterable[ScoreRow], run_id: str | None) -> int:
    """Insert or replace metric scores in one transaction; returns the number written.

    A row replaces an earlier one for the same (image, metric, judge, question), so a
    rerun that retries an errored item overwrites the error. A row identical to the
    stored one (same value, details, error, run and options) is left alone.
    """
    stamp = now()
    params = [
        [study_id, r.image_id, r.metric, r.judge, r.question_id,
         None if r.value is None or math.isnan(r.value) else float(r.value),
         dumps(r.details), run_id, r.error, r.options_key, stamp]
        for r in rows
    ]
    with transaction(db):
        db.conn.executemany(
            "INSERT INTO metric_scores (study_id, image_id, metric, judge, question_id, value,"
            " details, run_id, error, options_key, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" + UPSERT,
            params,
        )
    return len(params)


# A stored row is replaced only when something differs, so a repeated import writes nothing.
UPSERT = (
    " ON CONFLICT (image_id, metric, judge, question_id) DO UPDATE SET"
    " value = excluded.value, details = excluded.details, run_id = excluded.run_id,"
    " error = excluded.error, options_key = excluded.options_key,"
    " created_at = excluded.created_at"
    " WHERE metric_scores.value IS DISTINCT FROM excluded.value"
    " OR metric_scores.details IS DISTINCT FROM excluded.details"
    " OR metric_scores.error IS DISTINCT FROM excluded.error"
    " OR metric_scores.run_id IS DISTINCT FROM excluded.run_id"
    " OR metric_scores.options_key IS DISTINCT FROM excluded.options_key"
)


def metric_names(db: Database, study_id: int) -> list[tuple[str, str]]:
    """(metric, judge) pairs that have scores in a study."""
    return [
        (r["metric"], r["judge"])
        for r in db.query(
            "SELECT DISTINCT metric, judge FROM metric_scores WHERE study_id = ? ORDER BY 1, 2",
            [study_id],
        )
    ]
