"""Every stored revision of a study's ratings as numpy columns, read fast.

Ratings are read as ids from the ratings table alone and joined to names in pandas
(:func:`concord.store.frames.ratings_frame`): at a million ratings, letting SQLite join,
filter revisions (a lookup per row) and sort text took ~6 s.

Each column comes back as ONE comma-separated text that numpy parses in C: a million row
tuples through the sqlite3 module cost twice as long. SQLite prints a REAL with 15
significant digits; values are snapped back to the exact stored levels (:func:`_snap`),
seconds keep 15 digits (printf with 17 digits would double the query time). Ids are read in
ranges ("chunks"): each text stays far below SQLite's 1 GB string limit, and one query per
range keeps its columns aligned (every aggregate sees the same rows in the same order).

SQLite spends most of the time turning numbers into text, and it does so without the GIL:
a large study's ranges are read on their own read-only connections in threads, one per
core (2.9 s -> about 1.9 s for a million ratings on two cores).
"""

from __future__ import annotations

import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from sqlite_utils import Database

from concord.store import catalog, engine
from concord.store.imports import batches

_SEP = "\x1f"
# Text columns are joined by ``:sep`` (_SEP, bound: PostgreSQL has no char()).
_COLUMNS_SQL = """
SELECT COUNT(*), group_concat(image_id), group_concat(rater_id), group_concat(revision),
       group_concat(criterion, :sep), group_concat(ifnull(value, 'nan')),
       group_concat(ifnull(seconds, 'nan'))
"""
_TIME_COLUMN = ", group_concat(created_at, :sep)"
# The same columns with PostgreSQL's own string_agg: the schema's group_concat there is a
# SQL-language aggregate that copies its growing text at every row (quadratic: 200,000
# ratings took 4-5 minutes), string_agg appends in place. A NULL value or seconds is 'nan'.
_PG_COLUMNS_SQL = """
SELECT COUNT(*), string_agg(CAST(image_id AS TEXT), ','), string_agg(CAST(rater_id AS TEXT),
       ','), string_agg(CAST(revision AS TEXT), ','), string_agg(criterion, :sep),
       string_agg(COALESCE(CAST(value AS TEXT), 'nan'), ','),
       string_agg(COALESCE(CAST(seconds AS TEXT), 'nan'), ',')
"""
_PG_TIME_COLUMN = ", string_agg(created_at, :sep)"
_RANGE_WHERE = " FROM ratings WHERE study_id = :study AND id >= :lo AND id < :hi"
_DISTINCT_VALUES_SQL = (
    "SELECT DISTINCT value FROM ratings WHERE study_id = ? AND value IS NOT NULL")
_CHUNK_IDS = 2_000_000
# Below this many ids one query on the caller's connection beats opening others.
_PARALLEL_MIN_IDS = 200_000
_TIMEOUT_S = 30.0
_WORKERS = min(os.cpu_count() or 1, 4)


def rating_rows(db: Database, study_id: int, *, times: bool) -> dict[str, np.ndarray]:
    """Every revision of the study's ratings: ``image_id, rater_id, revision, criterion``
    (a Categorical), ``value`` (NULL, i.e. an undo, is NaN), ``seconds`` and, with
    ``times``, ``created_at``; in id order."""
    # Two statements: SQLite answers a lone MIN or MAX from the index in microseconds, but
    # both in one statement scan every rating of the study (0.1-0.2 s at a million).
    lo, hi = (db.execute(f"SELECT {f}(id) FROM ratings WHERE study_id = ?",
                         [study_id]).fetchone()[0] for f in ("MIN", "MAX"))
    columns, time_column = ((_PG_COLUMNS_SQL, _PG_TIME_COLUMN) if engine.is_postgres(db)
                            else (_COLUMNS_SQL, _TIME_COLUMN))
    sql = columns + (time_column if times else "") + _RANGE_WHERE + _not_pending(db)
    large = lo is not None and hi - lo + 1 >= _PARALLEL_MIN_IDS
    path = _shareable_path(db) if large else None
    ranges = [{"sep": _SEP, "study": study_id, "lo": start, "hi": end}
              for start, end in _ranges(lo, hi, parallel=path is not None)]
    raw, exact = (_read_parallel(db, path, sql, ranges, study_id) if path is not None
                  else (None, None))
    if raw is None:
        raw = [db.execute(sql, r).fetchone() for r in ranges]
    if exact is None:
        exact = _distinct_values(db, study_id)
    # An id range without ratings of this study has no texts at all.
    parts = [_parse_chunk(row, times=times) for row in raw if row[0] or row[1] is not None]
    parts = parts or [_parse_chunk((0,) + ("",) * 7, times=times)]
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    out["criterion"] = pd.Categorical(out["criterion"])
    out["value"] = _snap(out["value"], exact)
    return out


def _not_pending(db: Database) -> str:
    """SQL (`` AND …``) leaving out the rows of import batches pending now: they are not
    there yet (concord/store/imports/batches.py). The ids are read once (a few at most),
    so that every range, on whichever connection, leaves out the same batches even if one
    is published meanwhile."""
    pending = [int(r[0]) for r in db.execute(batches.PENDING_IDS)]
    if not pending:
        return ""
    return f" AND (batch IS NULL OR batch NOT IN ({', '.join(map(str, pending))}))"


def _ranges(lo: int | None, hi: int | None, *, parallel: bool) -> list[tuple[int, int]]:
    """Half-open id ranges covering ``lo..hi``: at most ``_CHUNK_IDS`` ids each, and, when
    ``parallel``, one per core (up to 4) for a large study."""
    if lo is None or hi is None:
        return []
    span = hi - lo + 1
    parts = -(-span // _CHUNK_IDS)
    if parallel:
        parts = max(parts, _WORKERS)
    step = -(-span // parts)
    return [(start, min(start + step, hi + 1)) for start in range(lo, hi + 1, step)]


def _shareable_path(db: Database) -> str | None:
    """The database file, when other connections would read what this one sees: not an
    in-memory database, and no transaction of this connection is open (its uncommitted
    rows are invisible elsewhere)."""
    if db.conn.in_transaction:
        return None
    file = catalog.database_file(db)  # "" on PostgreSQL: the caller's connection reads
    return file if file and Path(file).is_file() else None


def _read_parallel(db: Database, path: str, sql: str, ranges: list[dict],
                   study_id: int) -> tuple[list[tuple] | None, np.ndarray]:
    """Each range's row, read in threads, and the distinct values, read on this thread
    meanwhile. The rows are None when another connection could not read the file (replaced,
    unlinked or made unreadable since it was opened): the caller then reads them on its own
    connection, which still sees it."""
    with ThreadPoolExecutor(max_workers=_WORKERS) as pool:
        futures = [pool.submit(_read_range, path, sql, r) for r in ranges]
        exact = _distinct_values(db, study_id)
        try:
            return [f.result() for f in futures], exact
        except sqlite3.Error:
            return None, exact


def _read_range(path: str, sql: str, params: dict) -> tuple:
    """One range's row on a read-only connection of this thread's own."""
    conn = sqlite3.connect(Path(path).as_uri() + "?mode=ro", uri=True, timeout=_TIMEOUT_S)
    try:
        return conn.execute(sql, params).fetchone()
    finally:
        conn.close()


def _distinct_values(db: Database, study_id: int) -> np.ndarray:
    return np.sort(np.array([r[0] for r in db.execute(_DISTINCT_VALUES_SQL, [study_id])],
                            float))


def _parse_chunk(row: tuple, *, times: bool) -> dict[str, np.ndarray]:
    n = row[0]

    def numbers(text: str | None, dtype: type) -> np.ndarray:
        # C-level parsing of the comma-separated text SQLite built.
        return np.fromstring(text or "", sep=",", dtype=dtype) if n else np.zeros(0, dtype)

    def texts(text: str | None) -> np.ndarray:
        return np.array(text.split(_SEP) if n and text is not None else [], dtype=object)

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


def current(rows: dict) -> dict:
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
