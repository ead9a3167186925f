"""The rubric checklist on the scoring screen: a checkbox per condition, number keys.

The checkboxes sit outside the rating form, so a tick reruns the scoring fragment and the
derived value (shown under the conditions, and chosen in the criterion's radio) follows
at once; the radio and the override reason are in the form and go with the submit.
"""

from __future__ import annotations

import streamlit as st

from concord.rubrics import Rubric
from concord.ui import rate_state as rs
from concord.ui import widgets


def conditions(rubric: Rubric) -> None:
    """Each checklist criterion's conditions as checkboxes, with the derived value."""
    position = 0
    ticked = rs.ticks(rubric)
    for checklist in rubric.checklists:
        criterion = rubric.criterion(checklist.criterion)
        with st.container(key=f"rate_checklist_{criterion.key}"):
            st.markdown(f"**{criterion.key}** — {criterion.name}: tick every statement "
                        "that holds")
            for cond in checklist.conditions:
                hint = f"[{cond.key}] " if cond.key else ""
                st.checkbox(f"{hint}{cond.text}", key=rs.cond_key(position),
                            on_change=rs.on_tick, args=(rubric, criterion.key))
                position += 1
            derived = checklist.derive({k: v for k, v in ticked.items() if k in checklist.ids})
            st.caption(f"Checklist gives **{criterion.key} = {derived:g}** · "
                       f"{criterion.level(derived).label}")


def reason(criterion: str) -> None:
    """The override reason of one criterion (inside the rating form)."""
    st.text_input(f"Reason, if your {criterion} differs from the checklist's",
                  key=rs.reason_key(criterion),
                  placeholder="required only when you override the derived value")


REASON_FIELDS = "[class*='st-key-rate_reason_'] input"


def override_keys(rubric: Rubric) -> dict[str, list[str]]:
    """O: the focus to a checklist criterion's value (the next one on each press), to
    override it with the arrow keys; Tab then reaches its reason."""
    groups = [widgets.widget_css(rs.choice_key(c.criterion), "input[type='radio']")
              for c in rubric.checklists]
    return {"o": groups} if groups else {}


def draft_fields(rubric: Rubric) -> list[str]:
    """The condition checkboxes, as the key listener keeps them in a draft (first: a tick
    re-derives the value, which the kept choices then follow)."""
    return [widgets.widget_css(rs.cond_key(i), "input")
            for i in range(len(rs.conditions(rubric)))]


def key_bindings(rubric: Rubric) -> dict[str, tuple[str, int, bool]]:
    """Each condition's key clicks its checkbox (a rerun: the derived value updates)."""
    return {cond.key.lower(): (widgets.widget_css(rs.cond_key(i), "input"), 0, True)
            for i, (_, cond) in enumerate(rs.conditions(rubric)) if cond.key}
