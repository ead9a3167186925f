"""Researcher: agreement dashboard (leaderboards, agreement, human vs metric, raters)."""

import streamlit as st

from concord.services.report import BENCHMARK_SECTIONS
from concord.services.report import study as report
from concord.ui import dashboard_plan, session
from concord.ui import dashboard_tabs as tabs_
from concord.ui import dashboard_view as view

session.require_researcher()
db = session.db()
db_path = str(session.settings().database)
study = session.current_study(tuple(report.study_names(db)))
st.title("Agreement dashboard")
session.show_flash()
if study is None:
    st.info("No study yet: import one on the Studies page or with `python -m concord import`.")
    st.stop()

version = report.data_version(db)
opts = view.options(db_path, study, version)
left, middle, right = st.columns(3)
dimension = left.selectbox("Dimension", [view.ALL, *opts["dimensions"]], key="dash_dimension")
metric_names = sorted({m for m, _ in opts["metrics"]})
metric = middle.selectbox("Metric", [view.ALL, *metric_names], key="dash_metric")
model_score = right.selectbox("Human model score", list(view.MODEL_SCORES),
                              format_func=view.MODEL_SCORES.get, key="dash_model_score",
                              help="used by the model-level human-vs-metric correlation")
data = view.numbers(db_path, study, None if dimension == view.ALL else dimension,
                    None if metric == view.ALL else metric, model_score, version)
doc = data["report"]
meta = doc["meta"]

if not (meta["n_ratings"] or meta["n_rankings"] or meta["n_scores"]
        or meta["n_pair_judgments"]):
    st.info(f"Study **{study}** has no ratings, rankings, pair judgments or metric scores"
            f"{'' if dimension == view.ALL else f' in dimension {dimension}'} yet. "
            "Invite raters on the Raters page, import ratings with `python -m concord "
            "import-ratings`, or score the images with `python -m concord score`.")
    if not meta.get("excluded_raters"):
        st.stop()

cols = st.columns(7)
for col, (label, value) in zip(cols, (("Rated images", meta["n_rated_images"]),
                                      ("Rating values", meta["n_ratings"]),
                                      ("Raters who rated", meta["n_raters_who_rated"]),
                                      ("Models", meta["n_models"]),
                                      ("Rankings", meta["n_rankings"]),
                                      ("Pair judgments", meta["n_pair_judgments"]),
                                      ("Metric values", meta["n_scores"])), strict=True):
    col.metric(label, f"{value:,}")
st.caption(view.count_caption(meta))

tabs = st.tabs(["Leaderboard", "Agreement", "Human vs metric", "Per model", "Disagreements",
                "Raters", "Rankings", "Pairs", "Benchmarks", "Plan", "Downloads"])
with tabs[0]:
    tabs_.leaderboard(doc)
with tabs[1]:
    tabs_.agreement(doc)
with tabs[2]:
    tabs_.human_vs_metric(doc, model_score)
with tabs[3]:
    tabs_.per_model(doc)
with tabs[4]:
    tabs_.disagreements(doc, data["root"])
with tabs[5]:
    tabs_.raters(doc, db, study)
with tabs[6]:
    ranks = doc["rankings"]
    if not ranks["models"]:
        st.info("No rankings yet.")
    else:
        st.dataframe(view.table(ranks["models"]), hide_index=True, width="stretch")
        st.subheader("Kendall's W (agreement of rankers)")
        st.dataframe(view.table(ranks["kendalls_w"]), hide_index=True, width="stretch")
        with st.expander("Kendall's W per prompt, with its χ² test"):
            st.dataframe(view.table(ranks["kendalls_w_prompts"]), hide_index=True,
                         width="stretch")
        st.subheader("Position bias")
        st.dataframe(view.table(ranks["position_bias"]), hide_index=True, width="stretch")
        if ranks["rank_by_position"]:
            st.altair_chart(view.position_chart(ranks["rank_by_position"]), width="stretch")
with tabs[7]:
    tabs_.pairs(doc)
with tabs[8]:
    bench = doc["benchmarks"]
    shown_any = False
    if bench["tiif_summary"]:
        st.subheader("TIIF-Bench overall")
        st.dataframe(view.tiif_overall(bench["tiif_summary"]), width="stretch")
    for key, title in BENCHMARK_SECTIONS:
        if bench[key]:
            shown_any = True
            st.subheader(title)
            st.dataframe(view.table(bench[key]), hide_index=True, width="stretch")
    if not shown_any:
        st.info("No metric scores yet: `python -m concord score` or `import-scores`.")
with tabs[9]:
    dashboard_plan.plan(db_path, study, view.criteria(doc), version)
with tabs[10]:
    st.caption("Label exports leave out excluded raters (`python -m concord export "
               "--include-excluded` keeps them).")
    for fmt, label, name, mime in (
            ("csv", "Labels CSV", f"{study}-labels.csv", "text/csv"),
            ("jsonl", "Labels JSONL", f"{study}-labels.jsonl", "application/x-ndjson"),
            ("parquet", "Labels Parquet", f"{study}-labels.parquet",
             "application/vnd.apache.parquet"),
            ("imagenhub", "ImagenHub TSVs (zip)", f"{study}-imagenhub.zip", "application/zip"),
            ("stats", "Statistics JSON", f"{study}-stats.json", "application/json")):
        st.download_button(f"Download {label}", data=view.downloader(db_path, study, fmt),
                           file_name=name, mime=mime, key=f"dash_dl_{fmt}")
