"""Rubric checklists on the scoring screen: ticks in, derived and final values out.

For every criterion of the rubric with a checklist, the rubric's rules derive the value
from the ticks; the rater may choose another value (an override) only with a reason.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
from sqlite_utils import Database

from concord.errors import RatingError
from concord.rubrics import Rubric
from concord.store import checklists as store
from concord.store.checklists import Answer

TICK_COLUMNS = ["image_id", "public_id", "prompt_id", "dimension", "model", "sample", "rater",
                "criterion", "rubric", "condition", "ticked", "derived", "final", "reason",
                "submission", "time"]


def derive(rubric: Rubric, ticks: Mapping[str, bool]) -> dict[str, float]:
    """The derived value of each checklist criterion for ``ticks`` (condition id ->
    ticked; missing ids count as not ticked).

    Raises:
        RatingError: a tick names a condition the rubric does not have.
    """
    known = {cid for c in rubric.checklists for cid in c.ids}
    unknown = sorted(set(ticks) - known)
    if unknown:
        raise RatingError(f"unknown condition(s) {unknown} (rubric {rubric.id} has "
                          f"{sorted(known)})")
    return {c.criterion: c.derive({cid: bool(ticks.get(cid)) for cid in c.ids})
            for c in rubric.checklists}


def answers(rubric: Rubric, values: Mapping[str, float | None], ticks: Mapping[str, bool],
            reasons: Mapping[str, str] | None = None) -> tuple[dict[str, float | None],
                                                               list[Answer]]:
    """Fill the derived values into ``values`` and check the overrides.

    A checklist criterion without a value (None) takes the derived one; one with another
    value is an override and needs a reason in ``reasons`` (criterion -> text). A reason
    given without an override is dropped.

    Returns:
        The values (checklist criteria filled in) and one :class:`Answer` per checklist.

    Raises:
        RatingError: an unknown condition, or an override without a reason.
    """
    derived = derive(rubric, ticks)
    reasons = reasons or {}
    out = dict(values)
    found: list[Answer] = []
    for checklist in rubric.checklists:
        key = checklist.criterion
        given = out.get(key)
        final = derived[key] if given is None else float(given)
        reason = (reasons.get(key) or "").strip() or None
        if final != derived[key] and reason is None:
            raise RatingError(f"{key}: the checklist gives {derived[key]:g}; to choose "
                              f"{final:g} instead, give a reason")
        out[key] = final
        found.append(Answer(key, derived[key], final, reason if final != derived[key] else None,
                            tuple((cid, bool(ticks.get(cid))) for cid in checklist.ids)))
    return out, found


def ticks_frame(db: Database, study_id: int) -> pd.DataFrame:
    """The current ticks of a study, one row per rating × condition (``TICK_COLUMNS``;
    ``ticked`` is 0/1)."""
    return pd.DataFrame(store.current_ticks(db, study_id), columns=TICK_COLUMNS)
