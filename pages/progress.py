"""Researcher: who has done how much, and what raters skipped or flagged."""

import pandas as pd
import streamlit as st

from concord.services import studies
from concord.ui import session

session.require_researcher()
db = session.db()
study = session.current_study(tuple(r["study"] for r in studies.overview(db)))
st.title("Progress")
if study is None:
    st.info("Import a study first.")
    st.stop()

overview = {r["study"]: r for r in studies.overview(db)}[study]
c1, c2, c3, c4 = st.columns(4)
c1.metric("Images", overview["images"])
c2.metric("Ratings", overview["ratings"])
c3.metric("Rankings", overview["rankings"],
          help="one per prompt, rater and criterion (as on the dashboard)")
c4.metric("Raters wanted per item", overview["raters_per_item"])

rows = studies.rater_progress(db, study)
st.subheader("Per rater")
if rows:
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
else:
    st.info("Nobody has started yet.")

marks = studies.flags_and_skips(db, study)
st.subheader(f"Skips and flags ({len(marks)})")
if marks:
    st.dataframe(pd.DataFrame(marks), hide_index=True, width="stretch")
