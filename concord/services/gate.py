"""Where a rater stands in a study: consent, practice, the real items, finished.

The rating and ranking services ask :func:`check_work` before they hand out an item, so
a rater who has not accepted the consent or passed the practice block gets no real item
whatever page or tab they use.
"""

from __future__ import annotations

from sqlite_utils import Database

from concord.crowd_settings import CrowdSettings
from concord.errors import ConcordError
from concord.store import onboarding
from concord.store.studies import Study

CONSENT = "consent"
PRACTICE = "practice"
FAILED = "failed"
WORK = "work"


class GateError(ConcordError):
    """A rater asked for real items before consent or a passed practice block."""


def settings_of(study: Study) -> CrowdSettings:
    """The study's crowd settings (defaults when it has none)."""
    return CrowdSettings.of(study.settings)


def stage(db: Database, study: Study, rater_id: int) -> str:
    """``consent``, ``practice``, ``failed`` (practice not passed) or ``work``."""
    cfg = settings_of(study)
    if not cfg.needs_consent and not cfg.practice_items:
        return WORK
    state = onboarding.get(db, study.id, rater_id)
    if cfg.needs_consent and state.consented_at is None:
        return CONSENT
    if cfg.practice_items and state.practice_state != "passed":
        return FAILED if state.practice_state == "failed" else PRACTICE
    return WORK


def check_work(db: Database, study: Study, rater_id: int) -> None:
    """GateError unless the rater may be given real items."""
    where = stage(db, study, rater_id)
    if where == CONSENT:
        raise GateError("read the instructions and accept the consent first")
    if where == PRACTICE:
        raise GateError("finish the practice items first")
    if where == FAILED:
        raise GateError("the practice block was not passed; no more items")


def practice_count(study: Study) -> int:
    """How many gold images the practice block takes out of the real items."""
    return settings_of(study).practice_items


def quota_left(db: Database, study: Study, rater_id: int) -> int | None:
    """Items the rater may still do before the study's ``items_per_rater`` (None: no
    quota)."""
    quota = settings_of(study).items_per_rater
    if quota is None:
        return None
    done = onboarding.done_count(db, study.id, rater_id)
    return max(quota - done, 0)
