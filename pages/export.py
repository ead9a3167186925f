"""Researcher: download the human labels of a study."""

import streamlit as st

from concord.errors import ConcordError
from concord.services import studies
from concord.services.exports import downloads
from concord.ui import session

session.require_researcher()
db = session.db()
study = session.current_study(tuple(r["study"] for r in studies.overview(db)))
st.title("Export")
if failed := st.session_state.pop("export_error", None):
    st.error(f"Nothing was downloaded: {failed}")
if study is None:
    st.info("Import a study first.")
    st.stop()

st.caption("Each file is built when you click its button. CSV cells that start like a "
           "spreadsheet formula are neutralised with a leading '. A Hugging Face dataset "
           "is a folder: `python -m concord export --study NAME --format hf -o FOLDER` "
           "(see docs/exports.md).")
everyone = st.checkbox("Include raters excluded from the study", key="export_excluded")
path = session.settings().database


def check_study() -> None:
    # The file is built on another thread, which cannot show an error: a study deleted
    # since this page was drawn is reported by this click's rerun instead.
    try:
        downloads.check(path, study)
    except ConcordError as exc:
        st.session_state["export_error"] = str(exc)


for item in downloads.available(db, study):
    st.download_button(
        item.label, file_name=f"{study}-{item.suffix}", mime=item.mime, help=item.help,
        key=f"dl_{item.key}", on_click=check_study,
        data=lambda key=item.key: downloads.build(path, study, key, include_excluded=everyone))
