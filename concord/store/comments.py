"""Raters' free-text comments, one per label revision (migration ``m1302_comments``).

A comment belongs to the submission it came with (a rating, ranking or pair judgment
revision), so the label's history holds every comment ever written; the current comment
of an item is the one of the rater's current revision. A comment of a pending import batch
is invisible, like its label (concord/store/imports/batches.py).
"""

from __future__ import annotations

import pandas as pd
from sqlite_utils import Database

from concord.store.db import now
from concord.store.imports.batches import visible
from concord.store.sqlframe import read_frame

# The current comment of each label: the comment of the submission of the rater's current
# revision (for a rating, of any of its criteria's rows), keyed as the export's frames are.
_CURRENT_SQL = f"""
SELECT 'rating' AS kind, CAST(r.image_id AS TEXT) AS key, NULL AS criterion, w.name AS rater,
       (SELECT c.text FROM comments c WHERE c.submission IN (SELECT x.submission FROM
        current_ratings x WHERE x.image_id = r.image_id AND x.rater_id = r.rater_id)
        AND {visible("c")} ORDER BY c.id DESC LIMIT 1) AS comment
FROM current_ratings r JOIN raters w ON w.id = r.rater_id
WHERE r.study_id = :study AND EXISTS (SELECT 1 FROM comments c WHERE c.study_id = :study
    AND c.unit = 'image' AND c.item_id = r.image_id AND c.rater_id = r.rater_id)
GROUP BY r.image_id, r.rater_id, w.name
UNION ALL
SELECT 'ranking', p.key, k.criterion, w.name, c.text
FROM current_rankings k JOIN comments c ON c.submission = k.submission
JOIN prompts p ON p.id = k.prompt_id JOIN raters w ON w.id = k.rater_id
WHERE k.study_id = :study AND {visible("c")}
UNION ALL
SELECT 'pair', CAST(j.pair_id AS TEXT), j.criterion, w.name, c.text
FROM current_pair_judgments j JOIN comments c ON c.submission = j.submission
JOIN raters w ON w.id = j.rater_id
WHERE j.study_id = :study AND {visible("c")}
"""


def insert(db: Database, study_id: int, rater_id: int, unit: str, item_id: int,
           submission: str, text: str, *, batch: int | None = None) -> None:
    """Keep the comment of one submission (inside the caller's transaction)."""
    db.execute("INSERT INTO comments (study_id, rater_id, unit, item_id,"
               " submission, text, created_at, batch) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
               " ON CONFLICT DO NOTHING",
               [study_id, rater_id, unit, item_id, submission, text, now(), batch])


def latest(db: Database, study_id: int, rater_id: int, unit: str, item_id: int) -> str:
    """The rater's latest comment on an item ("" when none): shown again on an edit."""
    row = db.execute(f"SELECT text FROM comments c WHERE study_id = ? AND rater_id = ? AND"
                     f" unit = ? AND item_id = ? AND {visible('c')} ORDER BY id DESC LIMIT 1",
                     [study_id, rater_id, unit, item_id]).fetchone()
    return row[0] if row else ""


def current(db: Database, study_id: int) -> pd.DataFrame:
    """``kind`` (rating/ranking/pair), ``key`` (the image id, the prompt's id or the pair
    id), ``criterion`` (None for ratings), ``rater`` (name) and ``comment`` of every
    current label that has one."""
    frame = read_frame(db, _CURRENT_SQL, {"study": study_id})
    frame = frame[frame["comment"].notna()].reset_index(drop=True)
    # One column of one type in SQL (PostgreSQL's UNION needs it): ids back to integers.
    ids = frame["kind"] != "ranking"
    frame["key"] = [int(k) if is_id else k for k, is_id in zip(frame["key"], ids, strict=True)]
    return frame
