"""Scoring screen: one image beside its prompt, a score per rubric criterion, keyboard-first."""

import dataclasses

import streamlit as st

from concord.rubrics import Rubric
from concord.services.labelling import rating
from concord.services.labelling.common import Progress
from concord.ui import checklist_view, onboarding_view, scale_input, screen_view, session, widgets
from concord.ui import rate_state as rs

SCREEN = rs.SCREEN

user = session.require_user()
study = session.current_study(user.studies)
if study is None or user.rater_id is None:
    st.info("You have no study to rate.")
    st.stop()
rater_id = user.rater_id
default_rubric = rating.study_rubric(session.db(), study, rater_id)
widgets.rater_style()


def level_label(criterion, value: float, listed: bool = False) -> str:
    level = criterion.level(value)
    # A checklist criterion's level keys give way to its conditions' keys (O, then ←/→).
    hint = f"[{level.key.upper()}] " if level.key and not listed else ""
    return f"{hint}{value:g} · {level.label}"


def choices(item: rating.Item, editing: bool, rubric: Rubric) -> None:
    # One form: choosing a level changes nothing on the server; only the submit runs.
    # The checklist's ticks sit outside it (checklist_view): a tick re-derives the value.
    checklist_view.conditions(rubric)
    with st.form("rate_form", border=False, enter_to_submit=False):
        for criterion in rubric.criteria:
            if criterion.continuous is not None:
                scale_input.continuous(criterion, rs.choice_key(criterion.key),
                                       f"**{criterion.key}** — {criterion.name}")
                continue
            listed = rubric.checklist(criterion.key) is not None
            st.radio(
                f"**{criterion.key}** — {criterion.name}"
                + (" (from the checklist; to override, choose another value: O, then ←/→)"
                   if listed else ""),
                list(criterion.values), index=None,
                format_func=lambda v, c=criterion, x=listed: level_label(c, v, x),
                captions=[lv.description for lv in criterion.levels], horizontal=True,
                key=rs.choice_key(criterion.key), help=criterion.definition)
            if listed:
                checklist_view.reason(criterion.key)
        screen_view.comment_field(SCREEN, item)
        st.form_submit_button("Save changes ⏎" if editing else "Submit ⏎", type="primary",
                              key="rate_submit", on_click=rs.submit,
                              args=(study, rater_id, rubric))


def actions(item: rating.Item, can_undo: bool) -> None:
    c1, c2, c3, c4 = st.columns(4)
    c1.button("Skip [S]", key="rate_skip_btn", on_click=SCREEN.start_skip, width="stretch")
    c2.button("Flagged ✓ [F]" if item.flags else "Flag [F]", key="rate_flag",
              on_click=SCREEN.start_form, args=("flag",), width="stretch")
    if can_undo:  # nothing to take back before the first rating
        c3.button("Undo [U]", key="rate_undo", on_click=SCREEN.undo, args=(study, rater_id),
                  help="Take back your last rating and show that image again",
                  width="stretch")
    if c4.button("Zoom [Z]", key="rate_zoom", width="stretch"):
        zoom(item)


@st.dialog("Rating guide", width="large")
def guide(rubric: Rubric) -> None:
    # A dialog renders only when opened; a popover would render the guide on every rerun.
    st.markdown(f"**{rubric.title}**")
    for criterion in rubric.criteria:
        st.markdown(f"**{criterion.key} — {criterion.name}.** {criterion.definition}")
    st.markdown(rubric.guide)


@st.dialog("Image at actual size", width="large")
def zoom(item: rating.Item) -> None:
    widgets.zoom_image(item.image_path)


def keys(item: rating.Item | None, rubric: Rubric, can_undo: bool) -> widgets.Keys:
    bindings = widgets.level_keys(rubric, rs.choice_key)
    bindings.update(checklist_view.key_bindings(rubric))
    draft = [*checklist_view.draft_fields(rubric),
             *(widgets.widget_css(rs.choice_key(c.key), "[role='radiogroup'] label")
               for c in rubric.criteria if c.continuous is None)]
    # Enter in a number field (a continuous scale too fine for a slider) submits too.
    enter_in = [checklist_view.REASON_FIELDS] if rubric.checklists else []
    enter_in += [widgets.widget_css(rs.choice_key(c.key), "input[type='number']")
                 for c in rubric.criteria if c.continuous is not None]
    bindings.update(widgets.button_keys({"Enter": "rate_submit", "s": "rate_skip_btn",
                                         "f": "rate_flag", "z": "rate_zoom",
                                         "g": "rate_guide",
                                         **({"u": "rate_undo"} if can_undo else {})}))
    keyed = SCREEN.keys(bindings, opens=("s", "f"))
    keyed = dataclasses.replace(
        keyed, cycles=checklist_view.override_keys(rubric),
        enter_in=", ".join(enter_in) or None,
        draft=None if item is None or SCREEN.editing() else
        {"id": SCREEN.draft_id(study, rater_id, item.public_id), "fields": draft})
    return widgets.with_fields(keyed, sliders=widgets.slider_css(rubric, rs.choice_key),
                               comment=screen_view.comment_css(SCREEN, item))


def head(item: rating.Item | None, editing: bool, done: Progress) -> None:
    """Progress, notices, the prompt (and an edit instruction): they stay in view."""
    def instruction() -> None:
        if item is not None and item.instruction:
            widgets.literal(f"Instruction: {item.instruction}")

    screen_view.head(SCREEN, f"Rate images · {study}" + (" · editing an earlier rating"
                                                        if editing else ""),
                     study, rater_id, item=item, noun="rated", done=done,
                     prompt=item.prompt if item is not None else None, extra=instruction)


def panel(item: rating.Item, editing: bool, rubric: Rubric, can_undo: bool) -> None:
    if item.source_image is not None:
        st.caption("Source image")
        widgets.show_image(item.source_image, alt="source image")
    if item.flags:
        notes = "; ".join(n for n in item.flags if n) or "no note"
        st.caption(f"You flagged this image ({notes}).")
    if st.button("Rating guide [G]", key="rate_guide", type="tertiary"):
        guide(rubric)
    choices(item, editing, rubric)
    actions(item, can_undo)
    screen_view.skip_form(SCREEN, study, rater_id, what="image",
                          placeholder="e.g. image does not load, prompt unclear")
    if SCREEN.open_form() == "flag":
        screen_view.reason_form(SCREEN, "flag", study, rater_id,
                                label="Note for the researcher (optional)", ok="Flag image",
                                on_ok=rs.flag_with_note,
                                placeholder="e.g. broken image, offensive content")


@st.fragment
@session.releasing
def scoring() -> None:
    if not screen_view.still_allowed():
        return
    item = SCREEN.current(study, rater_id)
    # Each image is rated on its own dimension's rubric (``rubrics:`` in the manifest).
    rubric = item.rubric if item is not None and item.rubric is not None else default_rubric
    done = screen_view.progress(item, lambda: rating.progress(session.db(), study, rater_id))
    widgets.keyboard(keys(item, rubric, done.done > 0), key=f"rate_keys_{rubric.id}")
    editing = SCREEN.editing()
    head(item, editing, done)
    if item is None:
        onboarding_view.finished_or(study, rater_id, "All done — thank you! Every image "
                                    "assigned to you has been rated.", rating.UNIT)
        return
    left, right = st.columns([2, 3])
    with left:
        panel(item, editing, rubric, done.done > 0)
    with right, st.container(key="concord_image"):
        widgets.show_image(item.image_path)
    widgets.preload(item.preload)


scoring()
