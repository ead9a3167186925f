"""Who may open which of the app's pages (app.py lists them and calls ``st.navigation``):
every page is known on every run, so a typed URL, a bookmark or a reload never ends on
"Page not found"; a page that is not for the visitor shows the sign-in form, sends them to
their own first page, or says why not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import streamlit as st
from sqlite_utils import Database

from concord.devices import Devices
from concord.services import auth, studies
from concord.ui import runtime, screen_check, session, signin


@dataclass(frozen=True, slots=True)
class Spec:
    """One page: its script, menu title and icon."""

    path: str
    title: str
    icon: str


@dataclass(frozen=True, slots=True)
class Pages:
    """Every page of the app, by the part it plays (app.py lists them)."""

    sign_in: Spec
    start: Spec  # instructions, consent and practice before a rater's first item
    rate: Spec
    rank: Spec
    pair: Spec
    my_work: Spec
    research: tuple[Spec, ...]

    def all(self) -> tuple[Spec, ...]:
        return (self.sign_in, *self.research, self.start, self.rate, self.rank, self.pair,
                self.my_work)


def allowed(db: Database, user: auth.User | None, table: Pages) -> list[Spec]:
    """The pages ``user`` works with, in menu order (the first is their home page)."""
    if user is None:
        return [table.sign_in]
    if user.is_researcher:
        return list(table.research)
    if signin.onboarding_stage(db, user) != "work":
        # Instructions, consent and the practice block come before any real item.
        return [table.start]
    rated = [studies.get(db, s) for s in user.studies]
    protocols = {s.protocol for s in rated}
    pages = [table.rate] if protocols & {"score", "both"} else []
    pages += [table.rank] if protocols & {"rank", "both"} else []
    pages += [table.pair] if any(s.has_pairs for s in rated) else []
    return [*pages, table.my_work]


@dataclass(frozen=True, slots=True)
class Menu:
    """What ``st.navigation`` gets (``sections``, ``position``), the visitor's own pages
    (``mine``) and each page's object."""

    sections: dict[str, list[st.Page]]
    position: Literal["sidebar", "hidden"]
    mine: list[Spec]
    pages: dict[Spec, st.Page]
    table: Pages


def menu(db: Database, user: auth.User | None, table: Pages) -> Menu:
    """Every page, those not for ``user`` hidden from the menu: every page is known on
    every run, so the one a URL names is found and :func:`open_page` decides."""
    mine = allowed(db, user, table)
    pages = {spec: st.Page(spec.path, title=spec.title, icon=spec.icon,
                           default=spec == mine[0],
                           visibility="visible" if spec in mine else "hidden")
             for spec in table.all()}
    header = "Research" if user is not None and user.is_researcher else ""
    ordered = [*(pages[s] for s in mine), *(pages[s] for s in table.all() if s not in mine)]
    return Menu({header: ordered}, "hidden" if len(mine) == 1 else "sidebar", mine, pages,
                table)


def open_page(db: Database, user: auth.User | None, menu: Menu, page: st.Page) -> None:
    """Run ``page`` (the one ``st.navigation`` chose), or what stands in for it: the
    sign-in form (the page opens once the researcher signs in), a rater's own first page,
    or why not."""
    spec = next((s for s, p in menu.pages.items() if p is page), menu.mine[0])
    study = session.current_study(user.studies) if user and not user.is_researcher else None
    if study is not None:  # a screen the study cannot use is told so before anything else
        screen_check.require(Devices.of(studies.get(db, study).settings))
    if spec in menu.mine:
        try:
            page.run()
        finally:  # also when the page stops or reruns: its modules are imported by now
            runtime.freeze_long_lived()
    elif user is None:
        signin.form(db)
    elif spec in menu.table.research:
        st.error(f"This page is for researchers; you are signed in as {user.name!r}. Your "
                 "own pages are in the menu.")
    else:
        st.switch_page(menu.pages[menu.mine[0]])
