"""Concord: navigation and sign-in. Pages live in pages/ and call concord.services."""

import streamlit as st

from concord.ui import nav, session, signin
from concord.ui.nav import Spec

st.set_page_config(page_title="Concord", page_icon="⚖️", layout="wide")

# Every page of the app; who may open which is concord.ui.nav.allowed.
PAGES = nav.Pages(
    sign_in=Spec("pages/sign_in.py", "Sign in", ":material/key:"),
    start=Spec("pages/start.py", "Before you start", ":material/flag:"),
    rate=Spec("pages/rate.py", "Rate images", ":material/star:"),
    rank=Spec("pages/rank.py", "Rank images", ":material/leaderboard:"),
    pair=Spec("pages/pair.py", "Compare pairs", ":material/compare:"),
    my_work=Spec("pages/my_work.py", "My ratings", ":material/history:"),
    research=(Spec("pages/dashboard.py", "Agreement dashboard", ":material/analytics:"),
              Spec("pages/studies.py", "Studies", ":material/folder:"),
              Spec("pages/raters.py", "Raters", ":material/group:"),
              Spec("pages/progress.py", "Progress", ":material/monitoring:"),
              Spec("pages/adjudicate.py", "Adjudicate", ":material/gavel:"),
              Spec("pages/metrics.py", "Metrics", ":material/speed:"),
              Spec("pages/export.py", "Export", ":material/download:")),
)

with session.run_db() as db:  # given back when the run ends
    user = signin.resolve(db)
    menu = nav.menu(db, user, PAGES)
    page = st.navigation(menu.sections, position=menu.position)

    if user is not None:
        with st.sidebar:
            st.caption(f"Signed in as **{user.name}** ({user.role})")
            signin.study_picker(user, db)
            if st.button("Sign out", key="sign_out"):
                signin.sign_out(db)
                st.rerun()

    nav.open_page(db, user, menu, page)
