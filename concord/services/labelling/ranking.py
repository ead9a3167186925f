"""The ranking protocol (TIIF-Bench user study): order N models' images for one prompt.

A ranking is given as ordered groups of image ids, best first; images in one group are
tied (only when the study allows ties). It is stored as fractional ranks (tied images
get the mean of the places they share, the convention of rank statistics) together with
the display order the rater saw.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlite_utils import Database

from concord.errors import RatingError
from concord.rubrics import Rubric
from concord.services.labelling import checks, comments, common, gate
from concord.services.labelling.ranking_draft import RankingDraft
from concord.store import comments as comment_store
from concord.store import drafts, items, work
from concord.store import ratings as rating_store
from concord.store.db import audit, transaction

UNIT = "prompt"
CRITERION = "overall"


@dataclass(frozen=True, slots=True)
class RankSet:
    """The images of one prompt in this rater's display order."""

    prompt_id: int
    prompt: str
    images: tuple[common.BlindImage, ...]
    ties: bool
    submission: str
    current: dict[int, float] = field(default_factory=dict)
    draft: RankingDraft = field(default_factory=RankingDraft)
    progress: common.Progress | None = None
    comment: comments.Shown = field(default_factory=comments.Shown)


def ranking_rubric(db: Database, study_name: str, rater_id: int) -> Rubric:
    """The criteria shown above the grid (the study's rubric if it is a rank rubric)."""
    study = common.member_study(db, study_name, rater_id)
    rid = study.rubric if study.protocol == "rank" and study.rubric else "tiif-ranking"
    return common.study_rubric(study, rid)


def _display(db: Database, study, rater_id: int, prompt_id: int) -> RankSet:
    ranking = study.settings.get("ranking", {})
    rows = items.prompt_images(db, prompt_id, sample=int(ranking.get("sample", 0)))
    seed = int(ranking.get("seed", 0))
    rows.sort(key=lambda r: common.order_key(seed, rater_id * 1_000_003 + prompt_id, r.id))
    base = Path(study.root or ".")
    current = rating_store.current_ranking(db, prompt_id, rater_id, CRITERION)
    ranks = current["ranks"] if current else {}
    saved = drafts.load(db, study.id, rater_id, UNIT, prompt_id)
    shown = [r.id for r in rows]
    return RankSet(
        prompt_id=prompt_id, prompt=items.prompt_row(db, prompt_id)["text"],
        images=tuple(common.BlindImage(r.id, r.public_id, base / (r.path or "")) for r in rows),
        ties=bool(ranking.get("ties", False)), submission=common.new_submission(),
        current=ranks,
        draft=(RankingDraft.from_json(saved, shown) if saved is not None
               else RankingDraft.from_ranks(ranks)),
        comment=comments.shown(db, study, rater_id, UNIT, prompt_id),
    )


def save_draft(db: Database, study_name: str, rater_id: int, prompt_id: int,
               draft: RankingDraft) -> None:
    """Keep a ranking in progress, so a reload or a new tab shows it as the rater left it."""
    study = common.member_study(db, study_name, rater_id)
    with transaction(db):
        common.require(work.get_assignment(db, study.id, rater_id, UNIT, prompt_id) is not None,
                       f"prompt {prompt_id} was never given to you")
        drafts.save(db, study.id, rater_id, UNIT, prompt_id, draft.to_json())


def next_set(db: Database, study_name: str, rater_id: int) -> RankSet | None:
    """The rater's open prompt or the next one; None when they are done."""
    study = common.member_study(db, study_name, rater_id)
    with transaction(db):
        pick = common.pick_next(db, study, rater_id, UNIT)
    if pick.item_id is None:
        return None
    return dataclasses.replace(_display(db, study, rater_id, pick.item_id),
                               progress=pick.progress)


def open_set(db: Database, study_name: str, rater_id: int, prompt_id: int) -> RankSet:
    """Re-open a prompt the rater ranked before (to edit the ranking)."""
    study = common.member_study(db, study_name, rater_id)
    common.require(work.get_assignment(db, study.id, rater_id, UNIT, prompt_id) is not None,
                   f"prompt {prompt_id} was never given to you")
    return _display(db, study, rater_id, prompt_id)


def to_ranks(groups: Sequence[Sequence[int]], shown: Sequence[int], *,
             ties: bool) -> dict[int, float]:
    """Check ordered groups against the images shown; return fractional ranks.

    Raises:
        RatingError: an image missing, unknown or repeated, or a tie where ties are off.
    """
    flat = [i for g in groups for i in g]
    if any(len(g) == 0 for g in groups):
        raise RatingError("empty rank group")
    if len(flat) != len(set(flat)):
        raise RatingError("an image was ranked twice")
    unknown = set(flat) - set(shown)
    if unknown:
        raise RatingError(f"images {sorted(unknown)} are not part of this set")
    missing = len(set(shown) - set(flat))
    if missing:
        raise RatingError(f"rank every image before submitting ({missing} left)")
    if not ties and any(len(g) > 1 for g in groups):
        raise RatingError("this study does not allow ties")
    ranks: dict[int, float] = {}
    place = 1
    for g in groups:
        for image_id in g:
            ranks[image_id] = place + (len(g) - 1) / 2
        place += len(g)
    return ranks


def submit(db: Database, study_name: str, rater_id: int, rank_set: RankSet,
           groups: Sequence[Sequence[int]], *, edit: bool = False,
           actor: str = "rater", comment: str | None = None) -> common.Progress | None:
    """Store a ranking (with the rater's ``comment``, study setting ``comments``); a
    repeated submission stores nothing. Returns None if repeated."""
    study = common.member_study(db, study_name, rater_id)
    shown = [im.image_id for im in rank_set.images]
    ranks = to_ranks(groups, shown, ties=rank_set.ties)
    note = comments.checked(study, comment)
    with transaction(db):
        gate.check_open(db, study, rater_id)
        assignment = common.found(
            work.get_assignment(db, study.id, rater_id, UNIT, rank_set.prompt_id),
            f"prompt {rank_set.prompt_id} was never given to you")
        already = rating_store.current_ranking(db, rank_set.prompt_id, rater_id, CRITERION)
        if already is not None and not edit:
            return None
        seconds = None if edit else common.seconds_since(assignment.opened_at)
        stored = rating_store.insert_ranking(
            db, study.id, rank_set.prompt_id, rater_id, CRITERION, ranks, shown,
            submission=rank_set.submission, action="edit" if edit else "rank", seconds=seconds)
        if not stored:
            return None
        if note is not None:
            comment_store.insert(db, study.id, rater_id, UNIT, rank_set.prompt_id,
                                 rank_set.submission, note)
        work.close(db, study.id, rater_id, UNIT, rank_set.prompt_id, "done")
        drafts.drop(db, study.id, rater_id, UNIT, rank_set.prompt_id)
        if edit:
            audit(db, actor, "edit_ranking", study.name, prompt_id=rank_set.prompt_id)
        else:
            checks.after_answer(db, study, rater_id, UNIT, rank_set.prompt_id, ranks)
    return common.progress(db, study, rater_id, UNIT)


def skip(db: Database, study_name: str, rater_id: int, prompt_id: int, reason: str) -> None:
    """Skip a ranking set with a reason."""
    common.skip_item(db, study_name, rater_id, UNIT, prompt_id, reason)

def undo_last(db: Database, study_name: str, rater_id: int) -> int | None:
    """Retract the rater's last new ranking and re-open that prompt, its order kept as a
    draft (the rater changes what they had, not starts again)."""
    study = common.member_study(db, study_name, rater_id)
    with transaction(db):
        gate.check_open(db, study, rater_id)
        last = rating_store.last_new_ranking(db, study.id, rater_id)
        if last is None:
            return None
        prompt_id, criterion = last
        before = rating_store.current_ranking(db, prompt_id, rater_id, criterion)
        if before is not None:
            drafts.save(db, study.id, rater_id, UNIT, prompt_id,
                        RankingDraft.from_ranks(before["ranks"]).to_json())
        rating_store.insert_ranking(db, study.id, prompt_id, rater_id, criterion, {}, [],
                                    submission=common.new_submission(), action="undo",
                                    seconds=None)
        work.claim(db, study.id, rater_id, UNIT, prompt_id)
    return prompt_id


def progress(db: Database, study_name: str, rater_id: int) -> common.Progress:
    """Done / assigned ranking sets."""
    study = common.member_study(db, study_name, rater_id)
    return common.progress(db, study, rater_id, UNIT)


def skipped(db: Database, study_name: str, rater_id: int) -> list[dict]:
    """The ranking sets this rater skipped, newest first: ``prompt_id, prompt, reason, at``."""
    study = common.member_study(db, study_name, rater_id)
    return [{"prompt_id": row["item_id"], "prompt": items.prompt_row(db, row["item_id"])["text"],
             "reason": row["reason"], "at": row["at"]}
            for row in work.skipped_items(db, study.id, rater_id, UNIT)]


def reopen(db: Database, study_name: str, rater_id: int, prompt_id: int) -> None:
    """Take a skipped ranking set up again: it becomes the rater's next set."""
    common.reopen_item(db, study_name, rater_id, UNIT, prompt_id)


def history(db: Database, study_name: str, rater_id: int) -> list[dict]:
    """Every ranking revision of this rater, newest first."""
    study = common.member_study(db, study_name, rater_id)
    return rating_store.ranking_history(db, study.id, rater_id)
