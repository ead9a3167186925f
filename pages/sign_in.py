"""Sign-in: raters arrive with an invite link; researchers enter the admin secret."""

import streamlit as st

from concord.ui import session, signin

session.through_app()
session.warm_up_research_pages()
st.title("Concord")
st.write(
    "Human ratings for text-to-image models, and how well automatic metrics agree with them."
)
st.info("**Raters:** open the invite link you were sent. It signs you in and takes you to "
        "your next image.")

with st.form("researcher_sign_in"):
    st.subheader("Researcher sign-in")
    secret = st.text_input("Researcher secret", type="password", key="admin_secret",
                           help="CONCORD_ADMIN_SECRET, or the secret `python -m concord init` "
                                "printed when it made it (`python -m concord reset-secret` "
                                "makes a new one).")
    if st.form_submit_button("Sign in", type="primary"):
        failed = signin.sign_in_researcher(session.db(), secret)
        if failed is None:
            st.rerun()
        st.error(failed)
