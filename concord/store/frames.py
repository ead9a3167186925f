"""Tidy DataFrames of a study for stats and export (columns: docs/data-model.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlite_utils import Database

# Ratings are read as ids from the ratings table alone and joined to names in pandas: at a
# million ratings, letting SQLite join, filter revisions (a lookup per row) and sort text
# took ~6 s; this takes under 1 s.
# Each column comes back as ONE comma-separated text that numpy parses in C: a million
# row tuples through the sqlite3 module cost twice as long. SQLite prints a REAL with 15
# significant digits; values are snapped back to the exact stored levels (_snap), seconds
# keep 15 digits (printf with 17 digits would double the query time). Chunks of ids keep
# each text far below SQLite's 1 GB string limit; one query per chunk keeps the columns
# aligned (every aggregate sees the same rows in the same order).
_SEP = "\x1f"
_RATING_COLUMNS_SQL = """
SELECT COUNT(*), group_concat(image_id), group_concat(rater_id), group_concat(revision),
       group_concat(criterion, char(31)), group_concat(ifnull(value, 'nan')),
       group_concat(ifnull(seconds, 'nan'))
"""
_TIME_COLUMN = ", group_concat(created_at, char(31))"
# Rows of a pending import batch are not there yet (concord/store/batches.py).
_RATING_CHUNK_WHERE = (" FROM ratings WHERE study_id = ? AND id >= ? AND id < ? AND (batch IS NULL"
                       " OR batch NOT IN (SELECT id FROM import_batches WHERE state = 'pending'))")
_CHUNK_IDS = 2_000_000
_DISTINCT_VALUES_SQL = (
    "SELECT DISTINCT value FROM ratings WHERE study_id = ? AND value IS NOT NULL")
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
    rows = _current(_rating_rows(db, study_id, times=times))
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


def _rating_rows(db: Database, study_id: int, *, times: bool) -> dict[str, np.ndarray]:
    """Every revision of the study's ratings as arrays (NULL values, i.e. undos, are NaN)."""
    # Two statements: SQLite answers a lone MIN or MAX from the index in microseconds, but
    # both in one statement scan every rating of the study (0.1-0.2 s at a million).
    lo, hi = (db.execute(f"SELECT {f}(id) FROM ratings WHERE study_id = ?",
                         [study_id]).fetchone()[0] for f in ("MIN", "MAX"))
    sql = _RATING_COLUMNS_SQL + (_TIME_COLUMN if times else "") + _RATING_CHUNK_WHERE
    parts = [_parse_chunk(db.execute(sql, [study_id, start, start + _CHUNK_IDS]).fetchone(),
                          times=times)
             for start in range(lo or 0, (hi or -1) + 1, _CHUNK_IDS)]
    parts = [p for p in parts if p is not None] or [_parse_chunk((0,) + ("",) * 7, times=times)]
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    out["criterion"] = pd.Categorical(out["criterion"])
    exact = np.array([r[0] for r in db.execute(_DISTINCT_VALUES_SQL, [study_id])], float)
    out["value"] = _snap(out["value"], np.sort(exact))
    return out


def _parse_chunk(row: tuple, *, times: bool) -> dict[str, np.ndarray] | None:
    n = row[0]
    if n == 0 and row[1] is None:  # an id range without ratings of this study
        return None

    def numbers(text: str | None, dtype: type) -> np.ndarray:
        # C-level parsing of the comma-separated text SQLite built.
        return np.fromstring(text or "", sep=",", dtype=dtype) if n else np.zeros(0, dtype)

    def texts(text: str | None) -> np.ndarray:
        return np.array(text.split(_SEP) if n else [], dtype=object)

    out = {"image_id": numbers(row[1], np.int64), "rater_id": numbers(row[2], np.int64),
           "revision": numbers(row[3], np.int64), "criterion": texts(row[4]),
           "value": numbers(row[5], float), "seconds": numbers(row[6], float)}
    if times:
        out["created_at"] = texts(row[7])
    if any(len(v) != n for v in out.values()):
        raise RuntimeError(f"ratings chunk: expected {n} values per column, got "
                           f"{ {k: len(v) for k, v in out.items()} }")
    return out


def _snap(values: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Replace each parsed value by the stored value it was printed from.

    A 15-digit text is within 5e-16 (relative) of the stored double, so the nearest of the
    study's distinct stored values is the one printed, unless two stored values agree to
    15 digits (rubric levels are far apart).
    """
    off = ~np.isnan(values) & ~np.isin(values, exact)
    if not off.any():
        return values
    if len(exact) == 1:
        values[off] = exact[0]
        return values
    pos = np.clip(np.searchsorted(exact, values[off]), 1, len(exact) - 1)
    low, high = exact[pos - 1], exact[pos]
    values[off] = np.where(values[off] - low <= high - values[off], low, high)
    return values


def _current(rows: dict) -> dict:
    """Keep the latest revision of each (image, rater, criterion), then drop undone ones."""
    n = len(rows["image_id"])
    keep = np.ones(n, dtype=bool)
    if n and rows["revision"].max() > 1:
        keys = (rows["image_id"], rows["rater_id"], rows["criterion"].codes)
        order = np.lexsort((rows["revision"], *reversed(keys)))
        last = np.ones(n, dtype=bool)
        same = np.ones(n - 1, dtype=bool)
        for key in keys:
            same &= key[order][1:] == key[order][:-1]
        last[:-1] = ~same
        keep = np.zeros(n, dtype=bool)
        keep[order[last]] = True
    keep &= ~np.isnan(rows["value"])
    if keep.all():
        return rows
    return {k: v[keep] for k, v in rows.items()}


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
    return pd.read_sql_query(_IMAGE_INFO_SQL, db.conn, params=[study_id])


def rankings_frame(db: Database, study_id: int) -> pd.DataFrame:
    """One row per ranked image of a current ranking."""
    return pd.read_sql_query(_RANKINGS_SQL, db.conn, params=[study_id])


def pairs_frame(db: Database, study_id: int) -> pd.DataFrame:
    """One row per current pairwise judgment: the Pairs frame of ``docs/data-model.md``
    (``study, prompt_id, rater, criterion, left_model, right_model, outcome,
    left_image_id, right_image_id, dimension, seconds``) plus ``prompt, sample,
    created_at, pair_id`` and ``gold_model`` (the known better model of a gold pair, else
    None)."""
    df = pd.read_sql_query(_PAIRS_SQL, db.conn, params=[study_id])
    df["seconds"] = df["seconds"].astype(float)
    return df


def scores_frame(db: Database, study_id: int) -> pd.DataFrame:
    """One row per stored metric score, with prompt and question metadata."""
    df = pd.read_sql_query(_SCORES_SQL, db.conn, params=[study_id])
    df["value"] = df["value"].astype(float)
    return df


def gold_frame(db: Database, study_id: int) -> pd.DataFrame:
    """Gold expectations: image_id, unit ('image' or 'prompt'), criterion, expected, tolerance.

    A 'prompt' row is a ranking gold: in its prompt's ranking set, image ``image_id`` must
    get rank ``expected`` ± ``tolerance`` (1 = a known best image).
    """
    return pd.read_sql_query(
        "SELECT g.image_id, g.unit, g.criterion, g.expected, g.tolerance FROM gold g JOIN images i"
        " ON i.id = g.image_id WHERE i.study_id = ?", db.conn, params=[study_id])


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
