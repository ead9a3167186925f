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


def choices(editing: bool) -> None:
    # One form: choosing a level changes nothing on the server; only the submit runs.
    with st.form("rate_form", border=False, enter_to_submit=False):
        for criterion in rubric.criteria:
            st.radio(
                f"**{criterion.key}** — {criterion.name}", list(criterion.values), index=None,
                format_func=lambda v, c=criterion: level_label(c, v),
                captions=[lv.description for lv in criterion.levels], horizontal=True,
                key=rs.choice_key(criterion.key), help=criterion.definition)
        st.form_submit_button("Save changes ⏎" if editing else "Submit ⏎", type="primary",
                              key="rate_submit", on_click=rs.submit,
                              args=(study, rater_id, rubric))


def actions(item: rating.Item) -> None:
    c1, c2, c3, c4 = st.columns(4)
    c1.button("Skip [S]", key="rate_skip_btn", on_click=rs.start_skip)
    c2.button("Flag [F]", key="rate_flag", on_click=rs.flag, args=(study, rater_id))
    c3.button("Undo last [U]", key="rate_undo", on_click=rs.undo, args=(study, rater_id))
    if c4.button("Zoom [Z]", key="rate_zoom"):
        zoom(item)


@st.dialog("Rating guide", width="large")
def guide() -> None:
    # A dialog renders only when opened; a popover would render the guide on every rerun.
    st.markdown(f"**{rubric.title}**")
    for criterion in rubric.criteria:
        st.markdown(f"**{criterion.key} — {criterion.name}.** {criterion.definition}")
    st.markdown(rubric.guide)


@st.dialog("Image", width="large")
def zoom(item: rating.Item) -> None:
    widgets.show_image(item.image_path)


def skip_form() -> None:
    with st.form("rate_skip_form"):
        st.text_input("Why skip this image?", key="rate_skip_reason",
                      placeholder="e.g. image does not load, prompt unclear")
        st.form_submit_button("Skip image", on_click=rs.skip_with_reason,
                              args=(study, rater_id))


def key_bindings() -> dict[str, tuple[str, int, bool]]:
    keys: dict[str, tuple[str, int, bool]] = {}
    for criterion in rubric.criteria:
        radio = widgets.widget_css(rs.choice_key(criterion.key), "[role='radiogroup'] label")
        for i, level in enumerate(criterion.levels):
            if level.key:
                keys[level.key.lower()] = (radio, i, False)
    keys.update(widgets.button_keys({"Enter": "rate_submit", "s": "rate_skip_btn",
                                     "f": "rate_flag", "u": "rate_undo", "z": "rate_zoom"}))
    return keys


@st.fragment
def scoring() -> None:
    item = rs.current_item(study, rater_id, [c.key for c in rubric.criteria])
    widgets.keyboard(key_bindings(), key=f"rate_keys_{rubric.id}")
    done = rating.progress(session.db(), study, rater_id)
    widgets.progress_and_notice(done.done, done.skipped, done.assigned, "rated", rs.NOTICE)
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
        if st.button("Rating guide", key="rate_guide", type="tertiary"):
            guide()
        choices(editing)
        actions(item)
        if st.session_state.get(rs.SKIPPING):
            skip_form()
    with right:
        widgets.show_image(item.image_path)
    widgets.preload(rating.preload_path(session.db(), study, rater_id, item.image_id))


st.title(f"Rate images · {study}")
scoring()
