"""Researcher: who has done how much, and what raters skipped or flagged."""

import pandas as pd
import streamlit as st

from concord.services import studies
from concord.ui import session, widgets

session.require_researcher()
db = session.db()
study = session.current_study(tuple(r["study"] for r in studies.overview(db)))
st.title("Progress")
if study is None:
    st.info("Import a study first.")
    st.stop()

overview = {r["study"]: r for r in studies.overview(db)}[study]
counts = studies.label_counts(db, study)  # as the statistics count: without excluded raters
c1, c2, c3, c4, c5, c6 = st.columns(6)
c1.metric("Rated images", f"{counts['rated_images']} / {counts['images']}",
          help="images with at least one current rating")
c2.metric("Rating values", counts["rating_values"],
          help="one per image, rater and criterion: SC and PR count apart")
c3.metric("Raters who rated", counts["raters_who_rated"])
c4.metric("Rankings", counts["rankings"],
          help="one per prompt, rater and criterion (as on the dashboard)")
c5.metric("Pair judgments", counts["pair_judgments"])
c6.metric("Raters wanted per item", overview["raters_per_item"])
if counts["excluded"]:
    st.caption("Counts leave out the labels of raters excluded from the study (as the "
               f"statistics do): {', '.join(counts['excluded'])}. The table below lists "
               "everyone.")

rows = studies.rater_progress(db, study)
st.subheader("Per rater")
if rows:
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
else:
    st.info("Nobody has started yet.")

marks = studies.flags_and_skips(db, study)
st.subheader(f"Skips and flags ({len(marks)})")
kinds = st.segmented_control("Show", ["skip", "flag"], selection_mode="multi",
                             default=["skip", "flag"], key="marks_kinds")
shown = [m for m in marks if m["kind"] in (kinds or [])]
PAGE = 20
if len(shown) > PAGE:
    page = st.number_input("Page", 1, (len(shown) + PAGE - 1) // PAGE, 1, key="marks_page")
    shown = shown[(int(page) - 1) * PAGE:int(page) * PAGE]
for m in shown:
    c0, c1, c2 = st.columns([1, 5, 4], vertical_alignment="center")
    if m["image_path"] is not None:
        with c0:
            widgets.show_image(m["image_path"], alt="thumbnail", width=96)
    with c1:
        widgets.literal(m["prompt"] or "(no prompt text)")
        st.caption(f"{m['unit']} · prompt {m['prompt_id']}"
                   + (f" · model {m['model']}" if m["model"] else
                      " · pair" if m["unit"] == "pair" else " · ranking set"))
    c2.markdown(f"**{m['kind']}** by **{m['rater']}** · {m['created_at'][:16]}")
    with c2:
        widgets.literal(m["note"] or "(no note)")
