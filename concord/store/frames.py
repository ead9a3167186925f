"""Tidy DataFrames of a study for stats and export (columns: docs/data-model.md)."""

from __future__ import annotations

import pandas as pd
from sqlite_utils import Database

_RATINGS_SQL = """
SELECT s.name AS study, p.key AS prompt_id, p.text AS prompt, m.name AS model,
       i.sample, i.id AS image_id, r.name AS rater, c.criterion, c.value, c.seconds,
       c.created_at, p.dimension
FROM current_ratings c
JOIN images i ON i.id = c.image_id
JOIN prompts p ON p.id = i.prompt_id
JOIN models m ON m.id = i.model_id
JOIN raters r ON r.id = c.rater_id
JOIN studies s ON s.id = c.study_id
WHERE c.study_id = ?
ORDER BY p.position, m.id, i.sample, r.name, c.criterion
"""

_RANKINGS_SQL = """
SELECT s.name AS study, p.key AS prompt_id, p.text AS prompt, r.name AS rater, k.criterion,
       m.name AS model, i.sample, i.id AS image_id, ri.rank, ri.position, p.dimension,
       k.seconds, k.created_at
FROM current_rankings k
JOIN ranking_items ri ON ri.ranking_id = k.id
JOIN images i ON i.id = ri.image_id
JOIN prompts p ON p.id = k.prompt_id
JOIN models m ON m.id = i.model_id
JOIN raters r ON r.id = k.rater_id
JOIN studies s ON s.id = k.study_id
WHERE k.study_id = ?
ORDER BY p.position, r.name, k.criterion, ri.rank, ri.position
"""

_SCORES_SQL = """
SELECT s.name AS study, p.key AS prompt_id, m.name AS model, i.sample, i.id AS image_id,
       ms.metric, ms.judge, ms.question_id, ms.value, ms.error, p.dimension, p.variant,
       p.atom_count, p.paraphrase_group, p.benchmark, p.meta AS prompt_meta,
       q.skill, q.answer, ms.details
FROM metric_scores ms
JOIN images i ON i.id = ms.image_id
JOIN prompts p ON p.id = i.prompt_id
JOIN models m ON m.id = i.model_id
JOIN studies s ON s.id = ms.study_id
LEFT JOIN questions q ON q.prompt_id = p.id AND q.qkey = ms.question_id
WHERE ms.study_id = ?
ORDER BY ms.metric, ms.judge, p.position, m.id, i.sample, q.position
"""


def ratings_frame(db: Database, study_id: int) -> pd.DataFrame:
    """One row per current rating."""
    df = pd.read_sql_query(_RATINGS_SQL, db.conn, params=[study_id])
    df["seconds"] = df["seconds"].astype(float)
    return df


def rankings_frame(db: Database, study_id: int) -> pd.DataFrame:
    """One row per ranked image of a current ranking."""
    return pd.read_sql_query(_RANKINGS_SQL, db.conn, params=[study_id])


def scores_frame(db: Database, study_id: int) -> pd.DataFrame:
    """One row per stored metric score, with prompt and question metadata."""
    df = pd.read_sql_query(_SCORES_SQL, db.conn, params=[study_id])
    df["value"] = df["value"].astype(float)
    return df


def gold_frame(db: Database, study_id: int) -> pd.DataFrame:
    """Gold expectations: image_id, criterion, expected, tolerance."""
    return pd.read_sql_query(
        "SELECT g.image_id, g.criterion, g.expected, g.tolerance FROM gold g JOIN images i"
        " ON i.id = g.image_id WHERE i.study_id = ?", db.conn, params=[study_id])


def data_version(db: Database) -> tuple[str, ...]:
    """A cheap fingerprint that changes whenever ratings, rankings or scores change.

    Used as a cache key by the dashboard ("numbers are cached per database change").
    """
    row = db.execute(
        "SELECT (SELECT COALESCE(MAX(id), 0) FROM ratings), (SELECT COALESCE(MAX(id), 0)"
        " FROM rankings), (SELECT COUNT(*) FROM metric_scores), (SELECT MAX(created_at)"
        " FROM metric_scores), (SELECT COALESCE(MAX(id), 0) FROM audit_log)").fetchone()
    return tuple(str(x) for x in row)
