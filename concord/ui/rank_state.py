"""Session state of the ranking page: the set on screen and its :class:`RankingDraft`.

Every change to the ranking in progress is saved as a draft, so a reload, a crash of the
browser or a second tab shows the ranking as the rater left it.
"""

from __future__ import annotations

import streamlit as st

from concord.errors import ConcordError
from concord.services import ranking
from concord.services.gate import GateError
from concord.services.ranking_draft import RankingDraft
from concord.ui import session

SET = "rank_set"
SET_STUDY = "rank_set_study"
DRAFT = "rank_draft"
TIE = "rank_tie_mode"
EDIT = "rank_edit_prompt"
NOTICE = "rank_notice"
SKIPPING = "rank_skipping"
SKIP_REASON = "rank_skip_reason"


def current_set(study: str, rater_id: int) -> ranking.RankSet | None:
    """The set on screen; fetched once so its display order and submission id stay put."""
    if st.session_state.get(SET_STUDY) not in (None, study):
        forget()  # the rater switched studies in the sidebar
    found = st.session_state.get(SET)
    if found is not None:
        return found
    db = session.db()
    edit = st.session_state.get(EDIT)
    try:
        found = session.fetch_or_stop(
            lambda: ranking.open_set(db, study, rater_id, edit) if edit is not None
            else ranking.next_set(db, study, rater_id))
    except GateError:
        return None  # the session is over (skips, failed checks): the end screen shows
    st.session_state[SET] = found
    st.session_state[SET_STUDY] = study
    st.session_state[DRAFT] = found.draft if found is not None else RankingDraft()
    st.session_state[TIE] = False
    return found


def draft() -> RankingDraft:
    """The ranking in progress."""
    return st.session_state.setdefault(DRAFT, RankingDraft())


def _changed(study: str, rater_id: int) -> None:
    rs: ranking.RankSet | None = st.session_state.get(SET)
    if rs is None:
        return
    try:
        ranking.save_draft(session.db(), study, rater_id, rs.prompt_id, draft())
    except ConcordError as exc:
        st.session_state[NOTICE] = ("warning", str(exc))


def toggle(study: str, rater_id: int, image_id: int) -> None:
    """Click on an image (or its button): give it the next rank, or take it out."""
    rs: ranking.RankSet | None = st.session_state.get(SET)
    tie = bool(rs is not None and rs.ties and st.session_state.get(TIE))
    draft().toggle(image_id, tie=tie)
    _changed(study, rater_id)


def undo_pick(study: str, rater_id: int) -> None:
    """Take back the last image ranked."""
    draft().undo()
    _changed(study, rater_id)


def reset(study: str, rater_id: int) -> None:
    """Clear the ranking in progress."""
    draft().reset()
    _changed(study, rater_id)


def forget() -> None:
    """Drop the set on screen (after a submit, skip or undo)."""
    for key in (SET, SET_STUDY, DRAFT, TIE, EDIT, SKIPPING):
        st.session_state.pop(key, None)


def submit(study: str, rater_id: int) -> None:
    """Store the ranking when every image has a place (Enter or the button)."""
    rs: ranking.RankSet | None = st.session_state.get(SET)
    if rs is None:
        return
    editing = st.session_state.get(EDIT) is not None
    try:
        stored = ranking.submit(session.db(), study, rater_id, rs, draft().groups,
                                edit=editing)
    except ConcordError as exc:
        st.session_state[NOTICE] = ("warning", str(exc))
        return
    forget()
    if stored is None:
        st.session_state[NOTICE] = ("info", "That prompt was already ranked; here is the next.")
    elif editing:
        st.session_state[NOTICE] = ("success", "Ranking updated.")


def undo_submission(study: str, rater_id: int) -> None:
    """Take back the last submitted ranking and show that prompt again, as it was ranked."""
    try:
        prompt_id = ranking.undo_last(session.db(), study, rater_id)
    except ConcordError as exc:
        st.session_state[NOTICE] = ("warning", str(exc))
        return
    forget()
    st.session_state[NOTICE] = ("info", "Last ranking undone: change it and submit again."
                                if prompt_id else "Nothing to undo.")


def skip_with_reason(study: str, rater_id: int) -> None:
    """Form callback: skip the set on screen with the reason typed into the skip form."""
    rs: ranking.RankSet | None = st.session_state.get(SET)
    if rs is None:
        return
    try:
        ranking.skip(session.db(), study, rater_id, rs.prompt_id,
                     st.session_state.get(SKIP_REASON, ""))
    except ConcordError as exc:
        st.session_state[NOTICE] = ("warning", str(exc))
        return
    forget()


def start_skip() -> None:
    """Show the skip-reason form (button or S); the reason field gets the focus."""
    st.session_state[SKIPPING] = True


def cancel_skip() -> None:
    """Close the skip form (its Cancel button, or Esc)."""
    st.session_state.pop(SKIPPING, None)


def start_edit(prompt_id: int) -> None:
    """Open an earlier ranking for editing on the ranking page."""
    forget()
    st.session_state[EDIT] = prompt_id
