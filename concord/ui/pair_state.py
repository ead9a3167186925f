"""Session state of the pair screen: the pair on screen and what the keys and buttons do.

The pair is fetched once and kept, so its placement and submission id stay put while the
rater looks at it; a choice stores the judgment and the next run fetches the next pair.
"""

from __future__ import annotations

import streamlit as st

from concord.errors import ConcordError
from concord.services import pairs
from concord.services.gate import GateError
from concord.ui import session

ITEM = "pair_item"
ITEM_STUDY = "pair_item_study"
EDIT = "pair_edit"
NOTICE = "pair_notice"
SKIPPING = "pair_skipping"
SKIP_REASON = "pair_skip_reason"
LABELS = {"left": "left image better", "right": "right image better", "tie": "tie",
          "both_bad": "both bad"}


def current_item(study: str, rater_id: int) -> pairs.PairItem | None:
    """The pair on screen; fetched once so its placement and submission id stay stable."""
    if st.session_state.get(ITEM_STUDY) not in (None, study):
        forget()  # the rater switched studies in the sidebar
    item = st.session_state.get(ITEM)
    if item is not None:
        return item
    db = session.db()
    edit = st.session_state.get(EDIT)
    try:
        item = session.fetch_or_stop(
            lambda: pairs.open_pair(db, study, rater_id, edit) if edit is not None
            else pairs.next_pair(db, study, rater_id))
    except GateError:
        return None  # the session is over (skips, failed checks): the end screen shows
    st.session_state[ITEM] = item
    st.session_state[ITEM_STUDY] = study
    return item


def forget() -> None:
    """Drop the pair on screen so the next run fetches the next one."""
    for key in (ITEM, ITEM_STUDY, EDIT, SKIPPING):
        st.session_state.pop(key, None)


def notice(kind: str, text: str) -> None:
    """A message shown above the next pair."""
    st.session_state[NOTICE] = (kind, text)


def choose(study: str, rater_id: int, outcome: str) -> None:
    """Store the judgment of the pair on screen (a key, a button or a click on an image)."""
    item: pairs.PairItem | None = st.session_state.get(ITEM)
    if item is None:
        return
    editing = st.session_state.get(EDIT) is not None
    try:
        result = pairs.submit(session.db(), study, rater_id, item, outcome, edit=editing)
    except ConcordError as exc:
        notice("warning", str(exc))
        return
    forget()
    if editing:
        notice("success", f"Judgment updated: {LABELS[outcome]}.")
    elif not result.stored:
        notice("info", "That pair was already judged (another tab?); here is the next one.")


def undo(study: str, rater_id: int) -> None:
    """Take back the last judgment and show that pair again, with the choice made then."""
    try:
        pair_id = pairs.undo_last(session.db(), study, rater_id)
    except ConcordError as exc:
        notice("warning", str(exc))
        return
    forget()
    notice("info", "Last judgment undone: choose again." if pair_id else "Nothing to undo.")


def skip_with_reason(study: str, rater_id: int) -> None:
    """Form callback: skip the pair on screen with the reason typed into the skip form."""
    item: pairs.PairItem | None = st.session_state.get(ITEM)
    if item is None:
        return
    try:
        pairs.skip(session.db(), study, rater_id, item.pair_id,
                   st.session_state.get(SKIP_REASON, ""))
    except ConcordError as exc:
        notice("warning", str(exc))
        return
    forget()
    notice("info", "Skipped.")


def start_skip() -> None:
    """Show the skip-reason form (button or S); the reason field gets the focus."""
    st.session_state[SKIPPING] = True


def cancel_skip() -> None:
    """Close the skip form (its Cancel button, or Esc)."""
    st.session_state.pop(SKIPPING, None)


def start_edit(pair_id: int) -> None:
    """Open an earlier judgment for changing on the pair screen."""
    forget()
    st.session_state[EDIT] = pair_id
