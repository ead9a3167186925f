"""The tabs of the agreement dashboard: each renders one part of the statistics document.

Every number comes from the report of ``concord.services.report.study`` (the same document as
``python -m concord stats --json``); these functions only pick, reshape and draw.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st
from sqlite_utils import Database

from concord.errors import ConcordError
from concord.services import exclusions
from concord.services.report import study as report
from concord.ui import dashboard_claims as claims
from concord.ui import dashboard_view as view
from concord.ui import pairs_view, session


def leaderboard(doc: dict) -> None:
    """Both model scores per criterion, best first, with bootstrap CIs."""
    criteria = view.criteria(doc)
    if not criteria:
        st.info("No ratings yet" + ("; the ranking leaderboard is on the Rankings tab."
                                    if doc["rankings"]["models"] else "."))
        return
    crit = st.radio("Criterion", criteria, horizontal=True, key="dash_criterion")
    board = view.leaderboard(doc, crit)
    st.markdown(claims.headline(board, crit))
    st.caption("mean_rater_means: each rater's mean over the images they rated, then the "
               "mean over raters (ImagenHub), with the std across raters (population); "
               "mean_image_means: each image's mean over its raters, then the mean over "
               "images. They differ when ratings are missing. 95% prompt-bootstrap CIs "
               f"({doc['meta']['n_boot']} resamples); rank [95% interval] from the same "
               "resamples: models whose intervals overlap are not told apart.")
    st.dataframe(claims.with_rank_column(board), hide_index=True, width="stretch")
    st.altair_chart(view.ci_chart(board, crit), width="stretch")
    claims.model_differences(doc, crit, board["model"].tolist())


def agreement(doc: dict) -> None:
    """Agreement per study and per model, or why there is none."""
    note = view.agreement_note(doc)
    if note:
        st.info(note)
    if doc["agreement"]["study"]:
        st.subheader("Per study")
        st.dataframe(view.table(doc["agreement"]["study"]), hide_index=True, width="stretch")
        st.subheader("Per model")
        st.dataframe(view.table(doc["agreement"]["model"]), hide_index=True, width="stretch")
    checklist = doc.get("checklist") or {}
    if checklist.get("conditions"):
        st.subheader("Per checklist condition")
        st.caption("Ticked or not, across the raters of the same image: Krippendorff's α "
                   "(nominal) and the share of agreeing rater pairs.")
        st.dataframe(view.table(checklist["conditions"]), hide_index=True, width="stretch",
                     key="dash_checklist")
        st.dataframe(view.table(checklist["overrides"]), hide_index=True, width="stretch",
                     key="dash_overrides")


def human_vs_metric(doc: dict, model_score: str) -> None:
    """Table 7 (Spearman per dimension × metric), heat map and the per-model scatter."""
    sources = view.sources(doc)
    if not sources:
        st.info("Needs both human labels and metric scores of the same images "
                "(`python -m concord score` or `import-scores`).")
        return
    c1, c2 = st.columns(2)
    human = c1.selectbox("Human scores", sources, key="dash_human")
    level = c2.radio("Level", ["model", "item"], horizontal=True, key="dash_level",
                     help="model: correlation of model scores (bootstrap CI, permutation "
                          "p); item: over images (Fisher-z CI, analytic p)")
    corr = view.correlations(doc, human, level)
    st.subheader("Spearman ρ [95% CI] per dimension × metric")
    if level == "model":
        st.caption(f"Human model score: {view.MODEL_SCORES[model_score]} (change it above).")
    st.dataframe(view.table7(corr, level), width="stretch")
    st.altair_chart(view.heatmap(corr), width="stretch")
    pairs = sorted({(r["metric"], r["judge"]) for r in doc["human_vs_metric"]})
    labels = [view.metric_label(*p) for p in pairs]
    label = st.selectbox("Scatter: metric", labels, key="dash_scatter")
    m, j = pairs[labels.index(label)]
    points = view.model_points(doc, human, m, j, model_score)
    if points.empty:
        st.info(f"No model scores of {human} and {label} to plot.")
    else:
        st.altair_chart(view.scatter(points, human, label, model_score), width="stretch")
    with st.expander("All correlations"):
        st.dataframe(view.table(doc["human_vs_metric"]), hide_index=True, width="stretch")
    claims.metric_comparisons(doc, human)


def per_model(doc: dict) -> None:
    """Per-model item-level correlations and rater versus the rest, combined over models."""
    combined = doc["human_vs_metric_per_model"]["combined"]
    if combined:
        st.subheader("Metric vs human within each model, combined over models")
        st.caption("mean_r: arithmetic mean of the per-model r; fisher_z: tanh of the mean "
                   "of atanh r; tanh_mean_r: tanh of the mean r (a convention of published "
                   "MLLM-judge code).")
        st.dataframe(view.table(combined), hide_index=True, width="stretch")
        with st.expander("Per model"):
            st.dataframe(view.table(doc["human_vs_metric_per_model"]["models"]),
                         hide_index=True, width="stretch")
    rest = doc["rater_vs_rest"]["combined"]
    if rest:
        st.subheader("Each rater (and metric) versus the rest")
        st.caption("A rater's value on an image against the mean of the OTHER raters' "
                   "values on it; a metric against the mean of all raters. Per model, "
                   "combined over models as above; `pooled` is over all images at once.")
        st.dataframe(view.table(rest), hide_index=True, width="stretch")
        with st.expander("Per model"):
            st.dataframe(view.table(doc["rater_vs_rest"]["per_model"]), hide_index=True,
                         width="stretch")
    if not combined and not rest:
        st.info("Needs several raters on the same images, or human labels and metric "
                "scores of the same images.")


def disagreements(doc: dict, root: str | None) -> None:
    """The images humans and a metric rank most differently, for a chosen human source."""
    rows = doc["disagreements"]
    if not rows:
        st.info("Needs human labels and metric scores of the same images.")
        return
    pairs = sorted({(r["metric"], r["judge"]) for r in rows})
    labels = [view.metric_label(*p) for p in pairs]
    c1, c2 = st.columns(2)
    metric, judge = pairs[labels.index(c1.selectbox("Metric", labels, key="dash_worst"))]
    sources = sorted({r["human_source"] for r in rows})
    first = report.default_source(doc)
    sources.sort(key=lambda s: (s != first, s))
    source = c2.selectbox("Human scores", sources, key="dash_worst_source")
    pick = [r for r in rows if r["metric"] == metric and r["judge"] == judge
            and r["human_source"] == source]
    st.caption(f"Images ranked most differently by humans ({source}) and the metric "
               "(percentile ranks, smallest = best; gap = |difference|).")
    st.dataframe(view.table(pick, view.DISAGREEMENT_COLUMNS), hide_index=True,
                 width="stretch")
    shown = [(r, report.image_file(root, r.get("path"))) for r in pick][:8]
    shown = [(r, path) for r, path in shown if path]
    for start in range(0, len(shown), 4):
        for col, (item, path) in zip(st.columns(4), shown[start:start + 4], strict=False):
            col.image(path, caption=f"{item['model']} · {item['prompt_id']} · human "
                      f"{item['human_score']:.2f} · metric {item['metric_score']:.3f}")


def pairs(doc: dict) -> None:
    """Everything the report knows about pairs, or why there is nothing."""
    section = doc["pairs"]
    if not (section["bradley_terry"] or section["win_rates"] or section["problems"]):
        st.info("No pair judgments yet (protocol `pair` or a `pairs:` section), and no "
                "rankings to derive pairs from.")
        return
    if section["bradley_terry"]:
        pairs_view.bradley_terry(section["bradley_terry"])
        claims.pair_differences(section)
    if section["win_rates"]:
        st.subheader("Win rates")
        st.dataframe(view.table(section["win_rates"]), hide_index=True, width="stretch")
        st.altair_chart(pairs_view.matrix_chart(section["win_matrix"]), width="stretch")
    for key, title in (("elo_online", "Online Elo (K = 4, the votes in time order; arena "
                                      "convention)"),
                       ("elo_perm_mean", "Elo, mean over 100 random orders"),
                       ("position_bias", "Left/right bias"),
                       ("position_bias_raters", "Left/right bias per rater"),
                       ("agreement", "Rater agreement on pairs"),
                       ("metric_accuracy", "Metric pair accuracy (the metric prefers the "
                                           "image people chose)"),
                       ("problems", "Not computed")):
        if section[key]:
            st.subheader(title)
            st.dataframe(view.table(section[key]), hide_index=True, width="stretch")


def raters(doc: dict, db: Database, study: str) -> None:
    """Flags, quality signals, too-fast items, gold accuracy, and excluding a rater."""
    section = doc["raters"]
    flags = section["flags"]
    st.subheader(f"Flags ({len(flags)})")
    limits = doc["meta"]["quality"]
    st.caption(f"Thresholds (study setting `quality`): {limits}.")
    if flags:
        st.dataframe(view.table(flags), hide_index=True, width="stretch")
    if section["quality"]:
        st.subheader("Per rater")
        st.caption("rest_*: correlation with the mean of the other raters per image; "
                   "modal_share: share of the rater's ratings equal to their most common "
                   "value; display_order_share: share of rankings left in the order shown.")
        st.dataframe(view.table(section["quality"]), hide_index=True, width="stretch")
    if section["too_fast"]:
        with st.expander(f"Items done too fast ({len(section['too_fast'])})"):
            st.dataframe(view.table(section["too_fast"]), hide_index=True, width="stretch")
    if section["gold"]:
        st.subheader("Gold items")
        st.dataframe(view.table(section["gold"]), hide_index=True, width="stretch")
    _exclusion_controls(doc, db, study)


def _exclusion_controls(doc: dict, db: Database, study: str) -> None:
    section = doc["raters"]
    excluded = [r["rater"] for r in section.get("excluded", [])]
    active = sorted({r["rater"] for r in section["quality"]} - set(excluded))
    st.subheader("Exclude a rater from this study's statistics and exports")
    if section.get("excluded"):
        st.dataframe(pd.DataFrame(section["excluded"]), hide_index=True, width="stretch")
    with st.form("dash_exclude_form", clear_on_submit=True):
        who = st.selectbox("Rater", active, key="dash_exclude_rater")
        reason = st.text_input("Reason", key="dash_exclude_reason")
        if st.form_submit_button("Exclude", disabled=not active) and who:
            _act(lambda: exclusions.exclude_rater(db, study, who, reason, actor="researcher"),
                 f"Excluded {who}: every number recomputes without them.")
    if excluded:
        back = st.selectbox("Excluded rater", excluded, key="dash_include_rater")
        if st.button("Include again", key="dash_include"):
            _act(lambda: exclusions.include_rater(db, study, back, actor="researcher"),
                 f"{back} counts again.")


def _act(action: Callable[[], None], message: str) -> None:
    try:
        action()
    except ConcordError as exc:
        st.error(str(exc))
        return
    session.flash(message)
    st.rerun()
