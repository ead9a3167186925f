"""The tidy frames of one study, after exclusions and filters: the input of its report.

Kept apart from :mod:`concord.services.report.study` so that reading a study imports pandas
only: ``stats`` reads the ratings while scipy.stats (about 1.5 s) loads in a thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from sqlite_utils import Database

from concord.services.exclusions import without_excluded
from concord.services.labelling import checklist
from concord.store import exclusions, frames
from concord.store import studies as study_store


@dataclass(frozen=True, slots=True)
class StudyFrames:
    """The tidy frames of one study after exclusions and filters.

    ``rankings``/``gold``/``pairs`` are None when the study has none; ``excluded`` lists
    the excluded raters (``rater, reason, actor, excluded_at``).
    """

    ratings: pd.DataFrame
    rankings: pd.DataFrame | None
    scores: pd.DataFrame
    gold: pd.DataFrame | None
    study: study_store.Study | None = None
    excluded: list[dict] = field(default_factory=list)
    pairs: pd.DataFrame | None = None
    checklist: pd.DataFrame | None = None  # the Ticks frame (concord.stats.checklist)


def load_frames(db: Database, study: study_store.Study, *, dimension: str | None = None,
                metric: str | None = None) -> StudyFrames:
    """The study's ratings, rankings, pair judgments, metric scores and gold, without
    excluded raters; only ``dimension`` and ``metric`` when given (checked by
    :func:`concord.services.report.request.resolve`: a filter the study does not have
    gives empty frames here).
    """
    excluded = exclusions.excluded(db, study.id)
    names = {r["rater"] for r in excluded}
    ratings = without_excluded(frames.ratings_frame(db, study.id, categorical=True,
                                                    times=False), names)
    rankings = without_excluded(frames.rankings_frame(db, study.id), names)
    pairs = without_excluded(frames.pairs_frame(db, study.id), names)
    ticks = without_excluded(checklist.ticks_frame(db, study.id), names)
    scores = frames.scores_frame(db, study.id)
    gold = frames.gold_frame(db, study.id)
    if dimension is not None:
        ratings = ratings[(ratings["dimension"] == dimension).to_numpy()]
        rankings = rankings[rankings["dimension"] == dimension]
        pairs = pairs[pairs["dimension"] == dimension]
        ticks = ticks[ticks["dimension"] == dimension]
        scores = scores[scores["dimension"] == dimension]
    if metric is not None:
        scores = scores[scores["metric"] == metric]
    return StudyFrames(ratings.reset_index(drop=True),
                       None if rankings.empty else rankings.reset_index(drop=True),
                       scores.reset_index(drop=True), None if gold.empty else gold,
                       study, excluded, None if pairs.empty else pairs.reset_index(drop=True),
                       None if ticks.empty else ticks.reset_index(drop=True))
