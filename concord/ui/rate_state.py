"""Session state of the scoring page: the item on screen and the rater's choices.

Kept apart from the page so the keyboard and the buttons go through the same code.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from concord.errors import ConcordError
from concord.rubrics import Condition, Rubric
from concord.services import rating
from concord.services.gate import GateError
from concord.ui import session

ITEM = "rate_item"
ITEM_STUDY = "rate_item_study"
EDIT = "rate_edit_image"
SKIPPING = "rate_skipping"
FLAGGING = "rate_flagging"
NOTICE = "rate_notice"
SKIP_REASON = "rate_skip_reason"
FLAG_NOTE = "rate_flag_note"


def choice_key(criterion: str) -> str:
    """Widget key of one criterion's choice.

    The same widgets serve every item (their values are reset when a new item comes),
    so the browser updates them in place instead of rebuilding them on every submit.
    """
    return f"rate_{criterion}"


def cond_key(position: int) -> str:
    """Widget key of the checkbox of the rubric's ``position``-th condition (over all its
    checklists). The trailing ``x`` keeps one key from being a prefix of another (the key
    listener finds widgets by key prefix: ``rate_cond1x`` is no prefix of ``rate_cond11x``)."""
    return f"rate_cond{position}x"


def reason_key(criterion: str) -> str:
    """Widget key of the override reason of one checklist criterion."""
    return f"rate_reason_{criterion}"


def conditions(rubric: Rubric) -> list[tuple[str, Condition]]:
    """(criterion key, condition) of every condition of the rubric, in screen order."""
    return [(c.criterion, cond) for c in rubric.checklists for cond in c.conditions]


def ticks(rubric: Rubric) -> dict[str, bool]:
    """The ticks on screen, condition id -> ticked."""
    return {cond.id: bool(st.session_state.get(cond_key(i)))
            for i, (_, cond) in enumerate(conditions(rubric))}


def on_tick(rubric: Rubric, criterion: str) -> None:
    """A tick changed: the criterion's value follows the derived one (a choice the rater
    made by hand is replaced; to override, choose again after ticking)."""
    checklist = rubric.checklist(criterion)
    mine = {k: v for k, v in ticks(rubric).items() if k in checklist.ids}
    st.session_state[choice_key(criterion)] = checklist.derive(mine)


def _show_answers(item: rating.Item) -> None:
    """Put the item's earlier ticks, values and reasons (or the derived start) on screen."""
    rubric = item.rubric
    for i, (criterion, cond) in enumerate(conditions(rubric)):
        answer = item.answers.get(criterion)
        st.session_state[cond_key(i)] = bool(answer and dict(answer.ticks).get(cond.id))
    for checklist in rubric.checklists:
        answer = item.answers.get(checklist.criterion)
        st.session_state[reason_key(checklist.criterion)] = (answer and answer.reason) or ""
        if item.current.get(checklist.criterion) is None:
            on_tick(rubric, checklist.criterion)


def current_item(study: str, rater_id: int) -> rating.Item | None:
    """The item on screen; fetched once and kept so its submission id stays stable."""
    if st.session_state.get(ITEM_STUDY) not in (None, study):
        forget_item()  # the rater switched studies in the sidebar
    item = st.session_state.get(ITEM)
    if item is not None:
        return item
    db = session.db()
    edit = st.session_state.get(EDIT)
    try:
        item = session.fetch_or_stop(
            lambda: rating.open_item(db, study, rater_id, edit) if edit is not None
            else rating.next_item(db, study, rater_id))
    except GateError:
        return None  # the session is over (skips, failed checks): the end screen shows
    if item is not None and item.rubric is not None:
        for criterion in item.rubric.criteria:
            st.session_state[choice_key(criterion.key)] = item.current.get(criterion.key)
        _show_answers(item)
    st.session_state[ITEM] = item
    st.session_state[ITEM_STUDY] = study
    return item


def forget_item() -> None:
    """Drop the item on screen so the next run fetches the next one."""
    for key in (ITEM, ITEM_STUDY, EDIT, SKIPPING, FLAGGING):
        st.session_state.pop(key, None)


def notice(kind: str, text: str) -> None:
    """A message shown above the next item."""
    st.session_state[NOTICE] = (kind, text)


def submit(study: str, rater_id: int, rubric: Rubric) -> None:
    """Store the choices for the item on screen, then move on (button or Enter)."""
    item: rating.Item | None = st.session_state.get(ITEM)
    if item is None:
        return
    values = {c.key: st.session_state.get(choice_key(c.key)) for c in rubric.criteria}
    editing = st.session_state.get(EDIT) is not None
    checked = ticks(rubric) if rubric.checklists else None
    reasons = {c.criterion: st.session_state.get(reason_key(c.criterion), "")
               for c in rubric.checklists}
    try:
        result = rating.submit(session.db(), study, rater_id, item.image_id, values,
                               submission=item.submission, edit=editing, ticks=checked,
                               reasons=reasons)
    except ConcordError as exc:
        notice("warning", str(exc))
        return
    forget_item()
    if editing:
        notice("success", "Rating updated.")
    elif not result.stored:
        notice("info", "That image was already rated (another tab?); here is the next one.")


def undo(study: str, rater_id: int) -> None:
    """Take back the last submission and show that image again."""
    image_id = rating.undo_last(session.db(), study, rater_id)
    forget_item()
    notice("info", "Last rating undone." if image_id else "Nothing to undo.")


def skip(study: str, rater_id: int, reason: str) -> None:
    """Skip the item on screen with a reason."""
    item: rating.Item | None = st.session_state.get(ITEM)
    if item is None:
        return
    try:
        rating.skip(session.db(), study, rater_id, item.image_id, reason)
    except ConcordError as exc:
        notice("warning", str(exc))
        return
    forget_item()
    notice("info", "Skipped.")


def skip_with_reason(study: str, rater_id: int) -> None:
    """Form callback: skip with the reason typed into the skip form."""
    skip(study, rater_id, st.session_state.get(SKIP_REASON, ""))


def flag_with_note(study: str, rater_id: int) -> None:
    """Form callback: flag the item on screen, with the optional note typed into the form."""
    item: rating.Item | None = st.session_state.get(ITEM)
    st.session_state.pop(FLAGGING, None)
    if item is None:
        return
    note = st.session_state.get(FLAG_NOTE, "").strip()
    try:
        rating.flag(session.db(), study, rater_id, item.image_id, note)
    except ConcordError as exc:
        notice("warning", str(exc))
        return
    st.session_state[ITEM] = dataclasses.replace(item, flags=(*item.flags, note))
    notice("info", "Flagged for the researcher. Rate it anyway, or skip it (S).")


def start_skip() -> None:
    """Show the skip-reason form (button or S); the reason field gets the focus."""
    st.session_state.pop(FLAGGING, None)
    st.session_state[SKIPPING] = True


def start_flag() -> None:
    """Show the flag form (button or F): an optional note, Enter flags, Esc cancels."""
    st.session_state.pop(SKIPPING, None)
    st.session_state[FLAGGING] = True


def cancel_forms() -> None:
    """Close an open skip or flag form (its Cancel button, or Esc)."""
    st.session_state.pop(SKIPPING, None)
    st.session_state.pop(FLAGGING, None)


def start_edit(image_id: int) -> None:
    """Open an earlier rating for editing on the scoring page."""
    forget_item()
    st.session_state[EDIT] = image_id
