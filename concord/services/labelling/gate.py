"""Where a rater stands in a study: consent, practice, the real items, ended, finished.

The rating, ranking and pair services ask :func:`check_work` before they hand out an item,
so a rater who has not accepted the consent or passed the practice block, or whose
session was ended (too many skips, too many failed checks), gets no real item whatever
page or tab they use; :func:`check_open` refuses their writes too.

**Finished** means work done, never merely "nothing left": a rater is finished when every
unit of the study (scored images, ranked prompts, judged pairs) has reached its quota of
*done* items (``crowd.items_per_rater``); without a quota, when no item of any unit could
still come to them (items leased to others count as coming) and they did at least one.
Skips never count toward the quota.
"""

from __future__ import annotations

from sqlite_utils import Database

from concord.check_settings import CheckSettings
from concord.crowd_settings import CrowdSettings
from concord.errors import ConcordError
from concord.store import checks as check_store
from concord.store import work
from concord.store.crowd import onboarding
from concord.store.studies import Study

CONSENT = "consent"
PRACTICE = "practice"
FAILED = "failed"  # the practice block was not passed
SCREENED = "screened"  # ended after more skips than the study allows
BLOCKED = "blocked"  # ended after too many failed attention checks
WORK = "work"
ENDED = {"skips": SCREENED, "checks": BLOCKED}
# Later than any lease's opened_at: with it, only done items hold a slot.
_NO_LEASE = "9999"


class GateError(ConcordError):
    """A rater asked for real items before consent or a passed practice block, or after
    their session ended."""


def settings_of(study: Study) -> CrowdSettings:
    """The study's crowd settings (defaults when it has none)."""
    return CrowdSettings.of(study.settings)


def checks_of(study: Study) -> CheckSettings:
    """The study's attention-check settings (gold rate, warn and block thresholds)."""
    return CheckSettings.of(study.settings)


def stage(db: Database, study: Study, rater_id: int) -> str:
    """``consent``, ``practice``, ``failed`` (practice not passed), ``screened`` (too many
    skips), ``blocked`` (too many failed checks) or ``work``."""
    cfg = settings_of(study)
    state = onboarding.get(db, study.id, rater_id)
    if state.ended is not None:
        return ENDED[state.ended]
    if cfg.needs_consent and state.consented_at is None:
        return CONSENT
    if cfg.practice_items and state.practice_state != "passed":
        return FAILED if state.practice_state == "failed" else PRACTICE
    return WORK


_REFUSALS = {
    CONSENT: "read the instructions and accept the consent first",
    PRACTICE: "finish the practice items first",
    FAILED: "the practice block was not passed; no more items",
    SCREENED: "your session in this study has ended (more items skipped than it allows)",
    BLOCKED: "your session in this study has ended (too many answers to check items were "
             "wrong)",
}


def check_work(db: Database, study: Study, rater_id: int) -> None:
    """GateError unless the rater may be given real items."""
    where = stage(db, study, rater_id)
    if where != WORK:
        raise GateError(_REFUSALS[where])


def check_open(db: Database, study: Study, rater_id: int) -> None:
    """GateError when the rater's session was ended: nothing more of theirs is stored."""
    state = onboarding.get(db, study.id, rater_id)
    if state.ended is not None:
        raise GateError(_REFUSALS[ENDED[state.ended]])


def practice_count(study: Study) -> int:
    """How many gold images the practice pool takes out of the real items."""
    cfg = settings_of(study)
    return cfg.pool if cfg.practice_items else 0


def quota(study: Study, unit: str) -> int | None:
    """The study's quota of done items of a unit (None: no quota)."""
    return settings_of(study).quota(unit)


def quota_left(db: Database, study: Study, rater_id: int, unit: str) -> int | None:
    """Items of a unit the rater may still do before the quota (None: no quota)."""
    wanted = quota(study, unit)
    if wanted is None:
        return None
    return max(wanted - onboarding.done_count(db, study.id, rater_id, unit), 0)


def after_skip(db: Database, study: Study, rater_id: int) -> bool:
    """End the session when a skip went past the study's limit (``crowd.max_skips``,
    ``on_max_skips: screenout``); returns whether it ended. Inside the caller's
    transaction."""
    cfg = settings_of(study)
    limit = cfg.skip_limit(study.units)
    if limit is None or cfg.on_max_skips != "screenout":
        return False
    if work.skipped_count(db, study.id, rater_id) <= limit:
        return False
    return check_store.end_session(db, study.id, rater_id, "skips")


def _coming(db: Database, study: Study, rater_id: int, unit: str) -> int:
    """Items of a unit that could still come to the rater: not theirs yet and short of
    done ratings (items others hold on a lease count: the lease may run out)."""
    return work.count_candidates(db, study.id, rater_id, unit, study.k_for(unit),
                                 cutoff=_NO_LEASE, practice=practice_count(study))


def more_may_come(db: Database, study: Study, rater_id: int) -> bool:
    """Whether some unit still short of its quota has items that could come to the rater."""
    return any(quota_left(db, study, rater_id, u) != 0 and _coming(db, study, rater_id, u)
               for u in study.units)


def finished(db: Database, study: Study, rater_id: int) -> bool:
    """Whether the rater has done what the study asks (see the module doc)."""
    if stage(db, study, rater_id) != WORK:
        return False
    done = 0
    for unit in study.units:
        have = onboarding.done_count(db, study.id, rater_id, unit)
        done += have
        wanted = quota(study, unit)
        if wanted is not None and have < wanted:
            return False
        if wanted is None and (work.status_counts(db, study.id, rater_id, unit)["open"]
                               or _coming(db, study, rater_id, unit)):
            return False
    return done > 0
