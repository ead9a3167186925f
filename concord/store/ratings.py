"""Ratings and rankings: append-only revisions; the current value is a view.

A submission id (a nonce minted when the form is shown) makes every write
idempotent: the same submission posted twice stores one revision.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from sqlite_utils import Database

from concord.store.db import dumps, now
from concord.store.imports.batches import visible


def current_values(db: Database, image_id: int, rater_id: int) -> dict[str, float]:
    """A rater's current rating of one image, by criterion."""
    return {
        r[0]: r[1]
        for r in db.execute(
            "SELECT criterion, value FROM current_ratings WHERE image_id = ? AND rater_id = ?",
            [image_id, rater_id],
        ).fetchall()
    }


def last_values(db: Database, image_id: int, rater_id: int) -> dict[str, float]:
    """A rater's latest non-empty value per criterion of one image, even if undone since.

    What a rater who pressed Undo sees again: their earlier choices, ready to change.
    """
    return {
        r[0]: r[1]
        for r in db.execute(
            "SELECT r.criterion, r.value FROM ratings r WHERE r.image_id = ? AND r.rater_id = ?"
            f" AND r.value IS NOT NULL AND {visible('r')} AND NOT EXISTS (SELECT 1 FROM"
            " ratings x WHERE x.image_id = r.image_id AND x.rater_id = r.rater_id"
            " AND x.criterion = r.criterion AND x.value IS NOT NULL AND x.revision > r.revision"
            f" AND {visible('x')})", [image_id, rater_id],
        ).fetchall()
    }


def submission_exists(db: Database, submission: str, table: str = "ratings") -> bool:
    """Whether a submission id was already stored (double click, rerun, replay)."""
    if table not in {"ratings", "rankings"}:
        raise ValueError(f"unknown table {table!r}")
    return db.execute(f"SELECT 1 FROM {table} WHERE submission = ? LIMIT 1",
                      [submission]).fetchone() is not None


def insert_rating(db: Database, study_id: int, image_id: int, rater_id: int,
                  values: Mapping[str, float | None], *, submission: str, action: str,
                  seconds: float | None) -> int:
    """Append one revision per criterion; returns how many rows were added.

    Runs inside the caller's transaction. Rows of an already stored submission are
    ignored, so a replayed submit adds nothing.
    """
    stamp, added = now(), 0
    for criterion, value in values.items():
        rev = db.execute(
            "SELECT COALESCE(MAX(revision), 0) + 1 FROM ratings WHERE image_id = ? AND"
            " rater_id = ? AND criterion = ?", [image_id, rater_id, criterion],
        ).fetchone()[0]
        # Only a replayed submission is ignored; any other conflict (a revision taken by a
        # concurrent writer) must fail loudly rather than drop this rating.
        cur = db.execute(
            "INSERT INTO ratings (study_id, image_id, rater_id, criterion, value,"
            " revision, submission, action, seconds, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (submission, criterion) DO NOTHING",
            [study_id, image_id, rater_id, criterion, value, rev, submission, action, seconds,
             stamp],
        )
        added += cur.rowcount
    return added


def last_new_rating(db: Database, study_id: int, rater_id: int) -> tuple[int, str] | None:
    """(image_id, submission) of the rater's latest first-time rating still in effect."""
    row = db.execute(
        "SELECT r.image_id, r.submission FROM ratings r WHERE r.study_id = ? AND r.rater_id = ?"
        " AND r.action = 'rate' AND r.revision = (SELECT MAX(revision) FROM ratings x WHERE"
        " x.image_id = r.image_id AND x.rater_id = r.rater_id AND x.criterion = r.criterion"
        f" AND {visible('x')}) ORDER BY r.id DESC LIMIT 1", [study_id, rater_id],
    ).fetchone()
    return (row[0], row[1]) if row else None


def rating_history(db: Database, study_id: int, rater_id: int) -> list[dict]:
    """Every revision a rater made in a study, newest first (for the history list)."""
    return list(db.query(
        "SELECT r.image_id, i.public_id, p.key AS prompt_id, p.text AS prompt, r.criterion,"
        " r.value, r.revision, r.action, r.created_at FROM ratings r"
        " JOIN images i ON i.id = r.image_id JOIN prompts p ON p.id = i.prompt_id"
        f" WHERE r.study_id = ? AND r.rater_id = ? AND {visible('r')} ORDER BY r.id DESC",
        [study_id, rater_id]))


def rated_images(db: Database, study_id: int, rater_id: int) -> list[dict]:
    """The images a rater currently has ratings for, latest first, with their values."""
    rows = db.query(
        "SELECT c.image_id, i.public_id, i.path, p.key AS prompt_id, p.text AS prompt,"
        " json_group_object(c.criterion, c.value) AS vals, MAX(c.created_at) AS at"
        " FROM current_ratings c JOIN images i ON i.id = c.image_id"
        " JOIN prompts p ON p.id = i.prompt_id WHERE c.study_id = ? AND c.rater_id = ?"
        " GROUP BY c.image_id, i.public_id, i.path, p.key, p.text ORDER BY at DESC",
        [study_id, rater_id])
    return [{**r, "vals": json.loads(r["vals"])} for r in rows]


def current_ranking(db: Database, prompt_id: int, rater_id: int, criterion: str) -> dict | None:
    """A rater's current ranking of one prompt: {image_id: rank}, display order, id."""
    row = db.execute(
        "SELECT id, display_order FROM current_rankings WHERE prompt_id = ? AND rater_id = ?"
        " AND criterion = ?", [prompt_id, rater_id, criterion],
    ).fetchone()
    if row is None:
        return None
    ranks = dict(db.execute("SELECT image_id, rank FROM ranking_items WHERE ranking_id = ?",
                            [row[0]]).fetchall())
    return {"id": row[0], "ranks": ranks, "display_order": json.loads(row[1])}


def insert_ranking(db: Database, study_id: int, prompt_id: int, rater_id: int, criterion: str,
                   ranks: Mapping[int, float], display_order: list[int], *, submission: str,
                   action: str, seconds: float | None) -> bool:
    """Append a ranking revision (or a retraction when ``ranks`` is empty).

    Returns False when the submission was already stored.
    """
    rev = db.execute(
        "SELECT COALESCE(MAX(revision), 0) + 1 FROM rankings WHERE prompt_id = ? AND"
        " rater_id = ? AND criterion = ?", [prompt_id, rater_id, criterion],
    ).fetchone()[0]
    cur = db.execute(
        "INSERT INTO rankings (study_id, prompt_id, rater_id, criterion, revision,"
        " submission, action, retracted, display_order, seconds, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (submission) DO NOTHING"
        " RETURNING id",
        [study_id, prompt_id, rater_id, criterion, rev, submission, action, int(not ranks),
         dumps(display_order), seconds, now()],
    )
    row = cur.fetchone()
    if row is None:
        return False
    position = {image_id: i for i, image_id in enumerate(display_order)}
    db.conn.executemany(
        "INSERT INTO ranking_items (ranking_id, image_id, rank, position) VALUES (?, ?, ?, ?)",
        [(row[0], image_id, rank, position.get(image_id, -1))
         for image_id, rank in ranks.items()],
    )
    return True


def last_new_ranking(db: Database, study_id: int, rater_id: int) -> tuple[int, str] | None:
    """(prompt_id, criterion) of the rater's latest first-time ranking still in effect."""
    row = db.execute(
        "SELECT k.prompt_id, k.criterion FROM current_rankings k WHERE k.study_id = ? AND"
        " k.rater_id = ? AND k.action = 'rank' ORDER BY k.id DESC LIMIT 1", [study_id, rater_id],
    ).fetchone()
    return (row[0], row[1]) if row else None


def ranking_history(db: Database, study_id: int, rater_id: int) -> list[dict]:
    """Every ranking revision a rater made in a study, newest first."""
    return list(db.query(
        "SELECT k.prompt_id, p.key, p.text AS prompt, k.criterion, k.revision, k.action,"
        " k.retracted, k.created_at FROM rankings k JOIN prompts p ON p.id = k.prompt_id"
        " WHERE k.study_id = ? AND k.rater_id = ? ORDER BY k.id DESC", [study_id, rater_id]))


def current_rating_keys(db: Database, study_id: int | None = None) -> list[tuple[int, int, str]]:
    """(image, rater, criterion) of every current rating (of one study, or all), one row
    each (duplicates kept)."""
    where, args = ("WHERE study_id = ?", [study_id]) if study_id is not None else ("", [])
    return [tuple(r) for r in db.execute(
        f"SELECT image_id, rater_id, criterion FROM current_ratings {where}", args).fetchall()]


def max_raters_per_image(db: Database, study_id: int | None = None) -> int:
    """The largest number of distinct raters with a current rating on one image."""
    where, args = ("WHERE study_id = ?", [study_id]) if study_id is not None else ("", [])
    row = db.execute("SELECT MAX(n) FROM (SELECT COUNT(DISTINCT rater_id) AS n FROM"
                     f" current_ratings {where} GROUP BY image_id) AS per", args).fetchone()
    return int(row[0] or 0)
