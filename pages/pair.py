"""Pair screen (A/B): two images of one prompt side by side, blind; which one is better?"""

import streamlit as st

from concord.services.labelling import pairs
from concord.services.labelling.common import Progress
from concord.ui import onboarding_view, screen_view, session, widgets
from concord.ui import pair_state as ps

SCREEN = ps.SCREEN

user = session.require_user()
study = session.current_study(user.studies)
if study is None or user.rater_id is None:
    st.info("You have no study to compare pairs in.")
    st.stop()
rater_id = user.rater_id
if not pairs.enabled(session.db(), study, rater_id):
    st.info(f"Study {study!r} has no pairs to compare; choose another study in the sidebar.")
    st.stop()
rubric = pairs.pair_rubric(session.db(), study, rater_id)
widgets.rater_style()
CHOICES = (("pair_pick_left", "left", "[1 / ←] Left is better"),
           ("pair_pick_right", "right", "[2 / →] Right is better"))


@st.dialog("Both images at actual size", width="large")
def zoom(item: pairs.PairItem) -> None:
    st.markdown("**Left image**")
    widgets.zoom_image(item.left.image_path, alt="left image, actual size",
                       key="concord_zoom_left")
    st.markdown("**Right image**")
    widgets.zoom_image(item.right.image_path, alt="right image, actual size",
                       key="concord_zoom_right")


def side(item: pairs.PairItem, which: int) -> None:
    key, outcome, label = CHOICES[which]
    image = item.left if outcome == "left" else item.right
    # The image and its button share a container: a click on the image clicks the button.
    with st.container(key=f"pair_side_{outcome}"):
        st.button(label, key=key, on_click=ps.choose, args=(study, rater_id, outcome),
                  type="primary" if item.current == outcome else "secondary", width="stretch")
        widgets.show_image(image.image_path, alt=f"{outcome} image")


def actions(item: pairs.PairItem, can_undo: bool) -> None:
    screen_view.comment_field(SCREEN, item)  # before the choice: a choice submits
    c1, c2, c3, c4, c5 = st.columns(5)
    for col, (key, outcome, label) in zip((c1, c2), (("pair_tie", "tie", "[3 / T] Tie"),
                                                     ("pair_both_bad", "both_bad",
                                                      "[4 / B] Both bad")), strict=True):
        col.button(label, key=key, on_click=ps.choose, args=(study, rater_id, outcome),
                   type="primary" if item.current == outcome else "secondary",
                   width="stretch")
    c3.button("Skip [S]", key="pair_skip_btn", on_click=SCREEN.start_skip, width="stretch")
    if can_undo:  # nothing to take back before the first judgment
        c4.button("Undo [U]", key="pair_undo", on_click=SCREEN.undo, args=(study, rater_id),
                  help="Take back your last judgment and show that pair again",
                  width="stretch")
    if c5.button("Zoom [Z]", key="pair_zoom", width="stretch"):
        zoom(item)
    screen_view.skip_form(SCREEN, study, rater_id, what="pair",
                          placeholder="e.g. an image does not load, prompt unclear")


def keys(item: pairs.PairItem | None, can_undo: bool) -> widgets.Keys:
    left, right = widgets.widget_css("pair_pick_left"), widgets.widget_css("pair_pick_right")
    bindings = {"1": (left, 0, True), "ArrowLeft": (left, 0, True), "2": (right, 0, True),
                "ArrowRight": (right, 0, True)}
    bindings.update(widgets.button_keys({"3": "pair_tie", "t": "pair_tie",
                                         "4": "pair_both_bad", "b": "pair_both_bad",
                                         "s": "pair_skip_btn", "z": "pair_zoom",
                                         **({"u": "pair_undo"} if can_undo else {})}))
    keyed = SCREEN.keys(bindings, clicks=[{"within": "[class*='st-key-pair_side_']",
                                           "target": "[class*='st-key-pair_pick_'] button"}])
    return widgets.with_fields(keyed, sliders=[],
                               comment=screen_view.comment_css(SCREEN, item))


def head(item: pairs.PairItem | None, editing: bool, done: Progress) -> None:
    """Progress, notices, the prompt and what to judge: they stay in view."""
    screen_view.head(
        SCREEN, f"Compare pairs · {study}" + (" · changing an earlier judgment"
                                               if editing else ""),
        study, rater_id, item=item, noun="pairs judged", done=done,
        prompt=item.prompt if item is not None else None,
        extra=lambda: st.caption("Which image is better? " + " · ".join(
            f"**{c.name}**: {c.definition}" for c in rubric.criteria)))


@st.fragment
@session.releasing
def pair_screen() -> None:
    if not screen_view.still_allowed():
        return
    item = SCREEN.current(study, rater_id)
    done = screen_view.progress(item, lambda: pairs.progress(session.db(), study, rater_id))
    can_undo = done.done > 0
    widgets.keyboard(keys(item, can_undo), key="pair_keys")
    editing = SCREEN.editing()
    head(item, editing, done)
    if item is None:
        onboarding_view.finished_or(study, rater_id, "All done — thank you! Every pair "
                                    "assigned to you has been judged.", pairs.UNIT)
        if can_undo:
            st.button("Undo last judgment [U]", key="pair_undo", on_click=SCREEN.undo,
                      args=(study, rater_id))
        return
    left, right = st.columns(2)
    with left:
        side(item, 0)
    with right:
        side(item, 1)
    actions(item, can_undo)
    widgets.preload(list(item.preload))


pair_screen()
