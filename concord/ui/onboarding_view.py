"""The screens before and after the items: instructions and consent, the practice block
with feedback, and the end screens with the completion or screen-out code."""

from __future__ import annotations

import dataclasses

import streamlit as st

from concord.errors import ConcordError
from concord.rubrics import Rubric
from concord.services import questionnaire
from concord.services.crowd import onboarding
from concord.services.labelling import checks, rating
from concord.ui import questionnaire_view, scale_input, session, widgets

PRACTICE_ITEM = "practice_item"
FEEDBACK = "practice_feedback"
SHOWN = "practice_shown"
AGREE = "consent_agree"


def consent(study: str, rater_id: int) -> None:
    """Instructions (Markdown) and the consent text; the rater must tick and accept."""
    info = onboarding.welcome(session.db(), study, rater_id)
    st.title("Before you start")
    if info.instructions.strip():
        with st.container(border=True, key="crowd_instructions"):
            st.markdown(info.instructions)
    if info.practice_items:
        st.info(f"First come {info.practice_items} practice image(s) with known answers: "
                "after each you see the expected answer beside yours. At least "
                f"{info.pass_threshold:.0%} must be right to go on to the real images.")
    keys = {"Enter": ("consent_start", "button")}
    if info.consent.strip():
        st.subheader("Consent")
        widgets.literal(info.consent)
        agreed = st.checkbox("[A] I have read the above and I agree", key=AGREE)
        keys["a"] = (AGREE, "input")
    else:
        agreed = True
    widgets.keyboard(widgets.Keys({k: (widgets.widget_css(w, inner), 0, True)
                                   for k, (w, inner) in keys.items()}), key="consent_keys")
    if st.button("Start ⏎", type="primary", key="consent_start", disabled=not agreed):
        onboarding.accept(session.db(), study, rater_id)
        st.rerun()


def _level(rubric: Rubric, criterion: str, value: float) -> str:
    found = rubric.criterion(criterion)
    if found.continuous is not None:  # a slider's value has no level name
        return f"{value:g}"
    return f"{value:g} · {found.level(value).label}"


def _keyed_level(rubric: Rubric, criterion: str, value: float) -> str:
    key = rubric.criterion(criterion).level(value).key
    return (f"[{key.upper()}] " if key else "") + _level(rubric, criterion, value)


def feedback(fb: onboarding.Feedback, rubric: Rubric) -> None:
    """The expected answer beside the rater's, per criterion."""
    (st.success if fb.correct else st.warning)(
        f"Practice item {fb.position} of {fb.total}: "
        + ("right." if fb.correct else "not quite — compare with the expected answer."))
    rows = []
    for criterion, (value, tol) in fb.expected.items():
        given = fb.given.get(criterion)
        expected = _level(rubric, criterion, value) + (f" (± {tol:g})" if tol else "")
        rows.append({"criterion": criterion,
                     "your answer": _level(rubric, criterion, given) if given is not None
                     else "—", "expected": expected,
                     "": "✗" if criterion in fb.wrong else "✓"})
    st.table(rows)


# Enter checks the answer, then goes on: one binding for both buttons, so an Enter pressed
# while the page changes from one to the other clicks whichever is there.
_ENTER = (f"{widgets.widget_css('practice_submit')}, {widgets.widget_css('practice_next')}",
          0, True)


def _cond_key(position: int) -> str:
    # The trailing x: no key is a prefix of another (the key listener matches prefixes).
    return f"practice_cond{position}x"


def _keys(rubric: Rubric) -> widgets.Keys:
    """Level keys and condition keys as on the real items; Enter checks the answer."""
    bindings = widgets.level_keys(rubric, lambda c: f"practice_{c}")
    conditions = [cond for listed in rubric.checklists for cond in listed.conditions]
    bindings.update({cond.key.lower(): (widgets.widget_css(_cond_key(i), "input"), 0, False)
                     for i, cond in enumerate(conditions) if cond.key})
    bindings["Enter"] = _ENTER
    return widgets.with_fields(widgets.Keys(bindings), comment=None,
                               sliders=widgets.slider_css(rubric, lambda c: f"practice_{c}"))


def _choices(rubric: Rubric) -> None:
    position = 0
    for criterion in rubric.criteria:
        listed = rubric.checklist(criterion.key)
        if listed is not None:  # a checklist study: practise the ticks the items will use
            st.markdown(f"**{criterion.key}** — {criterion.name}: tick every statement "
                        "that holds")
            for cond in listed.conditions:
                hint = f"[{cond.key}] " if cond.key else ""
                st.checkbox(f"{hint}{cond.text}", key=_cond_key(position))
                position += 1
            continue
        if criterion.continuous is not None:
            scale_input.continuous(criterion, f"practice_{criterion.key}",
                                   f"**{criterion.key}** — {criterion.name}")
            continue
        st.radio(f"**{criterion.key}** — {criterion.name}", list(criterion.values),
                 index=None, horizontal=True, key=f"practice_{criterion.key}",
                 format_func=lambda v, c=criterion: _keyed_level(rubric, c.key, v),
                 captions=[lv.description for lv in criterion.levels],
                 help=criterion.definition)


def _answer(study: str, rater_id: int, rubric: Rubric) -> None:
    item: onboarding.PracticeItem | None = st.session_state.get(PRACTICE_ITEM)
    if item is None:
        return
    values = {c.key: st.session_state.get(f"practice_{c.key}") for c in rubric.criteria
              if rubric.checklist(c.key) is None}
    conditions = [cond for listed in rubric.checklists for cond in listed.conditions]
    ticks = {cond.id: bool(st.session_state.get(_cond_key(i)))
             for i, cond in enumerate(conditions)}
    try:
        fb = onboarding.answer_practice(session.db(), study, rater_id, item.image_id, values,
                                        submission=item.submission,
                                        ticks=ticks if rubric.checklists else None)
    except ConcordError as exc:
        st.session_state["practice_notice"] = str(exc)
        return
    st.session_state[FEEDBACK] = fb
    st.session_state[SHOWN] = item  # its image stays beside the feedback
    st.session_state.pop(PRACTICE_ITEM, None)
    # The next item starts blank: no level chosen, nothing ticked.
    for key in [*(f"practice_{c.key}" for c in rubric.criteria),
                *(_cond_key(i) for i in range(len(conditions)))]:
        st.session_state.pop(key, None)


def practice(study: str, rater_id: int) -> None:
    """One practice item, or the feedback on the last one."""
    st.title("Practice")
    fb: onboarding.Feedback | None = st.session_state.get(FEEDBACK)
    if fb is not None:
        shown: onboarding.PracticeItem | None = st.session_state.get(SHOWN)
        left, right = st.columns([3, 2])
        with left:
            feedback(fb, shown.rubric if shown is not None
                     else rating.study_rubric(session.db(), study, rater_id))
        if shown is not None:
            with right:
                widgets.literal(shown.prompt or "(no prompt text)")
                widgets.show_image(shown.image_path, alt="practice image")
        label = ("Start the real images" if fb.finished and fb.passed else
                 "See the result" if fb.finished else "Next practice image")
        widgets.keyboard(widgets.Keys({"Enter": _ENTER}, item=f"feedback-{fb.position}"),
                         key="practice_keys")
        if st.button(f"{label} ⏎", type="primary", key="practice_next"):
            st.session_state.pop(FEEDBACK, None)
            st.session_state.pop(SHOWN, None)
            st.rerun()
        return
    item = st.session_state.get(PRACTICE_ITEM) or onboarding.next_practice(
        session.db(), study, rater_id)
    if item is None:
        st.error("There is no practice image to show; please tell the researcher.")
        return
    st.session_state[PRACTICE_ITEM] = item
    widgets.keyboard(dataclasses.replace(_keys(item.rubric), item=f"practice-{item.position}"),
                     key="practice_keys")
    st.progress((item.position - 1) / item.total,
                text=f"Practice image {item.position} of {item.total}")
    notice = st.session_state.pop("practice_notice", None)
    if notice:
        st.warning(notice)
    widgets.literal(item.prompt or "(no prompt text)", css="concord-prompt")
    left, right = st.columns([2, 3])
    with left, st.form("practice_form", border=False, enter_to_submit=False):
        # The image's own rubric (a dimension may have one of its own), as on real items.
        _choices(item.rubric)
        st.form_submit_button("Check my answer ⏎", type="primary", key="practice_submit",
                              on_click=_answer, args=(study, rater_id, item.rubric))
    with right, st.container(key="concord_image"):  # on a phone: before the choices
        widgets.show_image(item.image_path, alt="practice image")


_ENDED = {
    "failed": "Your practice answers did not reach the level this study needs, so there "
              "are no more images for you.",
    "screened": "You skipped more items than this study allows, so it has ended for you.",
    "blocked": "Too many of your answers to check items (items with a known answer) were "
               "wrong, so the study has ended for you.",
}
_SCREENS = {"image": "Rate images", "prompt": "Rank images", "pair": "Compare pairs"}


def ended(study: str, rater_id: int) -> None:
    """The polite end screen of a session that is over (failed practice, too many skips
    or failed checks), with the screen-out code."""
    db = session.db()
    st.title("Thank you")
    st.write("Thank you for your time. " + _ENDED.get(onboarding.stage(db, study, rater_id),
                                                      "There are no more items for you."))
    code_screen(onboarding.completion(db, study, rater_id))


def code_screen(done: onboarding.Completion | None) -> None:
    """The code (and the link) to take back to the crowd platform."""
    if done is None:
        return
    if done.code:
        st.write("Your code to enter on the platform:" if not done.screened_out else
                 "Please return the study with this code:")
        st.code(done.code, language=None)
    if done.url:
        st.link_button("Back to the platform", done.url, type="primary")


def finished_or(study: str, rater_id: int, message: str, unit: str) -> None:
    """A screen with no item: the completion code for a rater who did the study's work,
    the screen-out code for one whose session is over, the screens still to do, or why
    there is no item now; ``message`` for a rater without a quota who is finished."""
    view = onboarding.outlook(session.db(), study, rater_id, unit)
    last = (questionnaire.open_part(session.db(), study, rater_id, "after")
            if view.stage == "work" and (view.completion is not None or view.finished) else ())
    if view.stage != "work":
        ended(study, rater_id)
    elif last:  # the questions after the items come before the code
        questionnaire_view.form(study, rater_id, "after", last)
    elif view.completion is not None:
        st.success("All done — thank you! You have finished this study.")
        code_screen(view.completion)
    elif view.finished:
        st.success(message)
    elif view.units_left and unit not in view.units_left:
        st.success("You have done your items on this screen. Still to do: "
                   + ", ".join(_SCREENS[u] for u in view.units_left) + " (in the menu).")
    elif view.waiting:
        done = f" ({view.done} of {view.quota} done)" if view.quota is not None else ""
        st.info(f"No item is free for you right now{done}. Items other raters opened and "
                f"left come back after {view.lease_minutes:g} minutes: reload this page "
                "then. You have not finished the study yet.")
    else:
        st.info("There are no more items for you in this study: every item has all the "
                "answers it needs. You have not finished it, so there is no completion "
                "code; please contact the researcher through the platform.")


def check_warning(study: str, rater_id: int) -> None:
    """The warning after ``quality.warn_after`` failed attention checks."""
    text = checks.warning(session.db(), study, rater_id)
    if text:
        st.warning(text, icon=":material/warning:")
