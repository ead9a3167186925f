"""Before and after the items: instructions and consent, the practice block with
feedback, and the completion (or screen-out) code a crowd rater takes back.

The practice block is ``crowd.practice.items`` scoring gold images drawn for each rater
from the study's practice pool (its first ``crowd.practice.pool`` scoring gold images) in
the rater's own order (a keyed hash of the study seed, the rater and the image), so a
throwaway participant id does not learn the exact practice of the next one. Each answer
is checked against the gold values at once and the rater sees the expected answer beside
theirs. The share right decides: at least ``pass_threshold`` opens the real items, less
ends the study for that rater.

The completion code is given only to a rater who is finished (concord.services.labelling.gate:
their quota of *done* items reached), the screen-out code only to one whose session
ended (failed practice, too many skips, too many failed checks); anyone else gets no
code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sqlite_utils import Database

from concord.rubrics import Rubric
from concord.services import rubric_choice
from concord.services.labelling import checklist, checks, common, gate
from concord.services.labelling.rating import check_values
from concord.store import items
from concord.store.crowd import links as crowd_store
from concord.store.crowd import onboarding as store
from concord.store.db import audit, transaction

PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete?cc={code}"


@dataclass(frozen=True, slots=True)
class Welcome:
    """What the rater reads before the first item."""

    instructions: str
    consent: str
    practice_items: int
    pass_threshold: float


def welcome(db: Database, study_name: str, rater_id: int) -> Welcome:
    """The study's instructions, consent text and practice rules."""
    cfg = gate.settings_of(common.member_study(db, study_name, rater_id))
    return Welcome(cfg.instructions, cfg.consent, cfg.practice_items, cfg.pass_threshold)


def stage(db: Database, study_name: str, rater_id: int) -> str:
    """``consent``, ``practice``, ``failed`` or ``work`` (see concord.services.labelling.gate)."""
    return gate.stage(db, common.member_study(db, study_name, rater_id), rater_id)


def accept(db: Database, study_name: str, rater_id: int) -> str:
    """The rater read the instructions and accepts the consent; returns when (stored)."""
    study = common.member_study(db, study_name, rater_id)
    with transaction(db):
        return store.consent(db, study.id, rater_id)


@dataclass(frozen=True, slots=True)
class PracticeItem:
    """One practice image as the rater sees it (blind, like a real item)."""

    image_id: int
    public_id: str
    prompt: str
    image_path: Path
    instruction: str | None
    position: int
    total: int
    submission: str
    rubric: Rubric  # of the image's dimension, which the answer is checked against


@dataclass(frozen=True, slots=True)
class Feedback:
    """The expected answer beside the rater's, after one practice item."""

    position: int
    total: int
    given: dict[str, float]
    expected: dict[str, tuple[float, float]]
    correct: bool
    finished: bool = False
    passed: bool | None = None
    n_correct: int = 0
    wrong: tuple[str, ...] = field(default_factory=tuple)


def next_practice(db: Database, study_name: str, rater_id: int) -> PracticeItem | None:
    """The next practice item (opened now; its time starts), None when there is none
    left or the rater is not at the practice stage."""
    study = common.member_study(db, study_name, rater_id)
    if gate.stage(db, study, rater_id) != gate.PRACTICE:
        return None
    ids = practice_block(db, study, rater_id)
    answered = {r.image_id for r in store.practice_rows(db, study.id, rater_id)
                if r.answer is not None}
    todo = [i for i in ids if i not in answered]
    if not todo:
        return None
    position = ids.index(todo[0]) + 1
    with transaction(db):
        store.open_practice(db, study.id, rater_id, todo[0], position)
    row = items.image(db, todo[0])
    return PracticeItem(row.id, row.public_id, row.prompt, Path(study.root or ".") /
                        (row.path or ""), row.instruction, position, len(ids),
                        common.new_submission(),
                        rubric_choice.rubric_for(study, row.dimension))


def practice_block(db: Database, study, rater_id: int) -> list[int]:
    """The rater's practice images: ``practice.items`` of the pool, in the rater's own
    order (a keyed hash of the study seed, the rater and the image; stable on reload).
    Images the rater already answered stay in their block, so a change of the pool does
    not move a block in progress."""
    cfg = gate.settings_of(study)
    pool = store.practice_images(db, study.id, cfg.pool)
    seed = int(study.settings.get("seed", 0))
    shown = [r.image_id for r in store.practice_rows(db, study.id, rater_id)]
    rest = sorted((i for i in pool if i not in shown),
                  key=lambda i: common.order_key(seed, -rater_id, i))
    return (shown + rest)[:cfg.practice_items]


def answer_practice(db: Database, study_name: str, rater_id: int, image_id: int,
                    values: Mapping[str, float | None], *, submission: str,
                    ticks: Mapping[str, bool] | None = None) -> Feedback:
    """Check and store the answer to a practice item; closes the block after the last.

    With ``ticks`` (condition id -> ticked) and a rubric with checklists (a study with
    ``checklist: true``), each checklist criterion's value is the one its rules derive
    from the ticks, so the practice trains the checklist the real items use.

    A repeated answer (double click, second tab) stores nothing and gets the feedback of
    the first one.

    Raises:
        RatingError: a value missing or off the rubric's scale, or an unknown condition.
        NotFoundError: the item is not one of the rater's open practice items.
    """
    study = common.member_study(db, study_name, rater_id)
    rubric = rubric_choice.rubric_for_image(db, study, image_id)
    if ticks is not None and rubric.checklists:
        values = {**values, **checklist.derive(rubric, ticks)}
    clean = check_values(rubric, values)
    ids = practice_block(db, study, rater_id)
    with transaction(db):
        rows = {r.image_id: r for r in store.practice_rows(db, study.id, rater_id)}
        row = common.found(rows.get(image_id) if image_id in ids else None,
                           f"image {image_id} is not one of your practice items")
        expected = store.gold_of(db, image_id)
        if row.answer is None:
            wrong = checks.wrong_criteria(expected, clean)
            store.answer_practice(db, study.id, rater_id, image_id, clean, not wrong,
                                  common.seconds_since(row.opened_at), submission)
            rows = {r.image_id: r for r in store.practice_rows(db, study.id, rater_id)}
        given = rows[image_id].answer or {}
        wrong = checks.wrong_criteria(expected, given)
        result = _close_block(db, study, rater_id, ids, rows)
    return Feedback(ids.index(image_id) + 1, len(ids), given, expected, not wrong,
                    finished=result is not None, passed=result, wrong=wrong,
                    n_correct=sum(bool(r.correct) for r in rows.values()))


def _close_block(db: Database, study, rater_id: int, ids: list[int],
                 rows: Mapping[int, store.PracticeRow]) -> bool | None:
    """Pass or fail once every practice item is answered; None while some are left."""
    if any(rows.get(i) is None or rows[i].answer is None for i in ids):
        return None
    n_correct = sum(bool(rows[i].correct) for i in ids)
    passed = n_correct / len(ids) >= gate.settings_of(study).pass_threshold - 1e-12
    if store.get(db, study.id, rater_id).practice_state == "pending":
        store.set_practice_result(db, study.id, rater_id, n_correct, len(ids), passed)
        audit(db, "rater", "practice_" + ("passed" if passed else "failed"), study.name,
              rater_id=rater_id, correct=n_correct, total=len(ids))
    return passed


@dataclass(frozen=True, slots=True)
class Completion:
    """What a crowd rater takes back to the platform when they stop."""

    code: str | None
    url: str | None
    screened_out: bool


def completion(db: Database, study_name: str, rater_id: int) -> Completion | None:
    """The completion code / URL of the link the rater joined through, for a rater who is
    finished (their quota of done items reached); the screen-out code / URL for one whose
    session ended (failed practice, too many skips, too many failed checks). None for
    anyone else: a rater with a personal invite, or one who has not done the work.

    The first completion records when the rater finished.
    """
    study = common.member_study(db, study_name, rater_id)
    part = crowd_store.participant_of(db, rater_id)
    link = crowd_store.link_by_id(db, part.link_id) if part and part.link_id else None
    if link is None:
        return None
    where = gate.stage(db, study, rater_id)
    out = where in (gate.FAILED, gate.SCREENED, gate.BLOCKED)
    if not out and not gate.finished(db, study, rater_id):
        return None
    code = link.screenout_code if out else link.completion_code
    url = link.screenout_url if out else link.completion_url
    if url is None and code and link.platform == "prolific":
        url = PROLIFIC_COMPLETE.format(code=code)
    if not out:
        with transaction(db):
            store.mark_completed(db, study.id, rater_id)
    return Completion(code, url, out)


def finished(db: Database, study_name: str, rater_id: int) -> bool:
    """Whether the rater has done what the study asks: every unit's quota of done items
    (skips never count), or, without a quota, no item left that could still come to them
    and at least one done (concord.services.labelling.gate.finished)."""
    return gate.finished(db, common.member_study(db, study_name, rater_id), rater_id)


@dataclass(frozen=True, slots=True)
class Outlook:
    """What a rater who has no item on a screen is told (concord.ui.onboarding_view)."""

    stage: str  # gate.WORK, or why the session is over (failed, screened, blocked)
    finished: bool
    completion: Completion | None  # the code to take back (finished, or screened out)
    units_left: tuple[str, ...]  # units whose quota of done items is not reached yet
    done: int  # done items of the unit asked about
    quota: int | None  # the unit's quota
    lease_minutes: float
    waiting: bool  # items short of ratings could still come (others' leases run out)


def outlook(db: Database, study_name: str, rater_id: int, unit: str) -> Outlook:
    """Why a screen has no item for the rater: their session is over, they are finished,
    this screen's quota is done but others are not, or no item is free right now (items
    held by others come back when their lease runs out)."""
    study = common.member_study(db, study_name, rater_id)
    where = gate.stage(db, study, rater_id)
    left = tuple(u for u in study.units if (gate.quota_left(db, study, rater_id, u) or 0) > 0)
    done = gate.finished(db, study, rater_id)
    if done:  # recorded for every rater (the report reads it: concord.services.crowd.status)
        with transaction(db):
            store.mark_completed(db, study.id, rater_id)
    return Outlook(where, done,
                   completion(db, study_name, rater_id), left,
                   store.done_count(db, study.id, rater_id, unit), gate.quota(study, unit),
                   study.lease_minutes, gate.more_may_come(db, study, rater_id))
