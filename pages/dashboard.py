"""Researcher: agreement dashboard (leaderboards, agreement, human vs metric)."""

import streamlit as st

from concord.ui import session

session.require_researcher()
st.title("Agreement dashboard")
st.info("The dashboard is being built.")
