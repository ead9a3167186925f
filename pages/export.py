"""Researcher: download the human labels of a study."""

import streamlit as st

from concord import export
from concord.services import labels, studies
from concord.ui import session

session.require_researcher()
db = session.db()
study = session.current_study(tuple(r["study"] for r in studies.overview(db)))
st.title("Export")
if study is None:
    st.info("Import a study first.")
    st.stop()

st.caption("One row per current rating and one per ranked image (column `kind`). CSV cells "
           "that start like a spreadsheet formula are neutralised with a leading '.")
for fmt, mime in (("csv", "text/csv"), ("jsonl", "application/x-ndjson"),
                  ("parquet", "application/vnd.apache.parquet")):
    st.download_button(f"Download {fmt.upper()}", data=labels.export_bytes(db, study, fmt),
                       file_name=f"{study}-labels.{fmt}", mime=mime, key=f"dl_{fmt}")
st.download_button("Download ImagenHub TSVs (zip)",
                   data=export.imagenhub_zip_bytes(labels.ratings(db, study)),
                   file_name=f"{study}-imagenhub.zip", mime="application/zip", key="dl_imagenhub")
