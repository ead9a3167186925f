"""Ranking screen (TIIF-Bench user study): order one prompt's images, blind, by click or key."""

import streamlit as st

from concord.services.labelling import ranking
from concord.services.labelling.common import BlindImage, Progress
from concord.ui import onboarding_view, screen_view, session, widgets
from concord.ui import rank_state as rk

SCREEN = rk.SCREEN

user = session.require_user()
study = session.current_study(user.studies)
if study is None or user.rater_id is None:
    st.info("You have no study to rank.")
    st.stop()
rater_id = user.rater_id
rubric = ranking.ranking_rubric(session.db(), study, rater_id)
widgets.rater_style()
COLUMNS = 4


@st.dialog("Image at actual size", width="large")
def zoom(image: BlindImage) -> None:
    widgets.zoom_image(image.image_path, alt="image to rank, actual size")


def slot(index: int, image: BlindImage) -> None:
    # The image and its button share a container: a click on the image clicks the button.
    with st.container(key=f"rank_slot_{image.public_id}"):
        place = rk.draft().place_of(image.image_id)
        widgets.show_image(image.image_path, alt=f"image {index}")
        label = f"#{place} · remove" if place else f"{index} · rank next"
        st.button(label, key=f"rank_pick_{image.public_id}", on_click=rk.toggle,
                  args=(study, rater_id, image.image_id),
                  type="primary" if place else "secondary", width="stretch")
        if st.button(f"Zoom [Shift+{index % 10}]", key=f"rank_zoom_{image.public_id}",
                     type="tertiary"):
            zoom(image)


def grid(rs: ranking.RankSet) -> None:
    for start in range(0, len(rs.images), COLUMNS):
        cols = st.columns(COLUMNS)
        for offset, image in enumerate(rs.images[start:start + COLUMNS]):
            with cols[offset]:
                slot(start + offset + 1, image)


def controls(rs: ranking.RankSet) -> None:
    screen_view.comment_field(SCREEN, rs)
    c1, c2, c3, c4 = st.columns(4)
    c1.button(f"Submit ⏎ ({rk.draft().ranked}/{len(rs.images)})", type="primary",
              key="rank_submit", on_click=rk.submit, args=(study, rater_id), width="stretch")
    c2.button("Undo pick [U]", key="rank_undo", on_click=rk.undo_pick, args=(study, rater_id),
              width="stretch")
    c3.button("Reset [R]", key="rank_reset", on_click=rk.reset, args=(study, rater_id),
              width="stretch")
    c4.button("Skip [S]", key="rank_skip_btn", on_click=SCREEN.start_skip, width="stretch")
    if rs.ties:
        st.toggle("Tie mode [T]: the next image shares the last rank", key=rk.TIE)
    screen_view.skip_form(SCREEN, study, rater_id, what="prompt")


def keys(rs: ranking.RankSet | None, can_undo: bool) -> widgets.Keys:
    # A slot's number ranks that image; with Shift it shows it at actual size.
    picks, zooms = widgets.widget_css("rank_pick_"), widgets.widget_css("rank_zoom_")
    bindings = {str(slot % 10): (picks, slot - 1, True) for slot in range(1, 11)}
    bindings.update({f"shift+{slot % 10}": (zooms, slot - 1, True) for slot in range(1, 11)})
    bindings.update(widgets.button_keys({"u": "rank_undo", "r": "rank_reset",
                                         "s": "rank_skip_btn", "Enter": "rank_submit"}))
    if rs is not None and rs.ties:
        # The switch's own input: a click on its label is not seen by the widget.
        bindings["t"] = (widgets.widget_css(rk.TIE, "input"), 0, True)
    if can_undo:
        bindings["shift+u"] = (widgets.widget_css("rank_undo_sub"), 0, True)
    keyed = SCREEN.keys(bindings, clicks=[{"within": "[class*='st-key-rank_slot_']",
                                           "target": "[class*='st-key-rank_pick_'] button"}])
    return widgets.with_fields(keyed, sliders=[], comment=screen_view.comment_css(SCREEN, rs))


def head(rs: ranking.RankSet | None, done: Progress) -> None:
    def what() -> None:
        st.caption(" · ".join(f"**{c.name}**: {c.definition}" for c in rubric.criteria))
        st.caption("Click the images from best to worst (or press their slot number). "
                   "Click a ranked image to take it out. Shift + its number: actual size.")

    screen_view.head(SCREEN, f"Rank images · {study}", study, rater_id, item=rs, done=done,
                     noun="prompts ranked", prompt=rs.prompt if rs is not None else None,
                     extra=what)


@st.fragment
@session.releasing
def ranking_screen() -> None:
    if not screen_view.still_allowed():
        return
    rs = SCREEN.current(study, rater_id)
    done = screen_view.progress(rs, lambda: ranking.progress(session.db(), study, rater_id))
    can_undo = done.done > 0  # nothing to take back before the first ranking
    widgets.keyboard(keys(rs, can_undo), key="rank_keys")
    head(rs, done)
    if rs is None:
        onboarding_view.finished_or(study, rater_id, "All done — thank you! Every prompt "
                                    "assigned to you has been ranked.", ranking.UNIT)
    else:
        grid(rs)
        controls(rs)
    if can_undo:
        st.button("Undo last submitted ranking [Shift+U]", key="rank_undo_sub",
                  type="tertiary", on_click=SCREEN.undo, args=(study, rater_id))


ranking_screen()
