"""The scoring protocol: serve an image, store SC/PR (or any rubric's) scores.

Every function takes an open ``Database`` and the signed-in rater's id. Nothing here
returns a model name: what a rater's browser gets is :class:`Item`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sqlite_utils import Database

from concord.errors import RatingError
from concord.rubrics import Rubric
from concord.services import rubric_choice
from concord.services.labelling import checklist, checks, comments, common, gate
from concord.store import checklists as checklist_store
from concord.store import comments as comment_store
from concord.store import items, work
from concord.store import ratings as rating_store
from concord.store.db import audit, transaction

UNIT = "image"


@dataclass(frozen=True, slots=True)
class Item:
    """One image as a rater sees it (blind: no model, no file path)."""

    image_id: int
    public_id: str
    prompt: str
    image_path: Path
    source_image: Path | None
    instruction: str | None
    meta: dict = field(default_factory=dict)
    current: dict[str, float] = field(default_factory=dict)
    submission: str = ""
    flags: tuple[str, ...] = ()
    progress: common.Progress | None = None
    preload: Path | None = None  # the image most likely shown next (sent ahead, off screen)
    rubric: Rubric | None = None  # the rubric of this image's dimension (task)
    # The rater's latest checklist answers (ticks, derived value, override reason) by
    # criterion, also those an undo took back: an edit shows the earlier ticks.
    answers: dict[str, checklist_store.Answer] = field(default_factory=dict)
    comment: comments.Shown = field(default_factory=comments.Shown)


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """What a submit did: ``stored`` False means it was a repeat and changed nothing."""

    stored: bool
    seconds: float | None


def study_rubric(db: Database, study_name: str, rater_id: int) -> Rubric:
    """The default rubric of a study the rater belongs to (dimensions with a rubric of
    their own, ``rubrics:`` in the manifest, use :attr:`Item.rubric`)."""
    return rubric_choice.rubric_for(common.member_study(db, study_name, rater_id))


def _item(db: Database, study, image_id: int, rater_id: int,
          pick: common.Pick | None = None) -> Item:
    """The rater's view of an image; ``current`` holds their latest choices, also those an
    undo took back (so the rater sees what they had chosen)."""
    row = items.image(db, image_id)
    base = Path(study.root or ".")
    rubric = rubric_choice.rubric_for(study, row.dimension)
    return Item(
        image_id=row.id, public_id=row.public_id, prompt=row.prompt,
        image_path=base / (row.path or ""),
        source_image=base / row.source_image if row.source_image else None,
        instruction=row.instruction,
        meta={k: v for k, v in row.meta.items() if k in {"source_caption", "target_caption"}},
        current=rating_store.last_values(db, image_id, rater_id),
        submission=common.new_submission(),
        flags=tuple(work.notes(db, study.id, rater_id, UNIT, image_id, "flag")),
        progress=pick.progress if pick else common.progress(db, study, rater_id, UNIT),
        preload=_file_of(db, study, pick.following) if pick else None,
        rubric=rubric,
        answers=checklist_store.last_answers(db, image_id, rater_id) if rubric.checklists
        else {},
        comment=comments.shown(db, study, rater_id, UNIT, image_id),
    )


def _file_of(db: Database, study, image_id: int | None) -> Path | None:
    if image_id is None:
        return None
    row = items.image(db, image_id)
    return Path(study.root or ".") / row.path if row.path else None


def next_item(db: Database, study_name: str, rater_id: int) -> Item | None:
    """The rater's open item, or the next one to do; None when they are done."""
    study = common.member_study(db, study_name, rater_id)
    with transaction(db):
        pick = common.pick_next(db, study, rater_id, UNIT)
    return None if pick.item_id is None else _item(db, study, pick.item_id, rater_id, pick)


def open_item(db: Database, study_name: str, rater_id: int, image_id: int) -> Item:
    """Re-open an image the rater has rated before (to edit it from the history list)."""
    study = common.member_study(db, study_name, rater_id)
    common.require(work.get_assignment(db, study.id, rater_id, UNIT, image_id) is not None,
                   f"image {image_id} was never given to you")
    return _item(db, study, image_id, rater_id)


def reopen(db: Database, study_name: str, rater_id: int, image_id: int) -> None:
    """Take a skipped image up again: it becomes the rater's next item (a fresh lease)."""
    common.reopen_item(db, study_name, rater_id, UNIT, image_id)


def check_values(rubric: Rubric, values: Mapping[str, float | None]) -> dict[str, float]:
    expected = [c.key for c in rubric.criteria]
    given = {k: v for k in expected if (v := values.get(k)) is not None}
    missing = [k for k in expected if k not in given]
    if missing:
        raise RatingError(f"choose a score for {', '.join(missing)}")
    extra = sorted(set(values) - set(expected))
    if extra:
        raise RatingError(f"unknown criteria {extra} (rubric {rubric.id} has {expected})")
    out: dict[str, float] = {}
    for key in expected:
        value = float(given[key])
        criterion = rubric.criterion(key)
        if not criterion.accepts(value):
            raise RatingError(f"{key} = {value:g} is not on the scale {criterion.scale_text()}")
        out[key] = value
    return out


def submit(db: Database, study_name: str, rater_id: int, image_id: int,
           values: Mapping[str, float | None], *, submission: str, edit: bool = False,
           actor: str = "rater", ticks: Mapping[str, bool] | None = None,
           reasons: Mapping[str, str] | None = None, comment: str | None = None,
           ) -> SubmitResult:
    """Store a rating (or, with ``edit``, a new revision of one).

    With ``ticks`` (condition id -> ticked) the rubric's checklists derive the values of
    their criteria (a value left None takes the derived one; another value needs a reason
    in ``reasons``, criterion -> text), and the ticks are stored with the rating. Without
    ``ticks`` the values are taken as given (imports, scripts). ``comment``: the rater's
    free text, kept with this revision (study setting ``comments``).

    A repeated submission (double click, rerun, a second tab showing the same item) is
    recognised by its submission id, or because the image already has a current rating
    and this is not an edit, and stores nothing.
    """
    study = common.member_study(db, study_name, rater_id)
    rubric = rubric_choice.rubric_for_image(db, study, image_id)
    found: list[checklist_store.Answer] = []
    if ticks is not None and rubric.checklists:
        values, found = checklist.answers(rubric, values, ticks, reasons)
    clean = check_values(rubric, values)
    note = comments.checked(study, comment)
    with transaction(db):
        gate.check_open(db, study, rater_id)
        assignment = common.found(work.get_assignment(db, study.id, rater_id, UNIT, image_id),
                                  f"image {image_id} was never given to you")
        if rating_store.submission_exists(db, submission):
            return SubmitResult(False, None)
        if not edit and rating_store.current_values(db, image_id, rater_id):
            return SubmitResult(False, None)
        seconds = common.seconds_since(assignment.opened_at) if not edit else None
        rating_store.insert_rating(db, study.id, image_id, rater_id, clean,
                                   submission=submission, action="edit" if edit else "rate",
                                   seconds=seconds)
        checklist_store.insert(db, submission, rubric.id, found)
        if note is not None:
            comment_store.insert(db, study.id, rater_id, UNIT, image_id, submission, note)
        work.close(db, study.id, rater_id, UNIT, image_id, "done")
        if edit:
            audit(db, actor, "edit_rating", study.name, image_id=image_id, values=clean)
        else:
            checks.after_answer(db, study, rater_id, UNIT, image_id, clean)
    return SubmitResult(True, seconds)


def skip(db: Database, study_name: str, rater_id: int, image_id: int, reason: str) -> None:
    """Skip an image with a reason; it is not served to this rater again."""
    common.skip_item(db, study_name, rater_id, UNIT, image_id, reason)

def flag(db: Database, study_name: str, rater_id: int, image_id: int, note: str = "") -> None:
    """Flag an image for the researcher (broken, offensive…), with an optional note; the
    item stays open."""
    study = common.member_study(db, study_name, rater_id)
    with transaction(db):
        gate.check_open(db, study, rater_id)
        common.require(work.get_assignment(db, study.id, rater_id, UNIT, image_id) is not None,
                       f"image {image_id} was never given to you")
        work.add_mark(db, study.id, rater_id, UNIT, image_id, "flag", note.strip())


def undo_last(db: Database, study_name: str, rater_id: int) -> int | None:
    """Retract the rater's last new rating and make that image their open item again."""
    study = common.member_study(db, study_name, rater_id)
    with transaction(db):
        gate.check_open(db, study, rater_id)
        last = rating_store.last_new_rating(db, study.id, rater_id)
        if last is None:
            return None
        image_id, _ = last
        criteria = list(rating_store.current_values(db, image_id, rater_id))
        rating_store.insert_rating(db, study.id, image_id, rater_id,
                                   dict.fromkeys(criteria), submission=common.new_submission(),
                                   action="undo", seconds=None)
        # The item showing now stays open; the re-opened one is newer, so it comes first.
        work.claim(db, study.id, rater_id, UNIT, image_id)
    return image_id


def progress(db: Database, study_name: str, rater_id: int) -> common.Progress:
    """Done / assigned for the progress bar."""
    study = common.member_study(db, study_name, rater_id)
    return common.progress(db, study, rater_id, UNIT)


def history(db: Database, study_name: str, rater_id: int) -> list[dict]:
    """The images this rater has rated, newest first: ``image_id, public_id, prompt_id,
    prompt, vals`` (criterion → value), ``at`` and ``image_path`` (for a thumbnail)."""
    study = common.member_study(db, study_name, rater_id)
    base = Path(study.root or ".")
    rows = rating_store.rated_images(db, study.id, rater_id)
    return [{**r, "image_path": base / r.pop("path") if r.get("path") else None} for r in rows]


def skipped(db: Database, study_name: str, rater_id: int) -> list[dict]:
    """The images this rater skipped, newest first: ``image_id, prompt, reason, at,
    image_path``; each can be opened again and rated."""
    study = common.member_study(db, study_name, rater_id)
    base = Path(study.root or ".")
    out = []
    for row in work.skipped_items(db, study.id, rater_id, UNIT):
        im = items.image(db, row["item_id"])
        out.append({"image_id": im.id, "public_id": im.public_id, "prompt": im.prompt,
                    "reason": row["reason"], "at": row["at"],
                    "image_path": base / im.path if im.path else None})
    return out
