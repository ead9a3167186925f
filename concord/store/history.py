"""Every revision of a study's labels, edits and undos included (``export --format history``).

Ratings, rankings and pair judgments are append-only (concord/store/migrations/): each
row of their tables is one revision. An undo is a revision with no value (a rating's
``value`` NULL, a ranking ``retracted``, a pair judgment's ``outcome`` NULL). Rows of a
pending import batch are not there yet and are left out (concord/store/imports/batches.py).
"""

from __future__ import annotations

import pandas as pd
from sqlite_utils import Database

from concord.store.imports.batches import visible
from concord.store.sqlframe import read_frame

_RATINGS_SQL = f"""
SELECT 'rating' AS kind, p.key AS prompt_id, m.name AS model, i.sample, r.name AS rater,
       x.criterion, x.revision, x.action, x.submission, x.value, NULL AS rank,
       NULL AS left_model, NULL AS right_model, NULL AS outcome, x.seconds,
       x.created_at AS time, x.id AS row_id
FROM ratings x
JOIN images i ON i.id = x.image_id
JOIN prompts p ON p.id = i.prompt_id
JOIN models m ON m.id = i.model_id
JOIN raters r ON r.id = x.rater_id
WHERE x.study_id = ? AND {visible("x")}
"""

# A ranking revision is one row per ranked image; a retraction (no items) is one row
# without model and rank.
_RANKINGS_SQL = f"""
SELECT 'ranking' AS kind, p.key AS prompt_id, m.name AS model, i.sample, r.name AS rater,
       k.criterion, k.revision, k.action, k.submission, NULL AS value, ri.rank,
       NULL AS left_model, NULL AS right_model, NULL AS outcome, k.seconds,
       k.created_at AS time, k.id AS row_id
FROM rankings k
JOIN prompts p ON p.id = k.prompt_id
JOIN raters r ON r.id = k.rater_id
LEFT JOIN ranking_items ri ON ri.ranking_id = k.id
LEFT JOIN images i ON i.id = ri.image_id
LEFT JOIN models m ON m.id = i.model_id
WHERE k.study_id = ? AND {visible("k")}
"""

_PAIRS_SQL = f"""
SELECT 'pair' AS kind, p.key AS prompt_id, NULL AS model, il.sample, r.name AS rater,
       j.criterion, j.revision, j.action, j.submission, NULL AS value, NULL AS rank,
       ml.name AS left_model, mr.name AS right_model, j.outcome, j.seconds,
       j.created_at AS time, j.id AS row_id
FROM pair_judgments j
JOIN pairs pr ON pr.id = j.pair_id
JOIN prompts p ON p.id = pr.prompt_id
JOIN images il ON il.id = j.left_image
JOIN models ml ON ml.id = il.model_id
JOIN images ir ON ir.id = j.right_image
JOIN models mr ON mr.id = ir.model_id
JOIN raters r ON r.id = j.rater_id
WHERE j.study_id = ? AND {visible("j")}
"""

COLUMNS = ["study", "kind", "prompt_id", "model", "sample", "rater", "criterion", "revision",
           "action", "submission", "value", "rank", "left_model", "right_model", "outcome",
           "seconds", "time"]
_KIND_ORDER = {"rating": 0, "ranking": 1, "pair": 2}


def revisions_frame(db: Database, study_id: int, study_name: str) -> pd.DataFrame:
    """Every revision of the study's ratings, rankings and pair judgments, in the order
    they were stored (per kind), with :data:`COLUMNS`. An undo has no ``value`` /
    ``rank`` / ``outcome``."""
    parts = [read_frame(db, sql, [study_id])
             for sql in (_RATINGS_SQL, _RANKINGS_SQL, _PAIRS_SQL)]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
    out = pd.concat(parts, ignore_index=True)
    out["order"] = out["kind"].map(_KIND_ORDER)
    out = out.sort_values(["order", "row_id", "rank"], kind="stable", na_position="first")
    out["study"] = study_name
    for col in ("value", "rank", "seconds"):
        out[col] = out[col].astype(float)
    out["sample"] = out["sample"].astype("Int64")
    return out[COLUMNS].reset_index(drop=True)
