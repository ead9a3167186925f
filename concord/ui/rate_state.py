"""The scoring screen's parts of the rater-screen controller (:mod:`concord.ui.screen`):
the rater's choices, the checklist's ticks and the flag form."""

from __future__ import annotations

import dataclasses

import streamlit as st

from concord.rubrics import Condition, Rubric
from concord.services.labelling import rating
from concord.ui import screen, session


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


def _show(item: rating.Item | None) -> None:
    """Put the item's earlier values, ticks and reasons (or the derived start) on screen."""
    if item is None or item.rubric is None:
        return
    rubric = item.rubric
    for criterion in rubric.criteria:
        st.session_state[choice_key(criterion.key)] = item.current.get(criterion.key)
    for i, (criterion, cond) in enumerate(conditions(rubric)):
        answer = item.answers.get(criterion)
        st.session_state[cond_key(i)] = bool(answer and dict(answer.ticks).get(cond.id))
    for checklist in rubric.checklists:
        answer = item.answers.get(checklist.criterion)
        st.session_state[reason_key(checklist.criterion)] = (answer and answer.reason) or ""
        if item.current.get(checklist.criterion) is None:
            on_tick(rubric, checklist.criterion)


SCREEN = screen.Screen(screen.Parts(
    prefix="rate", item_key="rate_item",
    fetch=screen.fetcher(rating.open_item, rating.next_item),
    unit_id=lambda item: item.image_id, shown_id=lambda item: item.public_id,
    skip=rating.skip, undo_last=rating.undo_last, undone="Last rating undone.",
    already="That image was already rated (another tab?); here is the next one.",
    on_show=_show, forms=("skip", "flag")))
FLAG_NOTE = "rate_flag_note"


def submit(study: str, rater_id: int, rubric: Rubric) -> None:
    """Store the choices for the item on screen, then move on (button or Enter)."""
    values = {c.key: st.session_state.get(choice_key(c.key)) for c in rubric.criteria}
    checked = ticks(rubric) if rubric.checklists else None
    reasons = {c.criterion: st.session_state.get(reason_key(c.criterion), "")
               for c in rubric.checklists}
    SCREEN.store(lambda item, editing: rating.submit(
        session.db(), study, rater_id, item.image_id, values, submission=item.submission,
        edit=editing, ticks=checked, reasons=reasons, comment=SCREEN.comment()).stored,
        "Rating updated.")


def flag_with_note(study: str, rater_id: int) -> None:
    """Form callback: flag the item on screen, with the optional note typed into the form."""
    item: rating.Item | None = SCREEN.item()
    SCREEN.cancel_forms()
    if item is None:
        return
    note = st.session_state.get(FLAG_NOTE, "").strip()
    ok, _ = SCREEN.guarded(lambda: rating.flag(session.db(), study, rater_id, item.image_id,
                                               note))
    if not ok:
        return
    st.session_state[SCREEN.ITEM] = dataclasses.replace(item, flags=(*item.flags, note))
    SCREEN.notice("info", "Flagged for the researcher. Rate it anyway, or skip it (S).")
