"""What a researcher sees of a crowd study: who joined, consented, passed or failed the
practice block, finished; and the time and pay report.

**Active time** is not wall time. It is the sum of the server-side times on item of the
rater's work in the study: each rating submission (time from serving the image to the
submit), each ranking, each skip (serving to skipping) and each practice answer. Each
piece counts at most ``idle_cap_seconds`` (study setting, default 300 s), so a tab left
open over lunch adds five minutes, not an hour; time between items (reading a notice,
loading the next image) is not counted. Edits and undos carry no time on item.
**Pay** is active hours × the hourly rate, rounded half up to the cent.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

from concord.errors import ConcordError
from concord.services import gate
from concord.store import crowd as crowd_store
from concord.store import onboarding
from concord.store import raters as rater_store
from concord.store import studies as study_store

if TYPE_CHECKING:  # only the pay report is a frame
    import pandas as pd

PAY_COLUMNS = ["rater", "platform", "participant_id", "platform_study_id",
               "platform_session_id", "items_done", "items_skipped", "practice_items",
               "practice", "active_seconds", "hourly_rate", "currency", "pay"]
# Where each platform puts its study and session ids among the captured parameters.
_IDS = {"prolific": ("STUDY_ID", "SESSION_ID"), "mturk": ("hitId", "assignmentId")}


def active_seconds(seconds: list[float | None], cap: float) -> float:
    """Sum of times on item, each capped at ``cap`` seconds; unknown (None/NaN) and
    negative times count 0.

    >>> active_seconds([10.0, 400.0, None, -1.0], cap=300)
    310.0
    """
    total = 0.0
    for s in seconds:
        if s is None or not math.isfinite(s) or s <= 0:
            continue
        total += min(float(s), cap)
    return round(total, 3)


def pay_for(seconds: float, hourly_rate: float | None) -> float | None:
    """Pay for ``seconds`` of active time, rounded half up to the cent.

    >>> pay_for(1350.0, 12.0)
    4.5
    """
    if hourly_rate is None:
        return None
    return math.floor(seconds * hourly_rate / 36.0 + 0.5 + 1e-9) / 100.0


def _practice_text(state: onboarding.Onboarding | None) -> str:
    if state is None or state.practice_total is None:
        return ""
    return f"{state.practice_state} {state.practice_correct}/{state.practice_total}"


def pay_report(db: Database, study_name: str, *, hourly_rate: float | None = None,
               idle_cap: float | None = None) -> pd.DataFrame:
    """One row per rater of the study (crowd participants and invited raters), columns
    :data:`PAY_COLUMNS`. ``hourly_rate`` and ``idle_cap`` override the study settings.

    Raises:
        ConcordError: a negative rate, or a cap that is not a positive number.
    """
    study = study_store.get_study(db, study_name)
    cfg = gate.settings_of(study)
    rate = cfg.hourly_rate if hourly_rate is None else hourly_rate
    cap = cfg.idle_cap_seconds if idle_cap is None else idle_cap
    _check_numbers(rate, cap)
    work: dict[int, list[tuple[str, float | None]]] = {}
    for rater_id, kind, seconds in onboarding.timed_work(db, study.id):
        work.setdefault(rater_id, []).append((kind, seconds))
    done = onboarding.done_counts(db, study.id)
    states = onboarding.states(db, study.id)
    rows = [_pay_row(db, r, work.get(r["id"], []), done.get(r["id"], 0),
                     states.get(r["id"]), rate, cap, cfg.currency)
            for r in rater_store.list_raters(db, study.id)]
    import pandas as pd

    return pd.DataFrame(rows, columns=PAY_COLUMNS)


def _check_numbers(rate: float | None, cap: float) -> None:
    if rate is not None and (not math.isfinite(rate) or rate < 0):
        raise ConcordError(f"hourly rate must be a number ≥ 0, got {rate!r}")
    if not math.isfinite(cap) or cap <= 0:
        raise ConcordError(f"idle cap must be a number of seconds > 0, got {cap!r}")


def _pay_row(db: Database, rater: dict[str, Any], mine: list[tuple[str, float | None]],
             done: int, state: onboarding.Onboarding | None, rate: float | None, cap: float,
             currency: str) -> dict[str, Any]:
    part = crowd_store.participant_of(db, rater["id"])
    platform = part.platform if part else "invite"
    ids = _IDS.get(platform, ("", ""))
    params = part.params if part else {}
    seconds = active_seconds([s for _, s in mine], cap)
    return {
        "rater": rater["name"], "platform": platform,
        "participant_id": part.participant_id if part else "",
        "platform_study_id": params.get(ids[0], ""),
        "platform_session_id": params.get(ids[1], ""),
        "items_done": done, "items_skipped": sum(k == "skip" for k, _ in mine),
        "practice_items": sum(k == "practice" for k, _ in mine),
        "practice": _practice_text(state), "active_seconds": seconds,
        "hourly_rate": rate, "currency": currency, "pay": pay_for(seconds, rate),
    }


def status(db: Database, study_name: str) -> list[dict[str, Any]]:
    """Per rater of the study: how they joined, consent time, practice result, items done,
    when they finished, and the stage they are at (``consent``, ``practice``, ``failed``,
    ``work``)."""
    study = study_store.get_study(db, study_name)
    states = onboarding.states(db, study.id)
    done = onboarding.done_counts(db, study.id)
    out = []
    for r in rater_store.list_raters(db, study.id):
        part = crowd_store.participant_of(db, r["id"])
        state = states.get(r["id"], onboarding.Onboarding())
        out.append({
            "rater": r["name"], "platform": part.platform if part else "invite",
            "participant_id": part.participant_id if part else "",
            "joined_at": part.joined_at if part else r["created_at"],
            "consented_at": state.consented_at or "", "practice": _practice_text(state),
            "items_done": done.get(r["id"], 0), "stage": gate.stage(db, study, r["id"]),
            "finished_at": state.completed_at or "",
            "link": "revoked" if r["revoked_at"] else "active",
        })
    return out
