"""Concord: navigation and sign-in. Pages live in pages/ and call concord.services."""

import streamlit as st

from concord.services import studies
from concord.ui import session, signin

st.set_page_config(page_title="Concord", page_icon="⚖️", layout="wide")

db = session.open_run_db()
user = signin.resolve(db)

SIGN_IN = st.Page("pages/sign_in.py", title="Sign in", icon=":material/key:", default=True)
RATE = st.Page("pages/rate.py", title="Rate images", icon=":material/star:")
RANK = st.Page("pages/rank.py", title="Rank images", icon=":material/leaderboard:")
PAIR = st.Page("pages/pair.py", title="Compare pairs", icon=":material/compare:")
MY_WORK = st.Page("pages/my_work.py", title="My ratings", icon=":material/history:")
STUDIES = st.Page("pages/studies.py", title="Studies", icon=":material/folder:")
RATERS = st.Page("pages/raters.py", title="Raters", icon=":material/group:")
PROGRESS = st.Page("pages/progress.py", title="Progress", icon=":material/monitoring:")
DASHBOARD = st.Page("pages/dashboard.py", title="Agreement dashboard", icon=":material/analytics:")
ADJUDICATE = st.Page("pages/adjudicate.py", title="Adjudicate", icon=":material/gavel:")
EXPORT = st.Page("pages/export.py", title="Export", icon=":material/download:")
METRICS = st.Page("pages/metrics.py", title="Metrics", icon=":material/speed:")
START = st.Page("pages/start.py", title="Before you start", icon=":material/flag:")

if user is None:
    nav = st.navigation([SIGN_IN], position="hidden")
elif user.is_researcher:
    nav = st.navigation({"Research": [DASHBOARD, STUDIES, RATERS, PROGRESS, ADJUDICATE,
                                        METRICS, EXPORT]})
elif signin.onboarding_stage(db, user) != "work":
    # Instructions, consent and the practice block come before any real item.
    nav = st.navigation([START])
else:
    rated = [studies.get(db, s) for s in user.studies]
    protocols = {s.protocol for s in rated}
    rater_pages = []
    if protocols & {"score", "both"}:
        rater_pages.append(RATE)
    if protocols & {"rank", "both"}:
        rater_pages.append(RANK)
    if any(s.has_pairs for s in rated):
        rater_pages.append(PAIR)
    nav = st.navigation([*rater_pages, MY_WORK] if rater_pages else [MY_WORK])

if user is not None:
    with st.sidebar:
        st.caption(f"Signed in as **{user.name}** ({user.role})")
        signin.study_picker(user, db)
        if st.button("Sign out", key="sign_out"):
            signin.sign_out()
            st.rerun()

nav.run()
