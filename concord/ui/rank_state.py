"""The ranking screen's parts of the rater-screen controller (:mod:`concord.ui.screen`):
the set on screen and its :class:`RankingDraft`.

Every change to the ranking in progress is saved as a draft, so a reload, a crash of the
browser or a second tab shows the ranking as the rater left it.
"""

from __future__ import annotations

import streamlit as st

from concord.services.labelling import ranking
from concord.services.labelling.ranking_draft import RankingDraft
from concord.ui import screen, session

DRAFT = "rank_draft"
TIE = "rank_tie_mode"


def _show(found: ranking.RankSet | None) -> None:
    st.session_state[DRAFT] = found.draft if found is not None else RankingDraft()
    st.session_state[TIE] = False


SCREEN = screen.Screen(screen.Parts(
    prefix="rank", item_key="rank_set",
    fetch=screen.fetcher(ranking.open_set, ranking.next_set),
    unit_id=lambda rs: rs.prompt_id, skip=ranking.skip, undo_last=ranking.undo_last,
    undone="Last ranking undone: change it and submit again.",
    already="That prompt was already ranked; here is the next.", skipped=None,
    on_show=_show, extra_state=(DRAFT, TIE)))


def draft() -> RankingDraft:
    """The ranking in progress."""
    return st.session_state.setdefault(DRAFT, RankingDraft())


def _changed(study: str, rater_id: int) -> None:
    rs: ranking.RankSet | None = SCREEN.item()
    if rs is not None:
        SCREEN.guarded(lambda: ranking.save_draft(session.db(), study, rater_id, rs.prompt_id,
                                                  draft()))


def toggle(study: str, rater_id: int, image_id: int) -> None:
    """Click on an image (or its button): give it the next rank, or take it out."""
    rs: ranking.RankSet | None = SCREEN.item()
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


def submit(study: str, rater_id: int) -> None:
    """Store the ranking when every image has a place (Enter or the button)."""
    SCREEN.store(lambda rs, editing: ranking.submit(
        session.db(), study, rater_id, rs, draft().groups, edit=editing,
        comment=SCREEN.comment()) is not None,
        "Ranking updated.")
