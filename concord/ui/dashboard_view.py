"""Helpers of the agreement dashboard: cached numbers, tables in display shape, Altair charts.

Numbers are cached per database change: every cached function takes the database path
and ``report.data_version`` as arguments (never a ``Database``: a sqlite3 connection must
not cross the threads Streamlit runs scripts on), and opens its own connection. Behind
this per-process cache, the report itself comes from the database's report cache when the
data is unchanged (``concord.services.report.cache``), so a restart or a ``stats`` run
with the same options spares the dashboard the computation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import altair as alt
import pandas as pd
import streamlit as st
from sqlite_utils import Database

from concord import export
from concord.services import studies
from concord.services.database import open_database
from concord.services.exports import labels
from concord.services.report import request as report_request
from concord.services.report import study as report
from concord.services.report.request import ReportOptions

ALL = "All"
DISAGREEMENT_COLUMNS = ["model", "prompt_id", "prompt", "human_score", "metric_score",
                        "human_rank", "metric_rank", "gap", "n_raters", "dimension", "sample",
                        "image_id", "path"]
MODEL_SCORES = {"mean_image_means": "mean of image means",
                "mean_rater_means": "mean of rater means (ImagenHub)"}
_CRITERIA_FIRST = ("O", "SC", "PR")


@contextlib.contextmanager
def connection(db_path: str) -> Iterator[Database]:
    db = open_database(db_path, migrate=False, check_same_thread=False)
    try:
        yield db
    finally:
        db.close()


@st.cache_data(max_entries=32, show_spinner=False)
def options(db_path: str, study: str, version: tuple[str, ...]) -> dict[str, list]:
    """Dimensions and (metric, judge) pairs of a study (``version`` keys the cache)."""
    with connection(db_path) as db:
        return studies.filter_options(db, study)


@st.cache_data(max_entries=16, show_spinner="Computing the statistics…")
def numbers(db_path: str, study: str, dimension: str | None, metric: str | None,
            model_score: str, version: tuple[str, ...]) -> dict:
    """:func:`concord.services.report.study.dashboard` for one study and filters, cached.

    ``version`` (``report.data_version``) changes with every change of any row (a rating,
    a score, an exclusion, ...), so every number then recomputes.
    """
    options = ReportOptions(dimension=dimension, metric=metric, model_score=model_score)
    with connection(db_path) as db:
        return report.dashboard(db, report_request.resolve(db, study, options))


def downloader(db_path: str, study: str, fmt: str) -> Callable[[], bytes]:
    """A callable building one export when its button is clicked (on another thread)."""
    def build() -> bytes:
        with connection(db_path) as db:
            if fmt == "imagenhub":
                return export.imagenhub_zip_bytes(labels.ratings(db, study))
            if fmt == "stats":
                return report.report_text(db, report_request.resolve(db, study)).encode()
            return labels.export_bytes(db, study, fmt)
    return build


def criteria(doc: dict) -> list[str]:
    """Criteria of the human scores, derived (O) first."""
    found = {r["criterion"] for r in doc["human"]}
    return [c for c in _CRITERIA_FIRST if c in found] + sorted(found - set(_CRITERIA_FIRST))


LEADERBOARD_COLUMNS = ["model", "mean_rater_means", "mean_rater_means_ci_boot_low",
                       "mean_rater_means_ci_boot_high", "std_rater_means", "mean_image_means",
                       "mean_image_means_ci_boot_low", "mean_image_means_ci_boot_high",
                       "n_raters", "n_prompts", "n_images", "n_ratings",
                       "rank_mean_rater_means", "rank_mean_rater_means_ci_boot_low",
                       "rank_mean_rater_means_ci_boot_high"]


def leaderboard(doc: dict, criterion: str) -> pd.DataFrame:
    """Models of one criterion, best first (by mean of rater means): both model scores."""
    rows = [r for r in doc["human"] if r["criterion"] == criterion]
    df = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
    return df.sort_values(["mean_rater_means", "model"], ascending=[False, True],
                          ignore_index=True)


def ci_chart(board: pd.DataFrame, criterion: str) -> alt.Chart:
    """Horizontal CI bars with the mean of rater means as a point, best model on top."""
    order = board["model"].tolist()
    base = alt.Chart(board).encode(y=alt.Y("model:N", sort=order, title=None))
    bars = base.mark_rule(strokeWidth=3, opacity=0.6).encode(
        x=alt.X("mean_rater_means_ci_boot_low:Q",
                title=f"mean of rater means, {criterion} (95% CI)"),
        x2="mean_rater_means_ci_boot_high:Q")
    points = base.mark_point(filled=True, size=80).encode(
        x="mean_rater_means:Q",
        tooltip=["model", alt.Tooltip("mean_rater_means:Q", format=".3f"),
                 alt.Tooltip("mean_image_means:Q", format=".3f"), "n_raters", "n_images"])
    return (bars + points).properties(height=max(160, 36 * len(order)))


def agreement_note(doc: dict) -> str | None:
    """Why agreement is empty or undefined, in words (None when it is shown)."""
    rows = doc["agreement"]["study"]
    if not rows and not doc["human"]:
        return "Agreement needs ratings; this study (or filter) has none."
    if rows and max(r["n_raters"] for r in rows) >= 2:
        return None
    raters = sorted({r["rater"] for r in doc["raters"]["quality"] if r["unit"] == "image"})
    return (f"Agreement needs at least two raters who rated the same images; the ratings "
            f"here come from {len(raters)} rater{'s' if len(raters) != 1 else ''} "
            f"({', '.join(raters) or 'none'}), so every agreement statistic is undefined "
            "(shown as None). Invite more raters on the Raters page.")


def count_caption(meta: dict) -> str:
    """What the counts above the tabs count, and what was left out."""
    parts = [f"Rating values: one per image, rater and criterion (SC and PR count apart; "
             f"the agreement tables' n_ratings count one criterion's). Rankings: one per "
             f"prompt, rater and criterion ({meta['n_ranked_images']:,} ranked images of "
             f"{meta['n_ranked_prompts']:,} prompts)."]
    if meta.get("n_raters", 0) > meta.get("n_raters_who_rated", 0):
        parts.append(f"{meta['n_raters']:,} raters gave any label (ratings, rankings or "
                     "pair judgments).")
    if meta.get("n_gold_ratings") or meta.get("n_gold_rankings") or meta.get(
            "n_gold_pair_judgments"):
        parts.append(f"Gold items left out of the statistics: {meta['n_gold_ratings']:,} "
                     f"ratings, {meta['n_gold_rankings']:,} rankings, "
                     f"{meta.get('n_gold_pair_judgments', 0):,} pair judgments (rater "
                     "quality only).")
    if meta.get("excluded_raters"):
        parts.append(f"Excluded raters: {', '.join(meta['excluded_raters'])}.")
    return " ".join(parts)


def table(rows: list[dict], columns: list[str] | None = None) -> pd.DataFrame:
    """Records as a frame, keeping only ``columns`` that exist (in that order)."""
    df = pd.DataFrame(rows)
    if columns is not None and not df.empty:
        df = df[[c for c in columns if c in df.columns]]
    return df


def metric_label(metric: str, judge: str) -> str:
    """``metric`` or ``metric (judge)``."""
    return f"{metric} ({judge})" if judge else metric


def correlations(doc: dict, human: str, level: str) -> pd.DataFrame:
    """Human-vs-metric rows of one human source and level, with a metric label."""
    df = pd.DataFrame([r for r in doc["human_vs_metric"]
                       if r["human"] == human and r["level"] == level])
    if df.empty:
        return df
    df["metric_label"] = [metric_label(m, j) for m, j in zip(df["metric"], df["judge"],
                                                             strict=True)]
    return df


def table7(corr: pd.DataFrame, level: str) -> pd.DataFrame:
    """TIIF-Bench Table 7 shape: rows = dimensions (``all`` first), columns = metrics,
    cells = Spearman ρ with its 95% CI (bootstrap for models, Fisher z for items)."""
    method = "boot" if level == "model" else "fisher"

    def cell(r: pd.Series) -> str:
        if pd.isna(r["spearman"]):
            return "–"
        low, high = r.get(f"spearman_ci_{method}_low"), r.get(f"spearman_ci_{method}_high")
        ci = "" if pd.isna(low) or pd.isna(high) else f" [{low:.2f}, {high:.2f}]"
        return f"{r['spearman']:.3f}{ci}"
    shown = corr.assign(cell=corr.apply(cell, axis=1))
    wide = shown.pivot_table(index="dimension", columns="metric_label", values="cell",
                             aggfunc="first")
    order = ["all", *sorted(d for d in wide.index if d != "all")]
    return wide.reindex([d for d in order if d in wide.index])


def heatmap(corr: pd.DataFrame) -> alt.Chart:
    """Spearman ρ per dimension × metric, diverging colours around 0."""
    df = corr[["dimension", "metric_label", "spearman", "n"]].copy()
    df["rho"] = df["spearman"].round(3)
    base = alt.Chart(df).encode(x=alt.X("metric_label:N", title="metric",
                                        axis=alt.Axis(labelAngle=0)),
                                y=alt.Y("dimension:N", title="dimension"))
    rect = base.mark_rect().encode(
        color=alt.Color("spearman:Q", scale=alt.Scale(scheme="redblue", domain=[-1, 1]),
                        title="Spearman ρ"),
        tooltip=["dimension", "metric_label", "rho", "n"])
    text = base.mark_text(fontSize=11).encode(text=alt.Text("spearman:Q", format=".2f"))
    return rect + text


def model_points(doc: dict, source: str, metric: str, judge: str,
                 model_score: str = "mean_image_means") -> pd.DataFrame:
    """Per model: the human model score of ``source`` and the metric's mean image value.

    ``ratings:<criterion>`` uses ``model_score`` of the leaderboard; ``rankings:<criterion>``
    uses the mean rank over all prompts (1 = best).
    """
    kind, crit = source.split(":", 1)
    if kind == "ratings":
        human = [{"model": r["model"], "human": r[model_score]} for r in doc["human"]
                 if r["criterion"] == crit]
    else:
        human = [{"model": r["model"], "human": r["mean_rank"]}
                 for r in doc["rankings"]["models"]
                 if r["criterion"] == crit and r["dimension"] == "all"]
    values = [{"model": r["model"], "metric": r["mean"]}
              for r in doc["benchmarks"]["metric_means"]
              if r["metric"] == metric and r["judge"] == judge]
    if not human or not values:
        return pd.DataFrame(columns=["model", "human", "metric"])
    return pd.DataFrame(human).merge(pd.DataFrame(values), on="model")


def scatter(points: pd.DataFrame, source: str, metric: str,
            model_score: str = "mean_image_means") -> alt.Chart:
    """Human vs metric, one labelled point per model (a ranking's axis: 1 = best on top)."""
    ranked = source.startswith("rankings:")
    title = (f"mean rank, {source.split(':', 1)[1]} (1 = best)" if ranked
             else f"{MODEL_SCORES[model_score]}, {source.split(':', 1)[1]}")
    base = alt.Chart(points).encode(
        x=alt.X("metric:Q", title=f"{metric} (mean image value)",
                scale=alt.Scale(zero=False)),
        y=alt.Y("human:Q", title=title, scale=alt.Scale(zero=False, reverse=ranked)),
        tooltip=["model", alt.Tooltip("human:Q", format=".3f"),
                 alt.Tooltip("metric:Q", format=".4f")])
    return (base.mark_point(filled=True, size=90)
            + base.mark_text(align="left", dx=7).encode(text="model:N"))


def sources(doc: dict) -> list[str]:
    """Human sources of the human-vs-metric rows, the report's default first."""
    found = sorted({r["human"] for r in doc["human_vs_metric"]})
    first = report.default_source(doc)
    return sorted(found, key=lambda s: (s != first, s))


def tiif_overall(rows: list[dict]) -> pd.DataFrame:
    """TIIF-Bench Overall per model (rows) × judge and prompt length (columns), best first."""
    df = pd.DataFrame([r for r in rows if r["group"] == "Overall"])
    df["column"] = [metric_label(f"{m} {v}", j) for m, v, j in
                    zip(df["metric"], df["variant"], df["judge"], strict=True)]
    wide = df.pivot_table(index="model", columns="column", values="score", aggfunc="first")
    return wide.sort_values(wide.columns[0], ascending=False)


def position_chart(rows: list[dict]) -> alt.Chart:
    """Mean rank per display slot (a flat line = no position bias)."""
    return alt.Chart(pd.DataFrame(rows)).mark_line(point=True).encode(
        x=alt.X("position:O", title="display slot"),
        y=alt.Y("mean_rank:Q", title="mean rank (1 = best)", scale=alt.Scale(zero=False)),
        color="criterion:N", tooltip=["criterion", "position", "mean_rank", "n"])
