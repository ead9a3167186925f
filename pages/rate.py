"""Scoring screen: one image beside its prompt, a score per rubric criterion, keyboard-first."""

import streamlit as st

from concord.services import rating
from concord.ui import rate_state as rs
from concord.ui import session, widgets

user = session.require_user()
study = session.current_study(user.studies)
if study is None or user.rater_id is None:
    st.info("You have no study to rate.")
    st.stop()
rater_id = user.rater_id
rubric = rating.study_rubric(session.db(), study, rater_id)


def level_label(criterion, value: float) -> str:
    level = criterion.level(value)
    hint = f"[{level.key.upper()}] " if level.key else ""
    return f"{hint}{value:g} · {level.label}"


def choices(item: rating.Item) -> None:
    for criterion in rubric.criteria:
        st.radio(
            f"**{criterion.key}** — {criterion.name}", list(criterion.values), index=None,
            format_func=lambda v, c=criterion: level_label(c, v),
            captions=[lv.description for lv in criterion.levels], horizontal=True,
            key=rs.choice_key(criterion.key, item.image_id), help=criterion.definition)


def actions(item: rating.Item, editing: bool) -> None:
    c1, c2, c3, c4, c5 = st.columns(5)
    c1.button("Save changes ⏎" if editing else "Submit ⏎", type="primary", key="rate_submit",
              on_click=rs.submit, args=(study, rater_id, rubric))
    if c2.button("Skip [S]", key="rate_skip_btn"):
        st.session_state[rs.SKIPPING] = True
    c3.button("Flag [F]", key="rate_flag", on_click=rs.flag, args=(study, rater_id))
    c4.button("Undo last [U]", key="rate_undo", on_click=rs.undo, args=(study, rater_id))
    if c5.button("Zoom [Z]", key="rate_zoom"):
        zoom(item)


@st.dialog("Image", width="large")
def zoom(item: rating.Item) -> None:
    widgets.show_image(item.image_path)


def skip_form() -> None:
    with st.form("rate_skip_form"):
        reason = st.text_input("Why skip this image?", key="rate_skip_reason",
                               placeholder="e.g. image does not load, prompt unclear")
        if st.form_submit_button("Skip image"):
            rs.skip(study, rater_id, reason)
            st.rerun(scope="fragment")


@st.fragment
def scoring() -> None:
    item = rs.current_item(study, rater_id)
    keys = [lv.key for c in rubric.criteria for lv in c.levels if lv.key]
    pressed = widgets.keyboard([*keys, "Enter", "s", "f", "u", "z"], key="rate_keys")
    if pressed and item is not None:
        action = rs.apply_key(pressed, rubric, item)
        if action == "submit":
            rs.submit(study, rater_id, rubric)
        elif action == "undo":
            rs.undo(study, rater_id)
        elif action == "flag":
            rs.flag(study, rater_id)
        elif action == "skip":
            st.session_state[rs.SKIPPING] = True
        elif action == "zoom":
            zoom(item)
        item = rs.current_item(study, rater_id)
    done = rating.progress(session.db(), study, rater_id)
    st.progress(done.done / max(done.assigned, 1),
                text=f"{done.done} / {done.assigned} rated · {done.skipped} skipped")
    notice = st.session_state.pop(rs.NOTICE, None)
    if notice:
        getattr(st, notice[0])(notice[1])
    if item is None:
        st.success("All done — thank you! Every image assigned to you has been rated.")
        return
    editing = st.session_state.get(rs.EDIT) is not None
    left, right = st.columns([2, 3])
    with left:
        st.caption("Editing an earlier rating" if editing else "Prompt")
        st.markdown(f"#### {item.prompt or '(no prompt text)'}")
        if item.instruction:
            st.markdown(f"**Instruction:** {item.instruction}")
        if item.source_image is not None:
            st.caption("Source image")
            widgets.show_image(item.source_image, alt="source image")
        with st.popover("📖 Rating guide"):
            st.markdown(f"**{rubric.title}**\n\n{rubric.guide}")
        choices(item)
        if st.session_state.get(rs.SKIPPING):
            skip_form()
        actions(item, editing)
    with right:
        widgets.show_image(item.image_path)


st.title(f"Rate images · {study}")
scoring()
