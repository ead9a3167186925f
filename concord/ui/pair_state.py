"""The pair screen's parts of the rater-screen controller (:mod:`concord.ui.screen`): the
pair on screen keeps its placement and submission id while the rater looks at it; a
choice stores the judgment and the next run fetches the next pair."""

from __future__ import annotations

from concord.services.labelling import pairs
from concord.ui import screen, session

LABELS = {"left": "left image better", "right": "right image better", "tie": "tie",
          "both_bad": "both bad"}

SCREEN = screen.Screen(screen.Parts(
    prefix="pair", item_key="pair_item",
    fetch=screen.fetcher(pairs.open_pair, pairs.next_pair),
    unit_id=lambda item: item.pair_id, skip=pairs.skip, undo_last=pairs.undo_last,
    undone="Last judgment undone: choose again.",
    already="That pair was already judged (another tab?); here is the next one."))


def choose(study: str, rater_id: int, outcome: str) -> None:
    """Store the judgment of the pair on screen (a key, a button or a click on an image)."""
    SCREEN.store(lambda item, editing: pairs.submit(
        session.db(), study, rater_id, item, outcome, edit=editing,
        comment=SCREEN.comment()).stored,
        f"Judgment updated: {LABELS[outcome]}.")
