"""Researcher: the items raters disagree on most, every answer side by side, and an
adjudicated value stored apart from the raw labels."""

from pathlib import Path

import pandas as pd
import streamlit as st

from concord.errors import ConcordError
from concord.services import adjudication, studies
from concord.ui import session, widgets

user = session.require_researcher()
db = session.db()
study = session.current_study(tuple(r["study"] for r in studies.overview(db)))
st.title("Adjudicate")
if study is None:
    st.info("Import a study first.")
    st.stop()
session.show_flash()
st.caption("Most disagreed first: scores by the range (then std) of the raters' values, "
           "rankings by 1 − Kendall's W, pairs by 1 − the majority's share. An adjudicated "
           "value is kept apart: it never changes a rating or the statistics, and is "
           "exported on its own (`concord export --format adjudications`).")
views = {"score": "Scores", "rank": "Rankings", "pair": "Pairs"}
view = st.segmented_control("Labels", list(views), format_func=views.get, default="score",
                            key="adj_view") or "score"
limit = int(st.number_input("Items shown", 1, 500, 20, key="adj_limit"))
items = adjudication.queue(db, study, view, limit=limit)
if not items:
    st.info("No item has two or more answers yet.")
    st.stop()


def _label(option: object, item: dict) -> str:
    if view == "pair" and option in ("a", "b"):
        return f"{item['left_model' if option == 'a' else 'right_model']} is better"
    return f"{option:g}" if isinstance(option, float) else str(option)


for n, item in enumerate(items):
    where = item.get("model") or ("ranking set" if view == "rank" else
                                  f"{item.get('left_model')} vs {item.get('right_model')}")
    with st.container(border=True, key=f"adj_item_{n}"):
        pics = [p for p in item["paths"] if p]
        if pics:
            for col, path in zip(st.columns(len(pics)), pics, strict=True):
                with col:
                    widgets.show_image(Path(path), alt="thumbnail", width=160)
        widgets.literal(item["prompt"] or "(no prompt text)")
        st.caption(f"prompt {item['prompt_id']} · {where} · {item['criterion']} · "
                   f"{item['n_raters']} raters · disagreement {item['disagreement']:.2f}")
        st.dataframe(pd.DataFrame(item["answers"]), hide_index=True, key=f"adj_answers_{n}")
        current = item["adjudicated"]
        if current is not None:
            shown = " > ".join(current) if view == "rank" else _label(current, item)
            st.markdown(f"**Adjudicated:** {shown}")
        with st.form(key=f"adj_form_{n}"):
            scale = item.get("scale")
            if view == "rank":
                value = st.multiselect("Order, best first", item["options"], key=f"adj_v_{n}")
            elif scale is not None:  # a continuous criterion: any point of its scale
                value = st.number_input(
                    f"Adjudicated value ({scale['low']:g} to {scale['high']:g})",
                    min_value=scale["low"], max_value=scale["high"], step=scale["step"],
                    value=None, format="%g", key=f"adj_v_{n}")
            else:  # starts empty: a Save without a choice stores nothing
                value = st.selectbox("Adjudicated value", item["options"], key=f"adj_v_{n}",
                                     index=None, placeholder="Choose a value",
                                     format_func=lambda o, i=item: _label(o, i))
            note = st.text_input("Note (optional)", key=f"adj_note_{n}")
            save = st.form_submit_button("Save")
        if save and (value is None or value == []):
            st.error("Choose a value (or an order) first: nothing was saved.")
        elif save:
            try:
                adjudication.set_value(db, study, view, item["item_id"], item["criterion"],
                                       value, note=note, actor=user.name)
            except ConcordError as exc:
                st.error(str(exc))
            else:
                session.flash(f"Adjudicated prompt {item['prompt_id']} · {item['criterion']}")
                st.rerun()
        if current is not None and st.button("Clear adjudicated value", key=f"adj_clear_{n}"):
            adjudication.clear(db, study, view, item["item_id"], item["criterion"],
                               actor=user.name)
            st.rerun()
