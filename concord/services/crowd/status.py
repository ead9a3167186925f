"""What a researcher sees of a crowd study: who joined, consented, passed or failed the
practice block, finished; and the time and pay report.

**Active time** is not wall time. It is the sum of the server-side times on item of the
rater's work in the study: each rating submission (time from serving the image to the
submit), each ranking, each pair judgment, each skip (serving to skipping) and each
practice answer. Each
piece counts at most ``idle_cap_seconds`` (study setting, default 300 s), so a tab left
open over lunch adds five minutes, not an hour; time between items (reading a notice,
loading the next image) is not counted. Edits and undos carry no time on item.
**Pay** is active hours × the hourly rate, rounded half up to the cent.

**Status** of each rater (what to approve or reject on the platform): ``completed``
(the study's quota of done items reached), ``screened out`` (failed practice, or more
skips than the study allows), ``failed checks`` (too many wrong answers to attention
checks, ``quality.block_after``), ``returned`` (left unfinished: nothing done there for
longer than the study's lease, so their items went back to others) or ``incomplete``
(unfinished, active within the lease).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

from concord.errors import ConcordError
from concord.services.labelling import gate
from concord.store import checks as check_store
from concord.store import raters as rater_store
from concord.store import studies as study_store
from concord.store import work
from concord.store.crowd import joins as crowd_joins
from concord.store.crowd import links as crowd_store
from concord.store.crowd import onboarding

if TYPE_CHECKING:  # only the pay report is a frame
    import pandas as pd

PAY_COLUMNS = ["rater", "platform", "participant_id", "platform_study_id",
               "platform_session_id", "status", "items_done", "items_skipped",
               "practice_items", "practice", "checks_passed", "checks_failed", "sessions",
               "all_session_ids", "active_seconds", "hourly_rate", "currency", "pay"]
STATUSES = ("completed", "screened out", "failed checks", "returned", "incomplete")
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


def _status(db: Database, study: study_store.Study, rater_id: int, facts: _Facts) -> str:
    """One of :data:`STATUSES` (see the module doc). Finished is read from what was
    recorded (the rater was shown the end of the study) or from the quotas: no item
    queue is searched, so the report stays quick on a study of any size."""
    stage = gate.stage(db, study, rater_id)
    if stage in (gate.FAILED, gate.SCREENED):
        return "screened out"
    if stage == gate.BLOCKED:
        return "failed checks"
    state = facts.states.get(rater_id)
    quotas = [(u, gate.quota(study, u)) for u in study.units]
    if stage == gate.WORK and ((state is not None and state.completed_at is not None) or (
            all(q is not None and facts.by_unit.get((rater_id, u), 0) >= q for u, q in quotas)
            and quotas)):
        return "completed"
    last = facts.last.get(rater_id)
    return "returned" if last is None or last < facts.cutoff else "incomplete"


class _Facts:
    """What the report needs of every rater of a study, read once."""

    def __init__(self, db: Database, study: study_store.Study) -> None:
        self.done = onboarding.done_counts(db, study.id)
        self.by_unit = onboarding.done_by_unit(db, study.id)
        self.states = onboarding.states(db, study.id)
        self.checks = check_store.all_counts(db, study.id)
        self.last = onboarding.last_activity(db, study.id)
        self.cutoff = work.lease_cutoff(study.lease_minutes)
        self.status = {r["id"]: _status(db, study, r["id"], self)
                       for r in rater_store.list_raters(db, study.id)}


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
    work_by: dict[int, list[tuple[str, float | None]]] = {}
    for rater_id, kind, seconds in onboarding.timed_work(db, study.id):
        work_by.setdefault(rater_id, []).append((kind, seconds))
    facts = _Facts(db, study)
    rows = [{**_pay_row(db, r, work_by.get(r["id"], []), facts, rate, cap),
             "currency": cfg.currency}
            for r in rater_store.list_raters(db, study.id)]
    import pandas as pd

    return pd.DataFrame(rows, columns=PAY_COLUMNS)


def _check_numbers(rate: float | None, cap: float) -> None:
    if rate is not None and (not math.isfinite(rate) or rate < 0):
        raise ConcordError(f"hourly rate must be a number ≥ 0, got {rate!r}")
    if not math.isfinite(cap) or cap <= 0:
        raise ConcordError(f"idle cap must be a number of seconds > 0, got {cap!r}")


def _pay_row(db: Database, rater: dict[str, Any], mine: list[tuple[str, float | None]],
             facts: _Facts, rate: float | None, cap: float) -> dict[str, Any]:
    part = crowd_store.participant_of(db, rater["id"])
    platform = part.platform if part else "invite"
    ids = _IDS.get(platform, ("", ""))
    sessions = crowd_joins.sessions(db, rater["id"]) if part else []
    params = sessions[-1] if sessions else (part.params if part else {})
    seconds = active_seconds([s for _, s in mine], cap)
    passed, failed = facts.checks.get(rater["id"], (0, 0))
    return {
        "rater": rater["name"], "platform": platform,
        "participant_id": part.participant_id if part else "",
        "platform_study_id": params.get(ids[0], ""),
        "platform_session_id": params.get(ids[1], ""),
        "status": facts.status[rater["id"]],
        "items_done": facts.done.get(rater["id"], 0),
        "items_skipped": sum(k == "skip" for k, _ in mine),
        "practice_items": sum(k == "practice" for k, _ in mine),
        "practice": _practice_text(facts.states.get(rater["id"])),
        "checks_passed": passed, "checks_failed": failed, "sessions": len(sessions),
        "all_session_ids": " ".join(s.get(ids[1], "") for s in sessions if s.get(ids[1])),
        "active_seconds": seconds, "hourly_rate": rate, "pay": pay_for(seconds, rate),
    }


def status(db: Database, study_name: str) -> list[dict[str, Any]]:
    """Per rater of the study: how they joined, consent time, practice result, items done
    and skipped, attention checks passed and failed, the stage they are at (``consent``,
    ``practice``, ``failed``, ``screened``, ``blocked``, ``work``), their status (see the
    module doc), when they finished, their platform sessions, visits with their id that
    were refused (no proof of being them) and how many participant ids came from the
    client they came from (``ids_from_client``; ``flag`` says ``many ids from one
    client`` at ``crowd.flag_ids_per_client`` or more)."""
    study = study_store.get_study(db, study_name)
    facts = _Facts(db, study)
    refused = crowd_joins.refused_counts(db, study.id)
    per_client = crowd_joins.ids_per_client(db, study.id)
    flag_at = gate.settings_of(study).flag_ids_per_client
    out = []
    for r in rater_store.list_raters(db, study.id):
        part = crowd_store.participant_of(db, r["id"])
        state = facts.states.get(r["id"], onboarding.Onboarding())
        pid = part.participant_id if part else ""
        passed, failed = facts.checks.get(r["id"], (0, 0))
        same = per_client.get(pid, 0) if part else 0
        out.append({
            "rater": r["name"], "platform": part.platform if part else "invite",
            "participant_id": pid, "joined_at": part.joined_at if part else r["created_at"],
            "consented_at": state.consented_at or "", "practice": _practice_text(state),
            "items_done": facts.done.get(r["id"], 0),
            "items_skipped": work.skipped_count(db, study.id, r["id"]),
            "checks_passed": passed, "checks_failed": failed,
            "stage": gate.stage(db, study, r["id"]), "status": facts.status[r["id"]],
            "finished_at": state.completed_at or state.ended_at or "",
            "sessions": len(crowd_joins.sessions(db, r["id"])) if part else 0,
            "refused_visits": refused.get(pid, 0) if part else 0,
            "ids_from_client": same,
            "flag": "many ids from one client" if same >= flag_at else "",
            "link": "revoked" if r["revoked_at"] else "active",
        })
    return out


def automated_clients(db: Database, study_name: str) -> list[tuple[str, int]]:
    """Clients (a keyed hash of their address) that brought at least
    ``crowd.flag_ids_per_client`` participant ids to the study, most first."""
    study = study_store.get_study(db, study_name)
    return crowd_joins.busiest_clients(db, study.id,
                                       gate.settings_of(study).flag_ids_per_client)
