"""Adjudicated values (migration ``m901_adjudications``): append-only, apart from ratings.

``unit`` and ``item_id`` name what was adjudicated: ``image`` (an image's score on a
criterion), ``prompt`` (a ranking set: value = model names best first) or ``pair`` (a
scheduled pair: value ``a``, ``b``, ``tie`` or ``both_bad``, where a/b are the pair's
``image_a``/``image_b``). ``value`` is JSON; NULL clears the item.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlite_utils import Database

from concord.store.db import dumps, loads, now
from concord.store.sqlframe import read_frame

UNITS = ("image", "prompt", "pair")

# The item's latest row, if it has a value.
_CURRENT_SQL = """
SELECT a.unit, a.item_id, a.criterion, a.value, a.note, a.actor, a.created_at
FROM adjudications a
WHERE a.study_id = ? AND a.value IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM adjudications x WHERE x.study_id = a.study_id AND x.unit = a.unit
    AND x.item_id = a.item_id AND x.criterion = a.criterion AND x.id > a.id)
ORDER BY a.unit, a.item_id, a.criterion
"""

_IMAGES_SQL = """
SELECT i.id AS item_id, p.key AS prompt_id, p.text AS prompt, m.name AS model, i.sample,
       NULL AS left_model, NULL AS right_model
FROM images i JOIN prompts p ON p.id = i.prompt_id JOIN models m ON m.id = i.model_id
WHERE i.study_id = ?
"""
_PROMPTS_SQL = """
SELECT p.id AS item_id, p.key AS prompt_id, p.text AS prompt, NULL AS model, NULL AS sample,
       NULL AS left_model, NULL AS right_model
FROM prompts p WHERE p.study_id = ?
"""
_PAIRS_SQL = """
SELECT pr.id AS item_id, p.key AS prompt_id, p.text AS prompt, NULL AS model, ia.sample,
       ma.name AS left_model, mb.name AS right_model
FROM pairs pr JOIN prompts p ON p.id = pr.prompt_id
JOIN images ia ON ia.id = pr.image_a JOIN models ma ON ma.id = ia.model_id
JOIN images ib ON ib.id = pr.image_b JOIN models mb ON mb.id = ib.model_id
WHERE pr.study_id = ?
"""


def record(db: Database, study_id: int, unit: str, item_id: int, criterion: str,
           value: Any, *, note: str, actor: str) -> None:
    """Append an adjudication (``value`` None clears it); inside the caller's transaction."""
    db.execute(
        "INSERT INTO adjudications (study_id, unit, item_id, criterion, value, note, actor,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [study_id, unit, item_id, criterion, None if value is None else dumps(value), note,
         actor, now()])


def current(db: Database, study_id: int) -> list[dict]:
    """The study's current adjudications (value decoded from JSON)."""
    rows = db.execute(_CURRENT_SQL, [study_id]).fetchall()
    keys = ("unit", "item_id", "criterion", "value", "note", "actor", "created_at")
    out = [dict(zip(keys, r, strict=True)) for r in rows]
    for row in out:
        row["value"] = loads(row["value"])
    return out


def item_exists(db: Database, study_id: int, unit: str, item_id: int) -> bool:
    """Whether ``item_id`` is an image, prompt or pair (by ``unit``) of the study."""
    table = {"image": "images", "prompt": "prompts", "pair": "pairs"}[unit]
    return db.execute(f"SELECT 1 FROM {table} WHERE id = ? AND study_id = ?",
                      [item_id, study_id]).fetchone() is not None


def pair_images(db: Database, pair_id: int) -> tuple[int, int]:
    """``(image_a, image_b)`` of a scheduled pair."""
    a, b = db.execute("SELECT image_a, image_b FROM pairs WHERE id = ?", [pair_id]).fetchone()
    return int(a), int(b)


def models_of_prompt(db: Database, prompt_id: int) -> list[str]:
    """The models with an image of a prompt (its ranking set), in study order."""
    return [r[0] for r in db.execute(
        "SELECT m.name FROM images i JOIN models m ON m.id = i.model_id"
        " WHERE i.prompt_id = ? GROUP BY m.id, m.name ORDER BY m.id", [prompt_id])]


def find_image(db: Database, study_id: int, prompt_key: str, model: str,
               sample: int) -> int | None:
    """The id of the study's image of (prompt id, model, sample), if any."""
    row = db.execute(
        "SELECT i.id FROM images i JOIN prompts p ON p.id = i.prompt_id JOIN models m ON"
        " m.id = i.model_id WHERE i.study_id = ? AND p.key = ? AND m.name = ? AND"
        " i.sample = ?", [study_id, prompt_key, model, sample]).fetchone()
    return None if row is None else int(row[0])


def find_prompt(db: Database, study_id: int, prompt_key: str) -> int | None:
    """The store id of the study's prompt ``prompt_key``, if any."""
    row = db.execute("SELECT id FROM prompts WHERE study_id = ? AND key = ?",
                     [study_id, prompt_key]).fetchone()
    return None if row is None else int(row[0])


def targets(db: Database, study_id: int, unit: str) -> pd.DataFrame:
    """What each item of ``unit`` is: ``item_id, prompt_id, prompt, model, sample,
    left_model, right_model`` (a pair's models as image_a / image_b)."""
    sql = {"image": _IMAGES_SQL, "prompt": _PROMPTS_SQL, "pair": _PAIRS_SQL}[unit]
    return read_frame(db, sql, [study_id])


def image_path(db: Database, image_id: int) -> str | None:
    """An image's file path relative to its study's root (None for a ratings-only image)."""
    row = db.execute("SELECT path FROM images WHERE id = ?", [int(image_id)]).fetchone()
    return row[0] if row else None


def model_of_image(db: Database, image_id: int) -> str:
    """The model name of an image."""
    return db.execute("SELECT m.name FROM images i JOIN models m ON m.id = i.model_id"
                      " WHERE i.id = ?", [int(image_id)]).fetchone()[0]
