"""Researcher: download the human labels of a study."""

import streamlit as st

from concord.services import downloads, studies
from concord.ui import session

session.require_researcher()
db = session.db()
study = session.current_study(tuple(r["study"] for r in studies.overview(db)))
st.title("Export")
if study is None:
    st.info("Import a study first.")
    st.stop()

st.caption("Each file is built when you click its button. CSV cells that start like a "
           "spreadsheet formula are neutralised with a leading '. A Hugging Face dataset "
           "is a folder: `python -m concord export --study NAME --format hf -o FOLDER` "
           "(see docs/exports.md).")
everyone = st.checkbox("Include raters excluded from the study", key="export_excluded")
path = session.settings().db_path
for item in downloads.available(db, study):
    st.download_button(
        item.label, file_name=f"{study}-{item.suffix}", mime=item.mime, help=item.help,
        key=f"dl_{item.key}", on_click="ignore",
        data=lambda key=item.key: downloads.build(path, study, key, include_excluded=everyone))
