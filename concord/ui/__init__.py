"""Streamlit view helpers of the pages (session, sign-in, widgets, tab renderers)."""
