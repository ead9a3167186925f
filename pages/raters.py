"""Researcher: invite raters to a study (one link each), list and revoke them."""

import pandas as pd
import streamlit as st

from concord.errors import ConcordError
from concord.services import studies
from concord.ui import crowd_admin, questionnaire_view, session

session.require_researcher()
db = session.db()
study = session.current_study(tuple(r["study"] for r in studies.overview(db)))
st.title("Raters")
if study is None:
    st.info("Import a study first.")
    st.stop()
base_url = session.invite_base_url("raters")

with st.form("invite_form"):
    st.subheader(f"Invite raters to {study}")
    names = st.text_area("Names, one per line", key="invite_names")
    role = st.radio("Role", ["rater", "researcher"], horizontal=True, key="invite_role")
    replace = st.checkbox("Replace the links of people who already have one (their old "
                          "link stops working)", key="invite_replace")
    st.caption(f"Links start with {base_url} (set CONCORD_BASE_URL to change it).")
    if st.form_submit_button("Create invite links", type="primary"):
        wanted = list(dict.fromkeys(n.strip() for n in names.splitlines() if n.strip()))
        kept = [] if replace else studies.with_links(db, wanted)
        try:
            invites = studies.invite(db, study, [n for n in wanted if n not in kept], base_url,
                                     role=role, actor="researcher")
        except (ConcordError, ValueError) as exc:
            st.error(str(exc))
        else:
            if kept:
                st.warning(f"Not changed, they already have a working link: {', '.join(kept)}."
                           " Tick 'Replace' to send them new ones.")
            if invites:
                st.success("Send each person their own link (shown only now):")
                st.code("\n".join(f"{i.name}\t{i.url}" for i in invites), language=None)

crowd_admin.link_form(db, study, base_url)
crowd_admin.links_table(db, study)
crowd_admin.status_and_pay(db, study)
questionnaire_view.answers_table(db, study)  # beside the pay report, never in the stats

st.subheader("All raters")
rows = studies.raters(db)
if rows:
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    with st.form("revoke_form"):
        who = st.selectbox("Revoke the invite link of",
                           [r["name"] for r in rows if r["link"] == "active"], key="revoke_name")
        if st.form_submit_button("Revoke") and who:
            studies.revoke(db, who, actor="researcher")
            st.success(f"Revoked {who!r}: the link stops working at once; their ratings stay.")
