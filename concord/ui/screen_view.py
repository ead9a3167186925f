"""The pieces the rater screens draw alike: the revoked-link stop, the head (progress,
notice, prompt), the reason forms (skip, flag) and the end of the queue."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from concord.services.labelling import comments, common
from concord.services.labelling.comments import Shown
from concord.ui import onboarding_view, session, widgets
from concord.ui.screen import Screen


def still_allowed() -> bool:
    """False (with why) when the rater's link stopped working since the last run."""
    if session.still_allowed():
        return True
    st.error(session.ended_message())
    return False


def progress(item: object | None, fetch: Callable[[], common.Progress]) -> common.Progress:
    """The rater's progress: it came with the item (one look at the queue); at the end,
    ``fetch()`` asks for it."""
    shown = getattr(item, "progress", None)
    return shown if shown is not None else fetch()


def head(scr: Screen, title: str, study: str, rater_id: int, *, item: object | None,
         done: common.Progress, noun: str, prompt: str | None,
         extra: Callable[[], None] | None = None) -> None:
    """Progress, notices and the prompt (and ``extra()``: what to judge): they stay in view
    while the rater works."""
    with st.container(key="concord_head"):
        st.caption(title)
        widgets.progress_and_notice(done.done, done.skipped, done.assigned, noun, scr.NOTICE)
        onboarding_view.check_warning(study, rater_id)
        if item is not None:
            widgets.literal(prompt or "(no prompt text)", css="concord-prompt")
            if extra is not None:
                extra()


def reason_form(scr: Screen, kind: str, study: str, rater_id: int, *, label: str,
                ok: str, on_ok: Callable[[str, int], None],
                placeholder: str | None = None) -> None:
    """A skip or flag form: a focused text field, Enter confirms, Esc cancels."""
    name = f"{scr.parts.prefix}_{kind}"
    field = scr.SKIP_REASON if kind == "skip" else f"{name}_note"
    with st.form(f"{name}_form"):
        st.text_input(label, key=field, placeholder=placeholder)
        left, right = st.columns(2)
        left.form_submit_button(f"{ok} ⏎", key=f"{name}_ok", type="primary", on_click=on_ok,
                                args=(study, rater_id))
        right.form_submit_button("Cancel [Esc]", key=f"{name}_cancel",
                                 on_click=scr.cancel_forms)


def comment_mode(item: object) -> str:
    """The study's comment setting as it came with the item (``off`` without an item)."""
    shown = getattr(item, "comment", None)
    return shown.mode if isinstance(shown, Shown) else "off"


def comment_css(scr: Screen, item: object) -> str | None:
    """The CSS of the item's comment field for the key listener (None: no field)."""
    return None if comment_mode(item) == "off" else widgets.widget_css(scr.COMMENT, "textarea")


def comment_field(scr: Screen, item: object) -> None:
    """The comment field of the item on screen, when the study takes comments."""
    mode = comment_mode(item)
    if mode == "off":
        return
    st.text_area(f"Comment for the researcher ({mode}) [C]", key=scr.COMMENT, height=68,
                 max_chars=comments.MAX_CHARS,
                 placeholder="Anything the researcher should know about this answer",
                 help="C puts the cursor here; Esc leaves the field (the keys work again); "
                      "Ctrl+Enter submits.")


def skip_form(scr: Screen, study: str, rater_id: int, *, what: str,
              placeholder: str | None = None) -> None:
    """The skip form of ``what`` (image, prompt, pair) when it is open."""
    if scr.open_form() == "skip":
        reason_form(scr, "skip", study, rater_id, label=f"Why skip this {what}?",
                    ok=f"Skip {what}", on_ok=scr.skip_with_reason, placeholder=placeholder)

