"""The questionnaire screens (before the first item, after the last) and the researcher's
table of answers per participant."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from sqlite_utils import Database

from concord.errors import ConcordError
from concord.export import to_csv_bytes
from concord.questionnaire import Question
from concord.services import questionnaire as service
from concord.services.labelling import common
from concord.ui import session, widgets

_TITLES = {"before": "A few questions first", "after": "A few questions to finish"}
_PROBLEMS = "questionnaire_problems"


def _key(part: str, question: Question, option: int | None = None) -> str:
    return f"qn_{part}_{question.id}" if option is None else f"qn_{part}_{question.id}_{option}"


def _label(q: Question) -> str:
    return q.text + (" *" if q.required else "")


def _ask(part: str, q: Question) -> None:
    """One question's widget (in the form)."""
    label, helped = _label(q), q.help or None
    if q.kind == "single":
        st.radio(label, q.options, index=None, key=_key(part, q), help=helped)
    elif q.kind == "multiple":
        st.markdown(label, help=helped)
        for n, option in enumerate(q.options):
            st.checkbox(option, key=_key(part, q, n))
    elif q.kind == "likert":
        ends = {1: q.low, q.points: q.high}
        st.radio(label, list(range(1, q.points + 1)), index=None, horizontal=True,
                 key=_key(part, q), help=helped,
                 format_func=lambda v, e=ends: f"{v} · {e[v]}" if e.get(v) else str(v))
    elif q.kind == "number":
        st.number_input(label, value=None, step=1.0 if q.integer else None,
                        format="%d" if q.integer else None, key=_key(part, q), help=helped)
    else:
        st.text_area(label, max_chars=q.max_length, key=_key(part, q), help=helped)


def _given(part: str, questions: tuple[Question, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for q in questions:
        if q.kind == "multiple":
            out[q.id] = [o for n, o in enumerate(q.options)
                         if st.session_state.get(_key(part, q, n))]
        else:
            value = st.session_state.get(_key(part, q))
            out[q.id] = int(value) if q.integer and isinstance(value, float) and \
                value.is_integer() else value
    return out


def _submit(study: str, rater_id: int, part: str, questions: tuple[Question, ...],
            submission: str) -> None:
    try:
        service.submit(session.db(), study, rater_id, part, _given(part, questions),
                       submission=submission)
    except service.AnswersRefused as exc:
        st.session_state[_PROBLEMS] = exc.problems
    except ConcordError as exc:
        st.session_state[_PROBLEMS] = [str(exc)]


def form(study: str, rater_id: int, part: str, questions: tuple[Question, ...]) -> None:
    """The questions of one part; Continue stores the answers (a * marks the required)."""
    st.title(_TITLES[part])
    st.caption("Questions marked * need an answer. Your answers are kept apart from your "
               "ratings.")
    for problem in st.session_state.pop(_PROBLEMS, []):
        st.error(f"{problem[:1].upper()}{problem[1:]}.")
    submission = st.session_state.setdefault(f"qn_{part}_submission", common.new_submission())
    # Enter continues (from a choice, or a one-line field; a text box takes it as a newline).
    widgets.keyboard(widgets.Keys(widgets.button_keys({"Enter": f"qn_{part}_submit"}),
                                  enter_in="[class*='st-key-qn_'] input"),
                     key="questionnaire_keys")
    with st.form(f"qn_{part}_form", enter_to_submit=False):
        for q in questions:
            _ask(part, q)
        st.form_submit_button("Continue ⏎", type="primary", key=f"qn_{part}_submit",
                              on_click=_submit,
                              args=(study, rater_id, part, questions, submission))


def answers_table(db: Database, study: str) -> None:
    """The researcher's view: each participant's answers, beside the pay report."""
    rows = service.per_participant(db, study)
    if not rows:
        return
    st.subheader("Questionnaire answers")
    frame = pd.DataFrame(rows)
    st.dataframe(frame, hide_index=True, width="stretch", key="questionnaire_table")
    st.download_button("Download the answers (CSV)",
                       to_csv_bytes(service.answers_frame(db, study)),
                       file_name=f"{study}-questionnaire.csv", mime="text/csv",
                       key="questionnaire_csv")
    st.caption("Kept apart from the ratings: no statistic uses them. One row per "
               "participant and question: `python -m concord export --format "
               "questionnaire`.")
