"""The dashboard's Plan panel: power against prompts for 1, 3 and 5 raters per image, from
the study itself as a pilot (``concord.services.report.planning``; the CLI's ``plan``)."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from concord.errors import ConcordError
from concord.ui import dashboard_view as view

PROMPTS = (25, 50, 100, 200, 400, 800)
RATERS = (1, 3, 5)


@st.cache_data(max_entries=8, show_spinner="Simulating studies…")
def plan_records(db_path: str, study: str, criterion: str | None, difference: float | None,
                 n_sims: int, version: tuple[str, ...]) -> dict:
    """Components and plan table of the study as a pilot (``version`` keys the cache)."""
    from concord.services.report.planning import pilot_plan

    with view.connection(db_path) as db:
        return pilot_plan(db, study, criterion=criterion, difference=difference,
                          prompts=PROMPTS, raters=RATERS, n_sims=n_sims)


def power_chart(table: pd.DataFrame) -> alt.Chart:
    """Simulated power (points, lines) and the normal approximation (dashed) per raters."""
    long = pd.concat([
        table.assign(power=table["power_diff"], kind="simulated"),
        table.assign(power=table["power_diff_normal"], kind="normal approximation")])
    base = alt.Chart(long).encode(
        x=alt.X("prompts:Q", scale=alt.Scale(type="log"), title="prompts"),
        y=alt.Y("power:Q", scale=alt.Scale(domain=[0, 1]), title="power"),
        color=alt.Color("raters:N", title="raters per image"),
        strokeDash=alt.StrokeDash("kind:N", title=None),
        tooltip=["raters", "prompts", alt.Tooltip("power:Q", format=".2f"), "kind"])
    return base.mark_line(point=True)


def plan(db_path: str, study: str, criteria: list[str], version: tuple[str, ...]) -> None:
    """Choose a criterion and the difference to detect; show the curves and the table."""
    if not criteria:
        st.info("Planning needs ratings: this study (or filter) has none.")
        return
    # Every tab renders on every run: the simulation waits until asked for, so the
    # dashboard's first render does not pay for it.
    if not st.toggle("Simulate the plan (a few seconds; cached afterwards)",
                     key="dash_plan_on"):
        st.caption("Power to tell two models apart against prompts, for 1, 3 and 5 raters "
                   "per image, simulated from this study's ratings as a pilot.")
        return
    c1, c2, c3 = st.columns(3)
    criterion = c1.selectbox("Criterion", criteria, key="dash_plan_criterion")
    typed = c2.number_input("Difference to detect (0 = the pilot's top-two gap)",
                            min_value=0.0, value=0.0, step=0.05, key="dash_plan_diff")
    n_sims = int(c3.selectbox("Simulated studies per point", [200, 500, 1000], index=1,
                              key="dash_plan_sims"))
    try:
        doc = plan_records(db_path, study, criterion, typed or None, n_sims, version)
    except (ConcordError, ValueError) as exc:
        st.warning(f"No plan: {exc}")
        return
    c = doc["components"]
    st.caption(f"From this study's {doc['criterion']} ratings: SD prompt {c['sd_prompt']:.3f}, "
               f"prompt × model {c['sd_prompt_model']:.3f}, rating {c['sd_rater']:.3f}; "
               f"difference {c['difference']:.3f} between two models; α = 0.05, paired "
               "t-test on per-prompt differences, seeded.")
    table = pd.DataFrame(doc["table"])
    st.altair_chart(power_chart(table), width="stretch")
    st.dataframe(table, hide_index=True, width="stretch")
