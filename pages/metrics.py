"""Researcher: run an automatic metric over a study, watch it, cancel it, see past runs.

Each run is a separate ``python -m concord score`` process: this page (the app process)
never loads a model.
"""

import pandas as pd
import streamlit as st

from concord.errors import ConcordError
from concord.services import studies
from concord.services.metrics import runs as metric_runs
from concord.ui import session

session.require_researcher()
db = session.db()
settings = session.settings()
st.title("Metrics")
st.caption("Score a study's images with an automatic metric. The run is a separate process "
           "(`python -m concord score`) that keeps going if you leave this page; a rerun "
           "scores only what is missing. See docs/evaluators.md.")

names = studies.names(db)
if not names:
    st.info("Import a study first.")
    st.stop()
catalog = {m.name: m for m in metric_runs.metric_catalog()}

with st.form("metrics_start"):
    study = st.selectbox("Study", names, index=names.index(session.current_study(names)),
                         key="metrics_study")
    metric = st.selectbox("Metric", list(catalog), key="metrics_metric",
                          format_func=lambda n: f"{n} — {catalog[n].about}")
    judge = st.text_input("Judge (hub id or local folder; empty: the metric's default)",
                          key="metrics_judge", placeholder="Qwen/Qwen3-VL-8B-Instruct")
    c1, c2 = st.columns(2)
    device = c1.selectbox("Device", metric_runs.DEVICES, key="metrics_device")
    batch = c2.text_input("Pairs per forward", value="auto", key="metrics_batch")
    options = st.text_area("Metric options (KEY=VALUE, one per line)", key="metrics_options",
                           placeholder="top_k=none")
    if st.form_submit_button("Start run", type="primary"):
        request = metric_runs.RunRequest(
            study=study, metric=metric, judge=judge, device=device, batch_size=batch,
            options=tuple(x.strip() for x in options.splitlines() if x.strip()))
        try:
            run_id = metric_runs.start(db, settings, request)
        except ConcordError as exc:
            st.error(str(exc))
        else:
            st.success(f"Run {run_id} started.")

defaults = pd.DataFrame([{"metric": m.name, "default judge": m.default_model or "(give one)"
                          if m.needs_judge else "(none)", "questions": m.has_questions}
                         for m in catalog.values()])
with st.expander("Metrics and their default judges"):
    st.dataframe(defaults, hide_index=True, width="stretch")


@st.fragment(run_every=2)
@session.releasing
def live() -> None:
    watched = metric_runs.active(session.db())
    st.subheader(f"Running and recent ({len(watched)})")
    for run_id in watched:
        v = metric_runs.view(session.db(), settings, run_id)
        what = " on ".join(x for x in (v.metric, v.study) if x) or "metric and study not known yet"
        st.markdown(f"**{v.run_id}** · {v.status} · {what} · judge `{v.judge or '-'}`")
        st.progress(v.fraction, text=f"{v.done} of {v.total or '?'} images "
                                     f"({v.errors} errors)")
        if v.log:
            st.code(v.log, language=None)
        if v.status in ("starting", "running") and st.button(
                "Cancel", key=f"metrics_cancel_{run_id}"):
            try:
                st.info(metric_runs.cancel(session.db(), run_id))
            except ConcordError as exc:
                st.error(str(exc))
    # in the fragment: a run that ends shows up here without reloading the page
    st.subheader("Past runs")
    rows = metric_runs.past_runs(session.db())
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    else:
        st.info("No run yet.")


live()
