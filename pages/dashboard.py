"""Researcher: agreement dashboard (leaderboards, agreement, human vs metric, benchmarks)."""

import streamlit as st

from concord.services import report
from concord.ui import dashboard_view as view
from concord.ui import session

session.require_researcher()
db = session.db()
db_path = str(session.settings().db_path)
study = session.current_study(tuple(report.study_names(db)))
st.title("Agreement dashboard")
if study is None:
    st.info("No study yet: import one on the Studies page or with `python -m concord import`.")
    st.stop()

version = report.data_version(db)
opts = view.options(db_path, study, version)
left, right = st.columns(2)
dimension = left.selectbox("Dimension", [view.ALL, *opts["dimensions"]], key="dash_dimension")
metric_names = sorted({m for m, _ in opts["metrics"]})
metric = right.selectbox("Metric", [view.ALL, *metric_names], key="dash_metric")
data = view.numbers(db_path, study, None if dimension == view.ALL else dimension,
                    None if metric == view.ALL else metric, version)
doc = data["report"]
meta = doc["meta"]

if not (meta["n_ratings"] or meta["n_rankings_rows"] or meta["n_scores"]):
    st.info(f"Study **{study}** has no ratings, rankings or metric scores"
            f"{'' if dimension == view.ALL else f' in dimension {dimension}'} yet. "
            "Invite raters on the Raters page, import ratings with `python -m concord "
            "import-ratings`, or score the images with `python -m concord score`.")
    st.stop()

cols = st.columns(5)
for col, (label, value) in zip(cols, (("Ratings", meta["n_ratings"]),
                                      ("Raters", meta["n_raters"]),
                                      ("Models", meta["n_models"]),
                                      ("Ranked images", meta["n_rankings_rows"]),
                                      ("Metric values", meta["n_scores"])), strict=True):
    col.metric(label, f"{value:,}")

tabs = st.tabs(["Leaderboard", "Agreement", "Human vs metric", "Disagreements", "Raters",
                "Rankings", "Benchmarks", "Downloads"])

with tabs[0]:
    criteria = view.criteria(doc)
    if not criteria:
        st.info("No ratings yet" + ("; the ranking leaderboard is on the Rankings tab."
                                    if doc["rankings"]["models"] else "."))
    else:
        crit = st.radio("Criterion", criteria, horizontal=True, key="dash_criterion")
        board = view.leaderboard(doc, crit)
        st.markdown(view.headline(board, crit))
        st.caption("Mean of the per-rater means; std across raters (population); 95% "
                   f"prompt-bootstrap CI ({meta['n_boot']} resamples).")
        st.dataframe(board, hide_index=True, width="stretch")
        st.altair_chart(view.ci_chart(board, crit), width="stretch")

with tabs[1]:
    agreement = doc["agreement"]
    if not agreement["study"]:
        st.info("Agreement needs ratings of the same images by several raters.")
    else:
        st.subheader("Per study")
        st.dataframe(view.table(agreement["study"]), hide_index=True, width="stretch")
        st.subheader("Per model")
        st.dataframe(view.table(agreement["model"]), hide_index=True, width="stretch")

with tabs[2]:
    sources = sorted({r["human"] for r in doc["human_vs_metric"]})
    if not sources:
        st.info("Needs both human labels and metric scores of the same images "
                "(`python -m concord score` or `import-scores`).")
    else:
        c1, c2 = st.columns(2)
        human = c1.selectbox("Human scores", sources, key="dash_human")
        level = c2.radio("Level", ["model", "item"], horizontal=True, key="dash_level",
                         help="model: correlation of model means; item: over images")
        corr = view.correlations(doc, human, level)
        st.subheader("Spearman ρ [95% CI] per dimension × metric")
        st.dataframe(view.table7(corr), width="stretch")
        st.altair_chart(view.heatmap(corr), width="stretch")
        crit = human.split(":", 1)[1]
        pairs = sorted({(r["metric"], r["judge"]) for r in doc["human_vs_metric"]})
        label = st.selectbox("Scatter: metric", [view.metric_label(*p) for p in pairs],
                             key="dash_scatter")
        m, j = pairs[[view.metric_label(*p) for p in pairs].index(label)]
        points = view.model_points(doc, crit, m, j)
        if not points.empty:
            st.altair_chart(view.scatter(points, crit, label), width="stretch")
        with st.expander("All correlations"):
            st.dataframe(view.table(doc["human_vs_metric"]), hide_index=True, width="stretch")

with tabs[3]:
    worst = [d for d in data["disagreements"] if d["images"]]
    if not worst:
        st.info("Needs human labels and metric scores of the same images.")
    else:
        labels_ = [view.metric_label(d["metric"], d["judge"]) for d in worst]
        pick = worst[labels_.index(st.selectbox("Metric", labels_, key="dash_worst"))]
        st.caption(f"Images ranked most differently by humans ({pick['images'][0]['source']})"
                   " and the metric (percentile ranks, 1 = best; gap = |difference|).")
        st.dataframe(view.table(pick["images"], view.DISAGREEMENT_COLUMNS), hide_index=True,
                     width="stretch")
        shown = [r for r in pick["images"] if r["path"]][:8]
        for row_start in range(0, len(shown), 4):
            for col, item in zip(st.columns(4), shown[row_start:row_start + 4], strict=False):
                col.image(item["path"], caption=f"{item['model']} · {item['prompt_id']} · "
                          f"human {item['human']:.2f} · metric {item['metric']:.3f}")

with tabs[4]:
    if data["raters"]:
        st.caption("loo_*: correlation with the mean of the other raters per image; "
                   "modal_share: share of the rater's ratings equal to their most common "
                   "value (straight-lining).")
        st.dataframe(view.table(data["raters"]), hide_index=True, width="stretch")
    else:
        st.info("No ratings yet.")

with tabs[5]:
    ranks = doc["rankings"]
    if not ranks["models"]:
        st.info("No rankings yet.")
    else:
        st.dataframe(view.table(ranks["models"]), hide_index=True, width="stretch")
        st.subheader("Kendall's W (agreement of rankers)")
        st.dataframe(view.table(ranks["kendalls_w"]), hide_index=True, width="stretch")
        st.subheader("Position bias")
        st.dataframe(view.table(ranks["position_bias"]), hide_index=True, width="stretch")
        if ranks["rank_by_position"]:
            st.altair_chart(view.position_chart(ranks["rank_by_position"]), width="stretch")

with tabs[6]:
    bench = doc["benchmarks"]
    shown_any = False
    if bench["tiif_summary"]:
        st.subheader("TIIF-Bench overall")
        st.dataframe(view.tiif_overall(bench["tiif_summary"]), width="stretch")
    for key, title in (("metric_means", "Metric means per model"), ("paircomp", "PairComp"),
                       ("geneval2_totals", "GenEval 2 (×100)"),
                       ("geneval2_by_skill", "GenEval 2 Soft-TIFA per skill"),
                       ("geneval2_by_atomicity", "GenEval 2 Soft-TIFA GM per atom count"),
                       ("tiif_summary", "TIIF-Bench groups"), ("gned", "GNED (lower is better)"),
                       ("consistency", "Paraphrase consistency"),
                       ("problems", "Not computed")):
        if bench[key]:
            shown_any = True
            st.subheader(title)
            st.dataframe(view.table(bench[key]), hide_index=True, width="stretch")
    if not shown_any:
        st.info("No metric scores yet: `python -m concord score` or `import-scores`.")

with tabs[7]:
    for fmt, label, name, mime in (
            ("csv", "Labels CSV", f"{study}-labels.csv", "text/csv"),
            ("jsonl", "Labels JSONL", f"{study}-labels.jsonl", "application/x-ndjson"),
            ("parquet", "Labels Parquet", f"{study}-labels.parquet",
             "application/vnd.apache.parquet"),
            ("imagenhub", "ImagenHub TSVs (zip)", f"{study}-imagenhub.zip", "application/zip"),
            ("stats", "Statistics JSON", f"{study}-stats.json", "application/json")):
        st.download_button(f"Download {label}", data=view.downloader(db_path, study, fmt),
                           file_name=name, mime=mime, key=f"dash_dl_{fmt}")
