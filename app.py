"""Concord: navigation and sign-in. Pages live in pages/ and call concord.services."""

import streamlit as st

from concord.ui import nav, session, signin

st.set_page_config(page_title="Concord", page_icon="⚖️", layout="wide")

db = session.open_run_db()
user = signin.resolve(db)
chosen = nav.select(db, user)

if user is not None:
    with st.sidebar:
        st.caption(f"Signed in as **{user.name}** ({user.role})")
        signin.study_picker(user, db)
        if st.button("Sign out", key="sign_out"):
            signin.sign_out(db)
            st.rerun()

nav.open_page(db, user, chosen)
