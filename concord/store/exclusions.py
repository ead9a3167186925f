"""Raters excluded from a study's statistics and exports (table ``rater_exclusions``).

Exclusion never deletes a rating: the rater's work stays in the database and comes back
with :func:`include`. Both actions are written to the audit log.
"""

from __future__ import annotations

from sqlite_utils import Database

from concord.errors import ConcordError
from concord.store.db import audit, now, transaction


def excluded(db: Database, study_id: int) -> list[dict]:
    """The study's excluded raters: ``rater, reason, actor, excluded_at`` (by name)."""
    return list(db.query(
        "SELECT r.name AS rater, x.reason, x.actor, x.excluded_at FROM rater_exclusions x"
        " JOIN raters r ON r.id = x.rater_id WHERE x.study_id = ? ORDER BY r.name",
        [study_id]))


def excluded_names(db: Database, study_id: int) -> set[str]:
    """Names of the study's excluded raters."""
    return {r["rater"] for r in excluded(db, study_id)}


def exclude(db: Database, study_id: int, study_name: str, rater_id: int, rater_name: str,
            reason: str, *, actor: str) -> None:
    """Leave a rater out of the study's statistics and exports.

    Raises:
        ConcordError: Empty reason, or the rater is already excluded from this study.
    """
    if not reason.strip():
        raise ConcordError("give a reason for excluding a rater (--reason)")
    with transaction(db):
        if _is_excluded(db, study_id, rater_id):
            raise ConcordError(f"rater {rater_name!r} is already excluded from study "
                               f"{study_name!r}")
        db.execute("INSERT INTO rater_exclusions (study_id, rater_id, reason, actor,"
                   " excluded_at) VALUES (?, ?, ?, ?, ?)",
                   [study_id, rater_id, reason.strip(), actor, now()])
        audit(db, actor, "exclude_rater", study_name, rater=rater_name, reason=reason.strip())


def include(db: Database, study_id: int, study_name: str, rater_id: int, rater_name: str,
            *, actor: str) -> None:
    """Take an excluded rater back into the study's statistics and exports.

    Raises:
        ConcordError: The rater is not excluded from this study.
    """
    with transaction(db):
        if not _is_excluded(db, study_id, rater_id):
            raise ConcordError(f"rater {rater_name!r} is not excluded from study "
                               f"{study_name!r}")
        db.execute("DELETE FROM rater_exclusions WHERE study_id = ? AND rater_id = ?",
                   [study_id, rater_id])
        audit(db, actor, "include_rater", study_name, rater=rater_name)


def has_part(db: Database, study_id: int, rater_id: int) -> bool:
    """Whether the rater is a member of the study or has rated or ranked in it."""
    return bool(db.execute(
        "SELECT EXISTS (SELECT 1 FROM study_raters WHERE study_id = ? AND rater_id = ?)"
        " OR EXISTS (SELECT 1 FROM ratings WHERE study_id = ? AND rater_id = ?)"
        " OR EXISTS (SELECT 1 FROM rankings WHERE study_id = ? AND rater_id = ?)",
        [study_id, rater_id] * 3).fetchone()[0])


def _is_excluded(db: Database, study_id: int, rater_id: int) -> bool:
    return db.execute("SELECT 1 FROM rater_exclusions WHERE study_id = ? AND rater_id = ?",
                      [study_id, rater_id]).fetchone() is not None
