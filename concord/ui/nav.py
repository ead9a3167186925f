"""The app's pages and who may open which: every page is known on every run, so a typed
URL, a bookmark or a reload never ends on "Page not found"; a page that is not for the
visitor shows the sign-in form, sends them to their own first page, or says why not."""

from __future__ import annotations

from dataclasses import dataclass

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


SIGN_IN = Spec("pages/sign_in.py", "Sign in", ":material/key:")
START = Spec("pages/start.py", "Before you start", ":material/flag:")
RATE = Spec("pages/rate.py", "Rate images", ":material/star:")
RANK = Spec("pages/rank.py", "Rank images", ":material/leaderboard:")
PAIR = Spec("pages/pair.py", "Compare pairs", ":material/compare:")
MY_WORK = Spec("pages/my_work.py", "My ratings", ":material/history:")
RESEARCH = (Spec("pages/dashboard.py", "Agreement dashboard", ":material/analytics:"),
            Spec("pages/studies.py", "Studies", ":material/folder:"),
            Spec("pages/raters.py", "Raters", ":material/group:"),
            Spec("pages/progress.py", "Progress", ":material/monitoring:"),
            Spec("pages/adjudicate.py", "Adjudicate", ":material/gavel:"),
            Spec("pages/metrics.py", "Metrics", ":material/speed:"),
            Spec("pages/export.py", "Export", ":material/download:"))
RATER = (START, RATE, RANK, PAIR, MY_WORK)
ALL = (SIGN_IN, *RESEARCH, *RATER)


def allowed(db: Database, user: auth.User | None) -> list[Spec]:
    """The pages ``user`` works with, in menu order (the first is their home page)."""
    if user is None:
        return [SIGN_IN]
    if user.is_researcher:
        return list(RESEARCH)
    if signin.onboarding_stage(db, user) != "work":
        # Instructions, consent and the practice block come before any real item.
        return [START]
    rated = [studies.get(db, s) for s in user.studies]
    protocols = {s.protocol for s in rated}
    pages = [RATE] if protocols & {"score", "both"} else []
    pages += [RANK] if protocols & {"rank", "both"} else []
    pages += [PAIR] if any(s.has_pairs for s in rated) else []
    return [*pages, MY_WORK]


@dataclass(frozen=True, slots=True)
class Chosen:
    """The page the URL names (``page``), the visitor's own pages and each page's object."""

    page: st.Page
    mine: list[Spec]
    pages: dict[Spec, st.Page]


def select(db: Database, user: auth.User | None) -> Chosen:
    """Register every page (those not for ``user`` hidden from the menu); the one the URL
    names is returned, to be opened by :func:`open_page` (after the sidebar is drawn)."""
    mine = allowed(db, user)
    pages = {spec: st.Page(spec.path, title=spec.title, icon=spec.icon,
                           default=spec == mine[0],
                           visibility="visible" if spec in mine else "hidden")
             for spec in ALL}
    header = "Research" if user is not None and user.is_researcher else ""
    menu = {header: [*(pages[s] for s in mine), *(pages[s] for s in ALL if s not in mine)]}
    page = st.navigation(menu, position="hidden" if len(mine) == 1 else "sidebar")
    return Chosen(page, mine, pages)


def open_page(db: Database, user: auth.User | None, chosen: Chosen) -> None:
    """Run the chosen page, or what stands in for it: the sign-in form (the page opens
    once the researcher signs in), a rater's own first page, or why not."""
    spec = next((s for s, p in chosen.pages.items() if p is chosen.page), chosen.mine[0])
    study = session.current_study(user.studies) if user and not user.is_researcher else None
    if study is not None:  # a screen the study cannot use is told so before anything else
        screen_check.require(Devices.of(studies.get(db, study).settings))
    if spec in chosen.mine:
        try:
            chosen.page.run()
        finally:  # also when the page stops or reruns: its modules are imported by now
            runtime.freeze_long_lived()
    elif user is None:
        signin.form(db)
    elif spec in RESEARCH:
        st.error(f"This page is for researchers; you are signed in as {user.name!r}. Your "
                 "own pages are in the menu.")
    else:
        st.switch_page(chosen.pages[chosen.mine[0]])
