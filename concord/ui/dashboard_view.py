"""Helpers of the agreement dashboard: cached numbers, tables in display shape, Altair charts.

Numbers are cached per database change: every cached function takes the database path
and ``concord.store.frames.data_version`` as arguments (never a ``Database``: a sqlite3
connection must not cross the threads Streamlit runs scripts on), and opens its own
connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import altair as alt
import pandas as pd
import streamlit as st
from sqlite_utils import Database

from concord import export
from concord.services import labels, report
from concord.store.db import open_db

ALL = "All"
DISAGREEMENT_COLUMNS = ["model", "prompt_id", "prompt", "human", "metric", "human_rank",
                        "metric_rank", "gap", "n_raters", "dimension", "sample", "image_id",
                        "path"]
_CRITERIA_FIRST = ("O", "SC", "PR")


@contextlib.contextmanager
def _connection(db_path: str) -> Iterator[Database]:
    db = open_db(db_path, migrate=False, check_same_thread=False)
    try:
        yield db
    finally:
        db.close()


@st.cache_data(max_entries=32, show_spinner=False)
def options(db_path: str, study: str, version: tuple[str, ...]) -> dict[str, list]:
    """Dimensions and (metric, judge) pairs of a study (``version`` keys the cache)."""
    with _connection(db_path) as db:
        return report.filter_options(db, study)


@st.cache_data(max_entries=16, show_spinner="Computing the statistics…")
def numbers(db_path: str, study: str, dimension: str | None, metric: str | None,
            version: tuple[str, ...]) -> dict:
    """:func:`concord.services.report.dashboard` for one study and filters, cached."""
    with _connection(db_path) as db:
        return report.dashboard(db, study, dimension=dimension, metric=metric)


def downloader(db_path: str, study: str, fmt: str) -> Callable[[], bytes]:
    """A callable building one export when its button is clicked (on another thread)."""
    def build() -> bytes:
        with _connection(db_path) as db:
            if fmt == "imagenhub":
                return export.imagenhub_zip_bytes(labels.ratings(db, study))
            if fmt == "stats":
                return report.report_json(report.study_report(db, study)).encode()
            return labels.export_bytes(db, study, fmt)
    return build


def criteria(doc: dict) -> list[str]:
    """Criteria of the human scores, O first."""
    found = {r["criterion"] for r in doc["human"]}
    return [c for c in _CRITERIA_FIRST if c in found] + sorted(found - set(_CRITERIA_FIRST))


def leaderboard(doc: dict, criterion: str) -> pd.DataFrame:
    """Models of one criterion, best first: mean, CI, std across raters, counts."""
    rows = [r for r in doc["human"] if r["criterion"] == criterion]
    df = pd.DataFrame(rows, columns=["model", "mean", "ci_low", "ci_high", "std", "n_raters",
                                     "n_prompts", "n_images", "n_ratings"])
    return df.sort_values(["mean", "model"], ascending=[False, True], ignore_index=True)


def headline(board: pd.DataFrame, criterion: str) -> str:
    """One line naming the best model with its mean and CI (markdown)."""
    top = board.iloc[0]
    ci = ("" if pd.isna(top["ci_low"]) else
          f" (95% CI {top['ci_low']:.3f}–{top['ci_high']:.3f})")
    return (f"Best on **{criterion}**: **{top['model']}**, mean {top['mean']:.3f}{ci}, "
            f"{int(top['n_raters'])} raters, {int(top['n_images'])} images.")


def ci_chart(board: pd.DataFrame, criterion: str) -> alt.Chart:
    """Horizontal CI bars with the mean as a point, best model on top."""
    order = board["model"].tolist()
    base = alt.Chart(board).encode(y=alt.Y("model:N", sort=order, title=None))
    bars = base.mark_rule(strokeWidth=3, opacity=0.6).encode(
        x=alt.X("ci_low:Q", title=f"mean {criterion} (95% CI)"), x2="ci_high:Q")
    points = base.mark_point(filled=True, size=80).encode(
        x="mean:Q", tooltip=["model", alt.Tooltip("mean:Q", format=".3f"),
                             alt.Tooltip("ci_low:Q", format=".3f"),
                             alt.Tooltip("ci_high:Q", format=".3f"), "n_raters", "n_images"])
    return (bars + points).properties(height=max(160, 36 * len(order)))


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


def table7(corr: pd.DataFrame) -> pd.DataFrame:
    """TIIF-Bench Table 7 shape: rows = dimensions (``all`` first), columns = metrics,
    cells = Spearman ρ with its 95% CI."""
    def cell(r: pd.Series) -> str:
        if pd.isna(r["spearman"]):
            return "–"
        low, high = r.get("spearman_ci_low"), r.get("spearman_ci_high")
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


def model_points(doc: dict, criterion: str, metric: str, judge: str) -> pd.DataFrame:
    """Per model: human mean of ``criterion`` and the metric's mean image value."""
    human = pd.DataFrame([{"model": r["model"], "human": r["mean"]} for r in doc["human"]
                          if r["criterion"] == criterion])
    values = pd.DataFrame([{"model": r["model"], "metric": r["mean"]}
                           for r in doc["benchmarks"]["metric_means"]
                           if r["metric"] == metric and r["judge"] == judge])
    if human.empty or values.empty:
        return pd.DataFrame(columns=["model", "human", "metric"])
    return human.merge(values, on="model")


def scatter(points: pd.DataFrame, criterion: str, metric: str) -> alt.Chart:
    """Human vs metric, one labelled point per model."""
    base = alt.Chart(points).encode(
        x=alt.X("metric:Q", title=metric, scale=alt.Scale(zero=False)),
        y=alt.Y("human:Q", title=f"human {criterion}", scale=alt.Scale(zero=False)),
        tooltip=["model", alt.Tooltip("human:Q", format=".3f"),
                 alt.Tooltip("metric:Q", format=".4f")])
    return (base.mark_point(filled=True, size=90)
            + base.mark_text(align="left", dx=7).encode(text="model:N"))


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
