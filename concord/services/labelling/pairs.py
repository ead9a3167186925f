"""The pairwise A/B protocol: two images of one prompt side by side, the rater picks one.

Outcomes: ``left``, ``right``, ``tie``, ``both_bad`` (neither is acceptable). Which image
is on the left is decided per rater and pair by a keyed hash (study ``pairs.seed``) and
stored with every judgment. Nothing here returns a model name: what a rater's browser
gets is :class:`PairItem`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from sqlite_utils import Database

from concord.errors import RatingError
from concord.rubrics import Rubric
from concord.services.labelling import checks, comments, common, gate
from concord.services.labelling.rating import SubmitResult
from concord.store import comments as comment_store
from concord.store import items, work
from concord.store import pairs as pair_store
from concord.store import studies as study_store
from concord.store.db import audit, transaction

UNIT = "pair"
CRITERION = "overall"
OUTCOMES = ("left", "right", "tie", "both_bad")


@dataclass(frozen=True, slots=True)
class PairItem:
    """A pair as this rater sees it; ``current`` is their latest outcome (also one an undo
    took back), shown as the choice made."""

    pair_id: int
    prompt: str
    left: common.BlindImage
    right: common.BlindImage
    submission: str
    current: str | None = None
    progress: common.Progress | None = None
    preload: tuple[Path, ...] = ()  # the two images most likely shown next
    comment: comments.Shown = field(default_factory=comments.Shown)


def swapped(seed: int, rater_id: int, pair_id: int) -> bool:
    """Whether this rater sees the pair's second image on the left (a keyed coin flip)."""
    key = f"place:{seed}:{rater_id}".encode()[:64]
    return hashlib.blake2b(str(pair_id).encode(), key=key, digest_size=1).digest()[0] & 1 == 1


def pair_rubric(db: Database, study_name: str, rater_id: int) -> Rubric:
    """The criteria shown above the pair: the study's rubric for protocol ``pair``, else the
    ranking criteria (prompt following, visual quality)."""
    study = common.member_study(db, study_name, rater_id)
    own = study.rubric if study.protocol in ("pair", "rank") else None
    return common.study_rubric(study, own or "tiif-ranking")


def _side(db: Database, base: Path, image_id: int) -> common.BlindImage:
    row = items.image(db, image_id)
    return common.BlindImage(row.id, row.public_id, base / (row.path or ""))


def _item(db: Database, study: study_store.Study, rater_id: int, pair_id: int) -> PairItem:
    pair = pair_store.get_pair(db, pair_id)
    shown = pair_store.current_judgment(db, pair_id, rater_id, CRITERION)
    if shown is not None:  # the placement this rater was shown stays
        left, right = shown[1], shown[2]
    elif swapped(int(study.settings.get("pairs", {}).get("seed", 0)), rater_id, pair_id):
        left, right = pair.image_b, pair.image_a
    else:
        left, right = pair.image_a, pair.image_b
    base = Path(study.root or ".")
    return PairItem(pair_id=pair_id, prompt=items.prompt_row(db, pair.prompt_id)["text"],
                    left=_side(db, base, left), right=_side(db, base, right),
                    submission=common.new_submission(),
                    current=pair_store.last_outcome(db, pair_id, rater_id, CRITERION),
                    comment=comments.shown(db, study, rater_id, UNIT, pair_id))


def next_pair(db: Database, study_name: str, rater_id: int) -> PairItem | None:
    """The rater's open pair, or the next one; None when they are done."""
    study = common.member_study(db, study_name, rater_id)
    with transaction(db):
        pick = common.pick_next(db, study, rater_id, UNIT)
    if pick.item_id is None:
        return None
    return dataclasses.replace(_item(db, study, rater_id, pick.item_id), progress=pick.progress,
                               preload=_files_of(db, study, pick.following))


def open_pair(db: Database, study_name: str, rater_id: int, pair_id: int) -> PairItem:
    """Re-open a pair the rater judged before (to change the judgment)."""
    study = common.member_study(db, study_name, rater_id)
    common.require(work.get_assignment(db, study.id, rater_id, UNIT, pair_id) is not None,
                   f"pair {pair_id} was never given to you")
    return _item(db, study, rater_id, pair_id)


def _check(db: Database, study: study_store.Study, item: PairItem, outcome: str) -> None:
    if outcome not in OUTCOMES:
        raise RatingError(f"unknown choice {outcome!r} (one of {', '.join(OUTCOMES)})")
    pair = pair_store.get_pair(db, item.pair_id)
    shown = {item.left.image_id, item.right.image_id}
    common.require(pair.study_id == study.id and shown == {pair.image_a, pair.image_b},
                   f"pair {item.pair_id} does not hold these images")


def submit(db: Database, study_name: str, rater_id: int, item: PairItem, outcome: str, *,
           edit: bool = False, actor: str = "rater", comment: str | None = None,
           ) -> SubmitResult:
    """Store a judgment of the pair on screen, with the placement shown (and the rater's
    ``comment``, study setting ``comments``).

    A repeated submission (double click, rerun, replay, a second tab on the same pair) is
    recognised by its submission id, or because the pair already has a judgment of this
    rater and this is not an edit, and stores nothing.
    """
    study = common.member_study(db, study_name, rater_id)
    note = comments.checked(study, comment)
    with transaction(db):
        gate.check_open(db, study, rater_id)
        assignment = common.found(work.get_assignment(db, study.id, rater_id, UNIT, item.pair_id),
                                  f"pair {item.pair_id} was never given to you")
        _check(db, study, item, outcome)
        if pair_store.submission_exists(db, item.submission):
            return SubmitResult(False, None)
        current = pair_store.current_judgment(db, item.pair_id, rater_id, CRITERION)
        if current is not None and not edit:
            return SubmitResult(False, None)
        seconds = None if edit else common.seconds_since(assignment.opened_at)
        pair_store.insert_judgment(db, study.id, item.pair_id, rater_id, CRITERION,
                                   (item.left.image_id, item.right.image_id), outcome,
                                   submission=item.submission,
                                   action="edit" if edit else "judge", seconds=seconds)
        if note is not None:
            comment_store.insert(db, study.id, rater_id, UNIT, item.pair_id,
                                 item.submission, note)
        work.close(db, study.id, rater_id, UNIT, item.pair_id, "done")
        if edit:
            audit(db, actor, "edit_pair_judgment", study.name, pair_id=item.pair_id,
                  outcome=outcome)
        else:
            chosen = {"left": item.left.image_id, "right": item.right.image_id}.get(outcome)
            checks.after_answer(db, study, rater_id, UNIT, item.pair_id, chosen)
    return SubmitResult(True, seconds)


def undo_last(db: Database, study_name: str, rater_id: int) -> int | None:
    """Retract the rater's last new judgment and make that pair their open item again."""
    study = common.member_study(db, study_name, rater_id)
    with transaction(db):
        gate.check_open(db, study, rater_id)
        last = pair_store.last_new_judgment(db, study.id, rater_id)
        if last is None:
            return None
        pair_id, criterion = last
        current = pair_store.current_judgment(db, pair_id, rater_id, criterion)
        placement = (current[1], current[2]) if current else (0, 0)
        pair_store.insert_judgment(db, study.id, pair_id, rater_id, criterion, placement, None,
                                   submission=common.new_submission(), action="undo",
                                   seconds=None)
        work.claim(db, study.id, rater_id, UNIT, pair_id)
    return pair_id


def skip(db: Database, study_name: str, rater_id: int, pair_id: int, reason: str) -> None:
    """Skip a pair with a reason; it is not served to this rater again."""
    common.skip_item(db, study_name, rater_id, UNIT, pair_id, reason)


def reopen(db: Database, study_name: str, rater_id: int, pair_id: int) -> None:
    """Take a skipped pair up again: it becomes the rater's next pair."""
    common.reopen_item(db, study_name, rater_id, UNIT, pair_id)


def _files_of(db: Database, study: study_store.Study, pair_id: int | None) -> tuple[Path, ...]:
    """The two image files of a pair (to preload), none for no pair."""
    if pair_id is None:
        return ()
    pair = pair_store.get_pair(db, pair_id)
    base = Path(study.root or ".")
    return tuple(base / row.path for row in (items.image(db, pair.image_a),
                                            items.image(db, pair.image_b)) if row.path)


def progress(db: Database, study_name: str, rater_id: int) -> common.Progress:
    """Done / assigned pairs for the progress bar."""
    study = common.member_study(db, study_name, rater_id)
    return common.progress(db, study, rater_id, UNIT)


def history(db: Database, study_name: str, rater_id: int) -> list[dict]:
    """The pairs this rater has judged, newest first: ``pair_id, prompt, outcome, at,
    left_path, right_path`` (absolute, as shown: thumbnails)."""
    study = common.member_study(db, study_name, rater_id)
    base = Path(study.root or ".")
    return [{**r, "left_path": base / r["left_path"], "right_path": base / r["right_path"]}
            for r in pair_store.judged_pairs(db, study.id, rater_id)]


def skipped(db: Database, study_name: str, rater_id: int) -> list[dict]:
    """The pairs this rater skipped, newest first: ``pair_id, prompt, reason, at``."""
    study = common.member_study(db, study_name, rater_id)
    return [{"pair_id": row["item_id"], "reason": row["reason"], "at": row["at"],
             "prompt": items.prompt_row(db, pair_store.get_pair(db, row["item_id"])
                                        .prompt_id)["text"]}
            for row in work.skipped_items(db, study.id, rater_id, UNIT)]


def enabled(db: Database, study_name: str, rater_id: int) -> bool:
    """Whether the study asks pairs at all."""
    return common.member_study(db, study_name, rater_id).has_pairs
