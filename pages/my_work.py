"""The rater's own ratings and rankings: review them and open one again to edit it."""

import streamlit as st

from concord.services import ranking, rating
from concord.ui import rank_state, rate_state, session

user = session.require_user()
study = session.current_study(user.studies)
if study is None or user.rater_id is None:
    st.info("Nothing here yet.")
    st.stop()
db = session.db()
st.title(f"My ratings · {study}")
st.caption("Every change is kept: editing adds a new revision, the researcher sees the latest.")

rated = rating.history(db, study, user.rater_id)
st.subheader(f"Scored images ({len(rated)})")
for row in rated[:200]:
    c1, c2, c3 = st.columns([6, 3, 1])
    c1.write(row["prompt"] or row["prompt_id"])
    c2.write(" · ".join(f"{k} {v:g}" for k, v in sorted(row["vals"].items())))
    if c3.button("Edit", key=f"edit_rating_{row['public_id']}"):
        rate_state.start_edit(row["image_id"])
        st.switch_page("pages/rate.py")

latest: dict = {}
for r in ranking.history(db, study, user.rater_id):  # newest first
    latest.setdefault(r["prompt_id"], r)
latest = {k: v for k, v in latest.items() if not v["retracted"]}
st.subheader(f"Ranked prompts ({len(latest)})")
for prompt_id, row in latest.items():
    c1, c2 = st.columns([9, 1])
    c1.write(row["prompt"])
    if c2.button("Edit", key=f"edit_ranking_{prompt_id}"):
        rank_state.start_edit(prompt_id)
        st.switch_page("pages/rank.py")
