"""Pieces of the dashboard's Pairs tab: the Bradley–Terry leaderboard and its chart, and
the win matrix (from the report's ``pairs`` section)."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from concord.ui import dashboard_view as view

SOURCES = {"pairs": "pair judgments", "rankings": "pairs derived from rankings"}
TIES = {"davidson": "Davidson (ties estimated, ν)", "half": "a tie counts half"}
BT_COLUMNS = ["model", "score", "score_ci_low", "score_ci_high", "strength",
              "strength_ci_low", "strength_ci_high", "n_comparisons", "nu", "nu_ci_low",
              "nu_ci_high", "n_judgments", "boot_undefined"]


def bt_chart(board: pd.DataFrame) -> alt.Chart:
    """Scores with their bootstrap intervals, strongest model on top."""
    order = board["model"].tolist()
    base = alt.Chart(board).encode(y=alt.Y("model:N", sort=order, title=None))
    bars = base.mark_rule(strokeWidth=3, opacity=0.6).encode(
        x=alt.X("score_ci_low:Q", title="Bradley–Terry score (95% CI)",
                scale=alt.Scale(zero=False)), x2="score_ci_high:Q")
    points = base.mark_point(filled=True, size=80).encode(
        x="score:Q", tooltip=["model", alt.Tooltip("score:Q", format=".1f"),
                              "n_comparisons"])
    return (bars + points).properties(height=max(160, 36 * len(order)))


def matrix_chart(rows: list[dict]) -> alt.Chart:
    """Win rate of the row model against the column model (ties count half)."""
    df = pd.DataFrame(rows)
    base = alt.Chart(df).encode(x=alt.X("opponent:N", title="against"),
                                y=alt.Y("model:N", title="model"))
    rect = base.mark_rect().encode(
        color=alt.Color("win_rate:Q", scale=alt.Scale(scheme="redblue", domain=[0, 1]),
                        title="win rate"),
        tooltip=["model", "opponent", alt.Tooltip("win_rate:Q", format=".2f"), "wins",
                 "ties", "n"])
    return rect + base.mark_text(fontSize=11).encode(text=alt.Text("win_rate:Q", format=".2f"))


def bradley_terry(rows: list[dict]) -> None:
    """The Bradley–Terry leaderboard, by source of pairs and tie model."""
    sources = [s for s in SOURCES if any(r["source"] == s for r in rows)]
    c1, c2 = st.columns(2)
    source = c1.radio("Judgments", sources, format_func=SOURCES.get, horizontal=True,
                      key="dash_pair_source")
    ties = c2.radio("Ties", list(TIES), format_func=TIES.get, horizontal=True,
                    key="dash_pair_ties")
    board = view.table([r for r in rows if r["source"] == source and r["tie_model"] == ties],
                       BT_COLUMNS)
    st.caption("Maximum-likelihood Bradley–Terry; score = 1000 + 400/ln 10 × strength "
               "(mean strength 0): 400 points = odds of 10:1, the arena scale, the same for "
               "both sources. 95% prompt-bootstrap CIs. Gold pairs are left out.")
    st.dataframe(board, hide_index=True, width="stretch")
    if not board.empty and board["score_ci_low"].notna().all():
        st.altair_chart(bt_chart(board), width="stretch")
