"""One controller for the rater screens (rate, rank, pair): the item on screen, undo, skip,
edit and the one-time notices, the same code for the keyboard and the buttons.

What differs between the screens (which service fetches, skips and takes back; what a
fresh item puts on screen) is given as :class:`Parts`; each screen's module adds its own
actions (a rating's choices and flag, a ranking's draft, a pair's outcome).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st
from sqlite_utils import Database

from concord.errors import ConcordError
from concord.services.labelling.comments import Shown
from concord.services.labelling.gate import GateError
from concord.ui import session, widgets


def _nothing(item: Any) -> None:
    return None


def fetcher(open_one: Callable[[Database, str, int, int], Any],
            next_one: Callable[[Database, str, int], Any],
            ) -> Callable[[Database, str, int, int | None], Any]:
    """A :attr:`Parts.fetch`: the item being edited (``open_one``), else the next one."""
    def fetch(db: Database, study: str, rater_id: int, edit: int | None) -> Any:
        return (open_one(db, study, rater_id, edit) if edit is not None
                else next_one(db, study, rater_id))
    return fetch


@dataclass(frozen=True, slots=True)
class Parts:
    """The parts of one rater screen.

    ``prefix`` starts every widget and session-state key of the screen; ``item_key`` is
    where the item on screen is kept. ``fetch(db, study, rater, edit)`` gives the next
    item (``edit`` None) or an earlier one to change, ``unit_id(item)`` the id the
    services know the item by (``shown_id(item)`` the one the browser gets, if another).
    ``on_show(item)`` puts a freshly fetched item's earlier
    answers on screen; ``forms`` are the reason forms the screen opens (skip, flag).
    """

    prefix: str
    item_key: str
    fetch: Callable[[Database, str, int, int | None], Any]
    unit_id: Callable[[Any], int]
    skip: Callable[[Database, str, int, int, str], None]
    undo_last: Callable[[Database, str, int], int | None]
    undone: str
    already: str
    skipped: str | None = "Skipped."
    on_show: Callable[[Any], None] = _nothing
    shown_id: Callable[[Any], str | int] | None = None  # the browser's id of it (unit_id)
    extra_state: tuple[str, ...] = ()
    forms: tuple[str, ...] = ("skip",)


class Screen:
    """The state of one rater screen in this browser session."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.ITEM = parts.item_key
        self.STUDY = f"{parts.item_key}_study"
        self.EDIT = f"{parts.prefix}_edit"
        self.NOTICE = f"{parts.prefix}_notice"
        self.SKIP_REASON = f"{parts.prefix}_skip_reason"
        self.COMMENT = f"{parts.prefix}_comment"

    def form_key(self, kind: str) -> str:
        """Session-state key that says the ``kind`` reason form (skip, flag) is open."""
        return f"{self.parts.prefix}_{'skipping' if kind == 'skip' else kind + 'ging'}"

    def open_form(self) -> str | None:
        """The reason form that is open, if any."""
        return next((k for k in self.parts.forms if st.session_state.get(self.form_key(k))),
                    None)

    def item(self) -> Any:
        """The item on screen (None before the first fetch or at the end)."""
        return st.session_state.get(self.ITEM)

    def editing(self) -> bool:
        """Whether the item on screen is an earlier one being changed."""
        return st.session_state.get(self.EDIT) is not None

    def current(self, study: str, rater_id: int) -> Any:
        """The item on screen; fetched once and kept, so its submission id (and display
        order, placement) stay put while the rater works on it. None at the end."""
        if st.session_state.get(self.STUDY) not in (None, study):
            self.forget()  # the rater switched studies in the sidebar
        found = st.session_state.get(self.ITEM)
        if found is not None:
            return found
        db = session.db()
        edit = st.session_state.get(self.EDIT)
        try:
            found = session.fetch_or_stop(lambda: self.parts.fetch(db, study, rater_id, edit))
        except GateError:
            return None  # the session is over (skips, failed checks): the end screen shows
        self.parts.on_show(found)
        if found is not None:  # the rater's earlier comment on it, if any (an edit, an undo)
            st.session_state[self.COMMENT] = getattr(found, "comment", Shown()).text
        st.session_state[self.ITEM] = found
        st.session_state[self.STUDY] = study
        return found

    def forget(self) -> None:
        """Drop the item on screen so the next run fetches the next one."""
        keys = (self.ITEM, self.STUDY, self.EDIT, self.COMMENT,
                *map(self.form_key, self.parts.forms), *self.parts.extra_state)
        for key in keys:
            st.session_state.pop(key, None)

    def comment(self) -> str:
        """The text in the comment field (the study's ``comments`` setting)."""
        return str(st.session_state.get(self.COMMENT) or "")

    def notice(self, kind: str, text: str) -> None:
        """A message shown above the next item (``kind``: an ``st`` alert function)."""
        st.session_state[self.NOTICE] = (kind, text)

    def guarded(self, action: Callable[[], Any]) -> tuple[bool, Any]:
        """``(True, action())``, or ``(False, None)`` with the refusal as a notice (a link
        revoked meanwhile, a closed session, an incomplete answer)."""
        try:
            return True, action()
        except ConcordError as exc:
            self.notice("warning", str(exc))
            return False, None

    def store(self, save: Callable[[Any, bool], Any], updated: str) -> None:
        """Store the answer for the item on screen (``save(item, editing)`` returns whether
        it was stored), then move on; a refusal keeps the item with a notice."""
        item = self.item()
        if item is None:
            return
        editing = self.editing()
        ok, stored = self.guarded(lambda: save(item, editing))
        if not ok:
            return
        self.forget()
        if editing:
            self.notice("success", updated)
        elif not stored:
            self.notice("info", self.parts.already)

    def undo(self, study: str, rater_id: int) -> None:
        """Take back the last submission and show that item again, as it was answered."""
        ok, unit = self.guarded(lambda: self.parts.undo_last(session.db(), study, rater_id))
        if not ok:
            return
        self.forget()
        self.notice("info", self.parts.undone if unit else "Nothing to undo.")

    def skip_with_reason(self, study: str, rater_id: int) -> None:
        """Form callback: skip the item on screen with the reason typed into the form."""
        item = self.item()
        if item is None:
            return
        reason = st.session_state.get(self.SKIP_REASON, "")
        ok, _ = self.guarded(lambda: self.parts.skip(session.db(), study, rater_id,
                                                     self.parts.unit_id(item), reason))
        if not ok:
            return
        self.forget()
        if self.parts.skipped:
            self.notice("info", self.parts.skipped)

    def start_form(self, kind: str) -> None:
        """Show a reason form (its button, or S / F); its field gets the focus."""
        self.cancel_forms()
        st.session_state[self.form_key(kind)] = True

    def start_skip(self) -> None:
        """Show the skip-reason form."""
        self.start_form("skip")

    def cancel_forms(self) -> None:
        """Close an open reason form (its Cancel button, or Esc)."""
        for kind in self.parts.forms:
            st.session_state.pop(self.form_key(kind), None)

    def start_edit(self, unit_id: int) -> None:
        """Open an earlier answer for changing on this screen."""
        self.forget()
        st.session_state[self.EDIT] = unit_id

    def draft_id(self, study: str, rater_id: int, shown: str | int) -> str:
        """The name under which the browser keeps the choices made on an item (a keyed
        digest: the same after a reload, another for another rater or study)."""
        text = f"{self.parts.prefix}|{study}|{rater_id}|{shown}".encode()
        return hashlib.blake2b(text, digest_size=12).hexdigest()

    def keys(self, bindings: dict[str, tuple[str, int, bool]], *,
             clicks: list[dict[str, str]] | None = None,
             opens: tuple[str, ...] = ("s",)) -> widgets.Keys:
        """The key listener's data for this screen (:func:`screen_keys`)."""
        item = self.item()
        shown = None if item is None else (self.parts.shown_id or self.parts.unit_id)(item)
        return screen_keys(self.parts.prefix, bindings, form=self.open_form(), item=shown,
                           clicks=clicks, opens=opens)


def screen_keys(prefix: str, bindings: dict[str, tuple[str, int, bool]], *,
                form: str | None, item: str | int | None,
                clicks: list[dict[str, str]] | None = None,
                opens: tuple[str, ...] = ("s",)) -> widgets.Keys:
    """The key listener's data for a rater screen: ``bindings``, and while the ``form``
    reason form (skip, flag) is open, Esc cancels it, its field has the focus and Enter
    submits it (the widget keys :func:`concord.ui.screen_view.reason_form` gives)."""
    if form is None:
        return widgets.Keys(bindings, clicks=clicks or [], item=item, opens=opens)
    name = f"{prefix}_{form}"
    field = f"{prefix}_skip_reason" if form == "skip" else f"{name}_note"
    return widgets.Keys(bindings, escape=widgets.widget_css(f"{name}_cancel"),
                        focus=widgets.widget_css(field, "input"), clicks=clicks or [],
                        item=item, opens=opens, submit=widgets.widget_css(f"{name}_ok"))
