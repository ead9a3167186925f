"""Excluding a rater from a study's statistics and exports, and taking them back.

The statistics (``concord.services.report``) and the label exports
(``concord.services.exports.labels``) leave excluded raters out; every number recomputes,
since the audit-log entry changes ``frames.data_version`` (the dashboard's cache key).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlite_utils import Database

from concord.errors import NotFoundError
from concord.store import exclusions
from concord.store import raters as rater_store
from concord.store import studies as study_store

if TYPE_CHECKING:  # the CLI answers a typo without loading pandas
    import pandas as pd


def _rater_of_study(db: Database, study: study_store.Study, name: str) -> rater_store.Rater:
    rater = rater_store.get_rater(db, name)
    if not exclusions.has_part(db, study.id, rater.id):
        raise NotFoundError(f"rater {name!r} has no part in study {study.name!r}")
    return rater


def exclude_rater(db: Database, study_name: str, rater: str, reason: str, *,
                  actor: str = "cli") -> None:
    """Leave ``rater`` out of ``study_name``'s statistics and exports (reason required).

    Raises:
        NotFoundError: No such study or rater, or the rater has no part in the study.
        ConcordError: No reason, or already excluded.
    """
    study = study_store.get_study(db, study_name)
    row = _rater_of_study(db, study, rater)
    exclusions.exclude(db, study.id, study.name, row.id, row.name, reason, actor=actor)


def include_rater(db: Database, study_name: str, rater: str, *, actor: str = "cli") -> None:
    """Undo :func:`exclude_rater`.

    Raises:
        NotFoundError: No such study or rater.
        ConcordError: The rater is not excluded.
    """
    study = study_store.get_study(db, study_name)
    row = rater_store.get_rater(db, rater)
    exclusions.include(db, study.id, study.name, row.id, row.name, actor=actor)


def excluded_raters(db: Database, study_name: str) -> list[dict]:
    """``rater, reason, actor, excluded_at`` of each excluded rater of the study."""
    return exclusions.excluded(db, study_store.get_study(db, study_name).id)


def without_excluded(frame: pd.DataFrame, names: set[str]) -> pd.DataFrame:
    """``frame`` without the rows of raters in ``names`` (a ``rater`` column)."""
    if not names or frame.empty:
        return frame
    keep = ~frame["rater"].isin(names).to_numpy()
    return frame if keep.all() else frame[keep].reset_index(drop=True)
