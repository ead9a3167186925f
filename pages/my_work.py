"""The rater's own ratings, rankings and skips: review them and open one again."""

import streamlit as st

from concord.services.labelling import pairs, ranking, rating
from concord.ui import pair_state, rank_state, rate_state, session, widgets

user = session.require_user()
study = session.current_study(user.studies)
if study is None or user.rater_id is None:
    st.info("Nothing here yet.")
    st.stop()
db = session.db()
PAGE = 20
st.title(f"My ratings · {study}")
st.caption("Every change is kept: editing adds a new revision, the researcher sees the latest."
           " Keys: J / K go down / up the rows, Enter opens the row in focus.")
# The rows' buttons (Edit, Rate, Rank, Judge) in page order: J / K move the focus along them.
ROWS = ", ".join(f"[class*='st-key-{k}'] button" for k in (
    "edit_rating_", "rate_skipped_", "rank_skipped_", "edit_ranking_", "edit_pair_",
    "pair_skipped_"))
widgets.keyboard(widgets.Keys({}, moves={"j": 1, "k": -1}, ring=ROWS), key="my_work_keys")


def page_of(rows: list, key: str) -> list:
    """One page of ``rows`` (thumbnails are images: a long list would be slow to show)."""
    pages = max((len(rows) + PAGE - 1) // PAGE, 1)
    if pages == 1:
        return rows
    n = st.number_input("Page", 1, pages, 1, key=key, help=f"{PAGE} per page")
    return rows[(int(n) - 1) * PAGE:int(n) * PAGE]


def thumb(col, path) -> None:
    with col:
        if path is not None:
            widgets.show_image(path, alt="thumbnail", width=96)


def rate_now(image_id: int) -> None:
    rating.reopen(db, study, user.rater_id, image_id)
    rate_state.SCREEN.forget()


rated = rating.history(db, study, user.rater_id)
st.subheader(f"Scored images ({len(rated)})")
for row in page_of(rated, "my_rated_page"):
    c0, c1, c2, c3 = st.columns([1, 5, 3, 1], vertical_alignment="center")
    thumb(c0, row["image_path"])
    with c1:
        widgets.literal(row["prompt"] or row["prompt_id"])
    c2.write(" · ".join(f"{k} {v:g}" for k, v in sorted(row["vals"].items())))
    if c3.button("Edit", key=f"edit_rating_{row['public_id']}"):
        rate_state.SCREEN.start_edit(row["image_id"])
        st.switch_page("pages/rate.py")

skipped = rating.skipped(db, study, user.rater_id)
if skipped:
    st.subheader(f"Skipped images ({len(skipped)})")
    for row in page_of(skipped, "my_skipped_page"):
        c0, c1, c2, c3 = st.columns([1, 5, 3, 1], vertical_alignment="center")
        thumb(c0, row["image_path"])
        with c1:
            widgets.literal(row["prompt"] or "(no prompt text)")
        c2.caption(f"Skipped: {row['reason']}")
        if c3.button("Rate", key=f"rate_skipped_{row['public_id']}"):
            rate_now(row["image_id"])
            st.switch_page("pages/rate.py")

skipped_sets = ranking.skipped(db, study, user.rater_id)
if skipped_sets:
    st.subheader(f"Skipped ranking sets ({len(skipped_sets)})")
    for row in skipped_sets:
        c1, c2, c3 = st.columns([6, 3, 1])
        with c1:
            widgets.literal(row["prompt"] or "(no prompt text)")
        c2.caption(f"Skipped: {row['reason']}")
        if c3.button("Rank", key=f"rank_skipped_{row['prompt_id']}"):
            ranking.reopen(db, study, user.rater_id, row["prompt_id"])
            rank_state.SCREEN.forget()
            st.switch_page("pages/rank.py")

latest: dict = {}
for r in ranking.history(db, study, user.rater_id):  # newest first
    latest.setdefault(r["prompt_id"], r)
latest = {k: v for k, v in latest.items() if not v["retracted"]}
st.subheader(f"Ranked prompts ({len(latest)})")
for prompt_id, row in latest.items():
    c1, c2 = st.columns([9, 1])
    with c1:
        widgets.literal(row["prompt"])
    if c2.button("Edit", key=f"edit_ranking_{prompt_id}"):
        rank_state.SCREEN.start_edit(prompt_id)
        st.switch_page("pages/rank.py")


def pair_rows() -> None:
    judged = pairs.history(db, study, user.rater_id)
    st.subheader(f"Judged pairs ({len(judged)})")
    for row in page_of(judged, "my_pairs_page"):
        c0, c1, c2, c3, c4 = st.columns([1, 1, 4, 2, 1], vertical_alignment="center")
        thumb(c0, row["left_path"])
        thumb(c1, row["right_path"])
        with c2:
            widgets.literal(row["prompt"] or "(no prompt text)")
        c3.write(pair_state.LABELS[row["outcome"]].capitalize())
        if c4.button("Edit", key=f"edit_pair_{row['pair_id']}"):
            pair_state.SCREEN.start_edit(row["pair_id"])
            st.switch_page("pages/pair.py")
    for row in pairs.skipped(db, study, user.rater_id):
        c1, c2, c3 = st.columns([6, 3, 1])
        with c1:
            widgets.literal(row["prompt"] or "(no prompt text)")
        c2.caption(f"Skipped pair: {row['reason']}")
        if c3.button("Judge", key=f"pair_skipped_{row['pair_id']}"):
            pairs.reopen(db, study, user.rater_id, row["pair_id"])
            pair_state.SCREEN.forget()
            st.switch_page("pages/pair.py")


if pairs.enabled(db, study, user.rater_id):
    pair_rows()
