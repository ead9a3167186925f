"""Session state of the ranking page: the set on screen and the ranking being built.

The ranking in progress is a list of groups of image ids, best first (a group has more
than one image only when ties are allowed), plus the order of clicks for undo.
"""

from __future__ import annotations

import streamlit as st

from concord.errors import ConcordError
from concord.services import ranking
from concord.ui import session

SET = "rank_set"
SET_STUDY = "rank_set_study"
GROUPS = "rank_groups"
PICKS = "rank_picks"
TIE = "rank_tie_mode"
EDIT = "rank_edit_prompt"
NOTICE = "rank_notice"
SKIPPING = "rank_skipping"


def current_set(study: str, rater_id: int) -> ranking.RankSet | None:
    """The set on screen; fetched once so its display order and submission id stay put."""
    if st.session_state.get(SET_STUDY) not in (None, study):
        forget()  # the rater switched studies in the sidebar
    found = st.session_state.get(SET)
    if found is not None:
        return found
    db = session.db()
    edit = st.session_state.get(EDIT)
    found = (ranking.open_set(db, study, rater_id, edit) if edit is not None
             else ranking.next_set(db, study, rater_id))
    st.session_state[SET] = found
    st.session_state[SET_STUDY] = study
    st.session_state[GROUPS], st.session_state[PICKS] = _from_current(found)
    st.session_state[TIE] = False
    return found


def _from_current(rs: ranking.RankSet | None) -> tuple[list[list[int]], list[int]]:
    if rs is None or not rs.current:
        return [], []
    by_rank: dict[float, list[int]] = {}
    for image_id, rank in sorted(rs.current.items(), key=lambda kv: kv[1]):
        by_rank.setdefault(rank, []).append(image_id)
    groups = [by_rank[r] for r in sorted(by_rank)]
    return groups, [i for g in groups for i in g]


def groups() -> list[list[int]]:
    """The ranking in progress."""
    return st.session_state.setdefault(GROUPS, [])


def place_of(image_id: int) -> str | None:
    """The rank shown on an image's badge ("3", or "=2" for a tie), None if unranked."""
    place = 1
    for g in groups():
        if image_id in g:
            return f"={place}" if len(g) > 1 else str(place)
        place += len(g)
    return None


def toggle(image_id: int) -> None:
    """Click on an image: give it the next rank, or take it out and close the gap."""
    gs, picks = groups(), st.session_state.setdefault(PICKS, [])
    for g in gs:
        if image_id in g:
            g.remove(image_id)
            picks.remove(image_id)
            st.session_state[GROUPS] = [x for x in gs if x]
            return
    rs: ranking.RankSet | None = st.session_state.get(SET)
    if rs is not None and rs.ties and st.session_state.get(TIE) and gs:
        gs[-1].append(image_id)
    else:
        gs.append([image_id])
    picks.append(image_id)


def undo_pick() -> None:
    """Take back the last image ranked."""
    picks = st.session_state.setdefault(PICKS, [])
    if picks:
        toggle(picks[-1])


def reset() -> None:
    """Clear the ranking in progress."""
    st.session_state[GROUPS], st.session_state[PICKS] = [], []


def forget() -> None:
    """Drop the set on screen (after a submit, skip or undo)."""
    for key in (SET, SET_STUDY, GROUPS, PICKS, TIE, EDIT, SKIPPING):
        st.session_state.pop(key, None)


def submit(study: str, rater_id: int) -> None:
    """Store the ranking when every image has a place (Enter or the button)."""
    rs: ranking.RankSet | None = st.session_state.get(SET)
    if rs is None:
        return
    editing = st.session_state.get(EDIT) is not None
    try:
        stored = ranking.submit(session.db(), study, rater_id, rs, groups(), edit=editing)
    except ConcordError as exc:
        st.session_state[NOTICE] = ("warning", str(exc))
        return
    forget()
    if stored is None:
        st.session_state[NOTICE] = ("info", "That prompt was already ranked; here is the next.")
    elif editing:
        st.session_state[NOTICE] = ("success", "Ranking updated.")


def undo_submission(study: str, rater_id: int) -> None:
    """Take back the last submitted ranking and show that prompt again."""
    prompt_id = ranking.undo_last(session.db(), study, rater_id)
    forget()
    st.session_state[NOTICE] = ("info", "Last ranking undone." if prompt_id
                                else "Nothing to undo.")


def skip(study: str, rater_id: int, reason: str) -> None:
    """Skip the set on screen with a reason."""
    rs: ranking.RankSet | None = st.session_state.get(SET)
    if rs is None:
        return
    try:
        ranking.skip(session.db(), study, rater_id, rs.prompt_id, reason)
    except ConcordError as exc:
        st.session_state[NOTICE] = ("warning", str(exc))
        return
    forget()


def start_skip() -> None:
    """Show the skip-reason form (button or S)."""
    st.session_state[SKIPPING] = True


def skip_with_reason(study: str, rater_id: int) -> None:
    """Form callback: skip with the reason typed into the skip form."""
    skip(study, rater_id, st.session_state.get("rank_skip_reason", ""))


def start_edit(prompt_id: int) -> None:
    """Open an earlier ranking for editing on the ranking page."""
    forget()
    st.session_state[EDIT] = prompt_id
