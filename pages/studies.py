"""Researcher: studies in the database, import a manifest, delete a study."""

from pathlib import Path

import pandas as pd
import streamlit as st

from concord.errors import ConcordError
from concord.services import studies
from concord.ui import session

session.require_researcher()
db = session.db()
st.title("Studies")

rows = studies.overview(db)
if rows:
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
else:
    st.info("No study yet. Import one below, or run `python -m concord import MANIFEST`.")

st.subheader("Import a study")
st.caption("A manifest (YAML or JSON) on this server names the layout, prompts and images; "
           "see docs/manifest.md. Everything is checked first; nothing is written unless all "
           "of it is valid. Re-importing adds only what is new.")
with st.form("import_form"):
    path = st.text_input("Manifest path on the server", key="import_path",
                         placeholder="/data/my-study/study.yaml")
    if st.form_submit_button("Validate and import", type="primary") and path:
        try:
            s = studies.import_manifest(db, Path(path), actor="researcher")
        except ConcordError as exc:
            st.error(str(exc))
        else:
            st.success(f"Study {s.study!r}: {s.prompts_added} prompts, {s.images_added} images "
                       f"added ({s.images_unchanged} unchanged)"
                       + (f", {s.pairs_added} pairs." if s.pairs_added else "."))
            for warning in s.warnings:
                st.warning(warning)
            if s.appearance:
                st.caption("Images per model: " + " · ".join(
                    f"{model}: {looks}" for model, looks in s.appearance.items()))

if rows:
    st.subheader("Delete a study")
    with st.form("delete_form"):
        name = st.selectbox("Study", [r["study"] for r in rows], key="delete_study")
        typed = st.text_input("Type the study name to confirm", key="delete_confirm")
        if st.form_submit_button("Delete study and all its ratings"):
            if typed != name:
                st.error("The name you typed does not match; nothing was deleted.")
            else:
                counts = studies.delete(db, name, actor="researcher")
                st.success(f"Deleted {name!r}: "
                           + ", ".join(f"{v} {k}" for k, v in counts.items()))
