"""Tidy DataFrames of a study for stats and export (columns: docs/data-model.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlite_utils import Database

from concord.store.rating_columns import current, rating_rows
from concord.store.sqlframe import read_frame

_IMAGE_INFO_SQL = """
SELECT i.id AS image_id, i.sample, i.path, p.id AS prompt_pk, p.key AS prompt_id,
       p.text AS prompt, p.dimension, p.position, m.id AS model_pk, m.name AS model
FROM images i
JOIN prompts p ON p.id = i.prompt_id
JOIN models m ON m.id = i.model_id
WHERE i.study_id = ?
ORDER BY p.position, p.id, m.id, i.sample
"""
_TEXT = ("study", "prompt_id", "prompt", "model", "rater", "criterion", "dimension")

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

# Left/right are the places the rater saw; gold_model is the known better model of a gold
# pair (NULL for an ordinary pair).
_PAIRS_SQL = """
SELECT s.name AS study, p.key AS prompt_id, p.text AS prompt, r.name AS rater, j.criterion,
       ml.name AS left_model, mr.name AS right_model, j.outcome, il.sample,
       j.left_image AS left_image_id, j.right_image AS right_image_id, p.dimension,
       j.seconds, j.created_at, j.pair_id, mg.name AS gold_model
FROM current_pair_judgments j
JOIN pairs pr ON pr.id = j.pair_id
JOIN prompts p ON p.id = pr.prompt_id
JOIN images il ON il.id = j.left_image
JOIN models ml ON ml.id = il.model_id
JOIN images ir ON ir.id = j.right_image
JOIN models mr ON mr.id = ir.model_id
JOIN raters r ON r.id = j.rater_id
JOIN studies s ON s.id = j.study_id
LEFT JOIN images ig ON ig.id = pr.better
LEFT JOIN models mg ON mg.id = ig.model_id
WHERE j.study_id = ?
ORDER BY p.position, r.name, j.pair_id, j.criterion
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


def ratings_frame(db: Database, study_id: int, *, categorical: bool = False,
                  times: bool = True) -> pd.DataFrame:
    """One row per current rating (the latest revision of image × rater × criterion).

    Args:
        db: The database.
        study_id: Store id of the study.
        categorical: Key text columns (study, prompt_id, prompt, model, rater, criterion,
            dimension) as pandas Categoricals, which ``concord.stats`` groups on directly.
        times: Include ``created_at`` (the export's ``time``); the statistics never read it.

    Returns:
        ``study, prompt_id, prompt, model, sample, image_id, rater, criterion, value,
        seconds, created_at, dimension``, ordered by prompt position, model, sample,
        rater name and criterion.
    """
    rows = current(rating_rows(db, study_id, times=times))
    info = images_frame(db, study_id)
    at = pd.Index(info["image_id"]).get_indexer(rows["image_id"])
    rater_codes, rater_names = _rater_codes(db, rows["rater_id"])
    order = np.lexsort((rows["criterion"].codes, rater_codes, at))  # info is sorted already
    at = at[order]
    name = db.execute("SELECT name FROM studies WHERE id = ?", [study_id]).fetchone()
    out = pd.DataFrame({
        "study": pd.Categorical.from_codes(np.zeros(len(at), np.int64),
                                           [name[0] if name else ""]),
        "prompt_id": _take(info["prompt_id"], at), "prompt": _take(info["prompt"], at),
        "model": _take(info["model"], at),
        "sample": info["sample"].to_numpy(dtype=np.int64)[at],
        "image_id": rows["image_id"][order],
        "rater": pd.Categorical.from_codes(rater_codes[order], rater_names),
        "criterion": rows["criterion"][order], "value": rows["value"][order],
        "seconds": rows["seconds"][order],
        **({"created_at": rows["created_at"][order]} if times else {}),
        "dimension": _take(info["dimension"], at),
    })
    if categorical:
        return out
    return _as_text(out)


def _as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Categorical text columns as ``str``, as ``pd.read_sql_query`` returns them."""
    text = [c for c in (*_TEXT, "created_at") if c in frame.columns]
    if frame.empty:  # an empty query result has object columns
        return frame.astype(dict.fromkeys(text, object))
    out = frame.astype(dict.fromkeys(text, "str"))
    for col in text:
        if out[col].isna().all():  # a column of NULLs only stays object (None)
            out[col] = pd.Series([None] * len(out), dtype=object, index=out.index)
    return out


def _rater_codes(db: Database, rater_ids: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Codes of the raters' names (categories sorted by name) per rating."""
    present = np.unique(rater_ids)
    names = dict(db.execute("SELECT id, name FROM raters").fetchall())
    labels = [names[int(r)] for r in present]
    rank = np.argsort(np.argsort(np.array(labels, dtype=object), kind="stable"))
    return rank[np.searchsorted(present, rater_ids)], sorted(labels)


def _take(column: pd.Series, at: np.ndarray) -> pd.Categorical:
    codes, uniques = pd.factorize(column, sort=True)
    return pd.Categorical.from_codes(codes[at], uniques)


def images_frame(db: Database, study_id: int) -> pd.DataFrame:
    """One row per image: ``image_id, sample, path`` (relative to the study root),
    ``prompt_pk, prompt_id, prompt, dimension, position, model_pk, model``."""
    return read_frame(db, _IMAGE_INFO_SQL, [study_id])


def rankings_frame(db: Database, study_id: int) -> pd.DataFrame:
    """One row per ranked image of a current ranking."""
    return read_frame(db, _RANKINGS_SQL, [study_id])


def pairs_frame(db: Database, study_id: int) -> pd.DataFrame:
    """One row per current pairwise judgment: the Pairs frame of ``docs/data-model.md``
    (``study, prompt_id, rater, criterion, left_model, right_model, outcome,
    left_image_id, right_image_id, dimension, seconds``) plus ``prompt, sample,
    created_at, pair_id`` and ``gold_model`` (the known better model of a gold pair, else
    None)."""
    df = read_frame(db, _PAIRS_SQL, [study_id])
    df["seconds"] = df["seconds"].astype(float)
    return df


def scores_frame(db: Database, study_id: int) -> pd.DataFrame:
    """One row per stored metric score, with prompt and question metadata."""
    df = read_frame(db, _SCORES_SQL, [study_id])
    df["value"] = df["value"].astype(float)
    return df


def gold_frame(db: Database, study_id: int) -> pd.DataFrame:
    """Gold expectations: image_id, unit ('image' or 'prompt'), criterion, expected, tolerance.

    A 'prompt' row is a ranking gold: in its prompt's ranking set, image ``image_id`` must
    get rank ``expected`` ± ``tolerance`` (1 = a known best image).
    """
    return read_frame(db, "SELECT g.image_id, g.unit, g.criterion, g.expected, g.tolerance"
                      " FROM gold g JOIN images i ON i.id = g.image_id WHERE i.study_id = ?",
                      [study_id])


def data_version(db: Database) -> tuple[str, ...]:
    """A cheap fingerprint that changes whenever ratings, rankings, pair judgments or scores
    change.

    Used as a cache key by the dashboard ("numbers are cached per database change").
    """
    row = db.execute(
        "SELECT (SELECT COALESCE(MAX(id), 0) FROM ratings), (SELECT COALESCE(MAX(id), 0)"
        " FROM rankings), (SELECT COUNT(*) FROM metric_scores), (SELECT MAX(created_at)"
        " FROM metric_scores), (SELECT COALESCE(MAX(id), 0) FROM audit_log),"
        " (SELECT COALESCE(MAX(id), 0) FROM pair_judgments)").fetchone()
    return tuple(str(x) for x in row)
