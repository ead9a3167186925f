"""The researcher's crowd controls on the Raters page: the study link (create, rotate,
revoke), who joined and where they are, and the time and pay CSV."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from sqlite_utils import Database

from concord.errors import ConcordError
from concord.export import to_csv_bytes
from concord.services.crowd import ids as crowd_ids
from concord.services.crowd import links as crowd
from concord.services.crowd import status as crowd_status

NEW_LINK = "crowd_new_link"


def link_form(db: Database, study: str, base_url: str) -> None:
    """Create or rotate the study link; the URL is shown once."""
    with st.form("crowd_link_form"):
        st.subheader(f"Study link for self sign-up ({study})")
        options = sorted(crowd_ids.PLATFORMS)
        platform = st.selectbox("Platform", options, key="crowd_platform",
                                index=options.index(crowd_ids.DEFAULT_PLATFORM),
                                help="Which participant parameters the link expects "
                                     "(the CLI's default too).")
        c1, c2 = st.columns(2)
        done = c1.text_input("Completion code or URL", key="crowd_completion",
                             help="Shown (or linked) when a rater finishes.")
        out = c2.text_input("Screen-out code or URL (failed practice, too many skips or "
                            "failed checks)", key="crowd_screenout")
        rotate = st.checkbox("Revoke the study's current links (rotate a leaked link)",
                             key="crowd_rotate")
        any_id = st.checkbox("Accept any participant id (not only the platform's format)",
                             key="crowd_any_id",
                             help="Prolific ids are 24 hexadecimal digits, MTurk worker ids "
                                  "'A' and 11 to 13 capitals or digits; tick for another "
                                  "platform or a test run.")
        if st.form_submit_button("Create study link", type="primary"):
            codes = {**_code_or_url("completion", done), **_code_or_url("screenout", out)}
            try:
                made = crowd.create_link(db, study, base_url, platform=platform, codes=codes,
                                         rotate=rotate, strict_ids=not any_id,
                                         actor="researcher")
            except ConcordError as exc:
                st.error(str(exc))
            else:
                st.session_state[NEW_LINK] = made.url
    if st.session_state.get(NEW_LINK):
        st.success("Give this link to the platform (shown only now):")
        st.code(st.session_state[NEW_LINK], language=None)


def _code_or_url(kind: str, text: str) -> dict[str, str | None]:
    text = text.strip()
    if not text:
        return {}
    if text.startswith(("http://", "https://")):
        return {f"{kind}_url": text}
    return {f"{kind}_code": text}


def links_table(db: Database, study: str) -> None:
    """The study's links (never their tokens), with a button that closes them."""
    rows = [{"created": lk.created_at, "platform": lk.platform,
             "status": "active" if lk.active else "revoked",
             "completion": lk.completion_code or lk.completion_url or "",
             "screen-out": lk.screenout_code or lk.screenout_url or ""}
            for lk in crowd.links(db, study)]
    if not rows:
        return
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    if any(r["status"] == "active" for r in rows) and st.button(
            "Revoke the study links", key="crowd_revoke"):
        n = crowd.revoke_links(db, study, actor="researcher")
        st.session_state.pop(NEW_LINK, None)
        st.success(f"Closed {n} link(s) to new sign-ups; raters who joined keep working.")
        st.rerun()


def status_and_pay(db: Database, study: str) -> None:
    """Each rater's stage and status (who failed the practice or the checks, who looks
    automated) and the pay CSV download."""
    rows = crowd_status.status(db, study)
    if not rows:
        return
    st.subheader("Raters of this study")
    frame = pd.DataFrame(rows)
    for stage, what in (("failed", "Did not pass the practice"),
                        ("screened", "Skipped more items than the study allows"),
                        ("blocked", "Failed too many attention checks")):
        names = frame[frame["stage"] == stage]["rater"].tolist()
        if names:
            st.warning(f"{what}: {', '.join(names)}")
    for client, n in crowd_status.automated_clients(db, study):
        st.warning(f"{n} participant ids joined from one client ({client}): automated? "
                   "See the column ids_from_client.")
    st.dataframe(frame, hide_index=True, width="stretch", key="crowd_status")
    pay = crowd_status.pay_report(db, study)
    st.download_button("Download time and pay (CSV)", to_csv_bytes(pay),
                       file_name=f"{study}-pay.csv", mime="text/csv", key="crowd_pay")
    st.caption("Active time = server-side time on each item, each capped at the study's "
               "idle cap (default 300 s); pay = active hours × hourly rate. Approve on the "
               "platform by status: completed (quota of done items reached), screened out, "
               "failed checks, returned (left unfinished), incomplete (still working).")
