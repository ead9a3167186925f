"""The dashboard's claims: which models are tied, which differ, which metric is closer to
people, and how many prompts and raters a study needs.

Every number comes from the report (``stats --json``) or, for the plan, from
``concord.services.report.planning``; these functions pick, reshape and draw.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from concord.ui import dashboard_view as view

SIGNIFICANT = 0.05
RANK_LOW, RANK_HIGH = "rank_mean_rater_means_ci_boot_low", "rank_mean_rater_means_ci_boot_high"


def tied_for_first(board: pd.DataFrame) -> list[str]:
    """Models whose bootstrap rank interval includes 1: no other model is shown above them."""
    if RANK_LOW not in board.columns:
        return []
    return board.loc[board[RANK_LOW] == 1, "model"].tolist()


def headline(board: pd.DataFrame, criterion: str) -> str:
    """One line about the top of the leaderboard (markdown). "Best" only for a model the
    data put first: its rank interval is [1, 1] and no other model's includes 1."""
    top = board.iloc[0]
    ci = ("" if pd.isna(top["mean_rater_means_ci_boot_low"]) else
          f" (95% CI {top['mean_rater_means_ci_boot_low']:.3f}–"
          f"{top['mean_rater_means_ci_boot_high']:.3f})")
    score = (f"mean of rater means {top['mean_rater_means']:.3f}{ci}, "
             f"{int(top['n_raters'])} raters, {int(top['n_images'])} images")
    tied = tied_for_first(board)
    if tied == [top["model"]] and top.get(RANK_HIGH) == 1:
        return f"Best on **{criterion}**: **{top['model']}**, {score}."
    if len(tied) > 1:
        names = ", ".join(f"**{m}**" for m in tied)
        return (f"Tied for best on **{criterion}**: {names} — their 95% rank intervals all "
                f"include 1, so the data do not separate them. Highest point estimate: "
                f"{top['model']}, {score}.")
    if pd.isna(top.get(RANK_HIGH)):
        return (f"Highest on **{criterion}**: **{top['model']}**, {score}; no rank interval "
                "(too few prompts to resample), so no model is called best.")
    return (f"Highest on **{criterion}**: **{top['model']}**, {score}; its 95% rank interval "
            f"is {_rank(top)}, so it is not clearly best.")


def _rank(row: pd.Series) -> str:
    if pd.isna(row.get(RANK_LOW)):
        return "–"
    low, high = int(row[RANK_LOW]), int(row[RANK_HIGH])
    return f"{low}" if low == high else f"{low}–{high}"


def with_rank_column(board: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard with a readable ``rank (95% CI)`` column after the model."""
    out = board.copy()
    out.insert(1, "rank (95% CI)", [f"{int(r['rank_mean_rater_means'])} [{_rank(r)}]"
                                    if pd.notna(r.get("rank_mean_rater_means")) else "–"
                                    for _, r in board.iterrows()])
    return out


def difference_matrix(rows: list[dict], criterion: str) -> pd.DataFrame:
    """Both directions of every pair of one criterion (dimension ``all``): row model minus
    column model, with its Holm-adjusted permutation p-value."""
    pick = [r for r in rows if r["criterion"] == criterion and r["dimension"] == "all"]
    if not pick:
        return pd.DataFrame(columns=["model", "against", "mean_diff", "p_holm", "label"])
    df = pd.DataFrame(pick)
    there = df.rename(columns={"model_a": "model", "model_b": "against"})
    back = df.rename(columns={"model_b": "model", "model_a": "against"}).assign(
        mean_diff=-df["mean_diff"])
    both = pd.concat([there, back], ignore_index=True)
    both["p_holm"] = both["mean_diff_p_perm_holm"]
    both["label"] = [f"{d:+.3f}{'*' if p is not None and p < SIGNIFICANT else ''}"
                     for d, p in zip(both["mean_diff"], both["p_holm"], strict=True)]
    return both[["model", "against", "mean_diff", "p_holm", "label"]]


def matrix_chart(df: pd.DataFrame, value: str, title: str, order: list[str] | None = None
                 ) -> alt.Chart:
    """A diverging heat map of ``value`` with its ``label`` printed in each cell."""
    sort = order or sorted(set(df["model"]) | set(df["against"]))
    top = float(df[value].abs().max() or 1.0)
    base = alt.Chart(df).encode(x=alt.X("against:N", sort=sort, title="against"),
                                y=alt.Y("model:N", sort=sort, title=None))
    rect = base.mark_rect().encode(
        color=alt.Color(f"{value}:Q", scale=alt.Scale(scheme="redblue", domain=[-top, top]),
                        title=title), tooltip=["model", "against", "label"])
    return rect + base.mark_text(fontSize=11).encode(text="label:N")


def model_differences(doc: dict, criterion: str, order: list[str]) -> None:
    """Which models of the leaderboard differ (paired over prompts)."""
    rows = doc.get("model_differences") or []
    matrix = difference_matrix(rows, criterion)
    if matrix.empty:
        return
    st.subheader("Which models differ")
    st.caption("Mean over prompts of the row model's prompt score minus the column "
               "model's; * = Holm-adjusted permutation p < 0.05 over this leaderboard's "
               "pairs. Wilcoxon and Benjamini–Hochberg p-values are in the table.")
    st.altair_chart(matrix_chart(matrix, "mean_diff", "difference", order), width="stretch")
    with st.expander("All pairs, every dimension"):
        st.dataframe(view.table([r for r in rows if r["criterion"] == criterion]),
                     hide_index=True, width="stretch")


def metric_table(rows: list[dict]) -> pd.DataFrame:
    """Each metric's value with its bootstrap interval, from the comparison rows."""
    seen: dict[str, dict] = {}
    for r in rows:
        for side in ("a", "b"):
            label = view.metric_label(r[f"metric_{side}"], r[f"judge_{side}"])
            seen.setdefault(label, {"metric": label, "value": r[f"value_{side}"],
                                    "ci_boot_low": r[f"value_{side}_ci_boot_low"],
                                    "ci_boot_high": r[f"value_{side}_ci_boot_high"]})
    return pd.DataFrame(list(seen.values())).sort_values("value", ascending=False,
                                                         na_position="last")


def metric_comparisons(doc: dict, human: str) -> None:
    """Metric against metric for one human source: table with intervals, matrix."""
    rows = [r for r in doc.get("metric_comparisons") or [] if r["human"] == human]
    if not rows:
        return
    st.subheader("Metric against metric")
    c1, c2 = st.columns(2)
    level = c1.radio("Level", ["model", "item"], horizontal=True, key="dash_mc_level")
    names = sorted({r["statistic"] for r in rows if r["level"] == level})
    statistic = c2.selectbox("Statistic", names, key="dash_mc_stat")
    pick = [r for r in rows if r["level"] == level and r["statistic"] == statistic
            and r["dimension"] == "all"]
    st.caption("Paired prompt bootstrap (95% CI); * = Holm-adjusted swap-permutation "
               "p < 0.05 (Williams' test is in the table for Pearson). Item level: pooled "
               "Pearson, the others within each prompt.")
    st.dataframe(metric_table(pick), hide_index=True, width="stretch")
    df = pd.DataFrame(pick)
    df["model"] = [view.metric_label(m, j) for m, j in zip(df["metric_a"], df["judge_a"],
                                                            strict=True)]
    df["against"] = [view.metric_label(m, j) for m, j in zip(df["metric_b"], df["judge_b"],
                                                              strict=True)]
    back = df.assign(model=df["against"], against=df["model"], diff=-df["diff"])
    both = pd.concat([df, back], ignore_index=True)
    both["label"] = [f"{d:+.3f}{'*' if p is not None and p < SIGNIFICANT else ''}"
                     if pd.notna(d) else "–"
                     for d, p in zip(both["diff"], both["diff_p_perm_holm"], strict=True)]
    st.altair_chart(matrix_chart(both, "diff", f"{statistic} difference"), width="stretch")
    with st.expander("Every comparison"):
        st.dataframe(view.table(rows), hide_index=True, width="stretch")


def pair_differences(section: dict) -> None:
    """Bradley–Terry differences and head-to-head win rates of the chosen judgments."""
    source = st.session_state.get("dash_pair_source", "pairs")
    ties = st.session_state.get("dash_pair_ties", "davidson")
    bt = [r for r in section.get("bradley_terry_differences") or []
          if r["source"] == source and r["tie_model"] == ties]
    if bt:
        st.subheader("Bradley–Terry differences between models")
        st.caption("Score difference (arena scale) with its 95% prompt-bootstrap interval "
                   "from the same refits as the scores; an interval that holds 0 means the "
                   "two are not told apart.")
        st.dataframe(view.table(bt), hide_index=True, width="stretch")
    h2h = [r for r in section.get("head_to_head") or [] if r["source"] == source]
    if h2h:
        st.subheader("Head to head")
        st.dataframe(view.table(h2h), hide_index=True, width="stretch")
