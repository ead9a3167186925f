"""Researcher: invite raters to a study (one link each), list and revoke them."""

import pandas as pd
import streamlit as st

from concord.errors import ConcordError
from concord.services import studies
from concord.store import raters as rater_store
from concord.ui import session

session.require_researcher()
db = session.db()
study = session.current_study(tuple(r["study"] for r in studies.overview(db)))
st.title("Raters")
if study is None:
    st.info("Import a study first.")
    st.stop()

with st.form("invite_form"):
    st.subheader(f"Invite raters to {study}")
    names = st.text_area("Names, one per line", key="invite_names")
    role = st.radio("Role", ["rater", "researcher"], horizontal=True, key="invite_role")
    if st.form_submit_button("Create invite links", type="primary"):
        wanted = [n.strip() for n in names.splitlines() if n.strip()]
        try:
            invites = studies.invite(db, study, wanted, session.settings().base_url, role=role,
                                     actor="researcher")
        except (ConcordError, ValueError) as exc:
            st.error(str(exc))
        else:
            st.success("Send each person their own link (shown only now):")
            st.code("\n".join(f"{i.name}\t{i.url}" for i in invites), language=None)

st.subheader("All raters")
rows = rater_store.list_raters(db)
if rows:
    st.dataframe(pd.DataFrame(rows).drop(columns=["id"]), hide_index=True, width="stretch")
    with st.form("revoke_form"):
        who = st.selectbox("Revoke the invite link of", [r["name"] for r in rows],
                           key="revoke_name")
        if st.form_submit_button("Revoke"):
            rater_store.revoke(db, who, actor="researcher")
            st.success(f"Revoked {who!r}; their ratings stay.")
