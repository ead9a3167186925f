"""The check of a study's ``devices`` (concord.devices) before anything else of it: the
browser reports its window and pointer, and a screen the study cannot use gets one clear
message before the consent, instead of half a study."""

from __future__ import annotations

import streamlit as st

from concord import devices

# The window in CSS pixels; a desktop has a fine pointer (a mouse or trackpad) and no
# mobile user agent (a tablet with a keyboard case still says "Mobile" or "iPad").
_JS = """
export default function(component) {
  const {setStateValue} = component;
  const fine = !!(window.matchMedia && window.matchMedia('(any-pointer: fine)').matches);
  const mobile = /Mobi|Android|iPhone|iPad|iPod/i.test(navigator.userAgent || '');
  setStateValue('screen', {width: window.innerWidth, height: window.innerHeight,
                           desktop: fine && !mobile});
}
"""
_component = None
_SEEN = "concord_screen_seen"  # the browser's report, once it came (one per session)


def _reported() -> object:
    """The browser's report: asked once per browser session (a reload asks again)."""
    seen = st.session_state.get(_SEEN)
    if seen is not None:
        return seen
    global _component
    if _component is None:
        _component = st.components.v2.component("concord_screen", js=_JS)
    result = _component(key="concord_screen", on_screen_change=lambda: None)
    seen = getattr(result, "screen", None)
    if seen is not None:
        st.session_state[_SEEN] = seen
    return seen


def require(needed: devices.Devices) -> None:
    """Stop the page unless this browser's screen is one the study can use (nothing is
    checked, and nothing drawn, for a study without ``devices``)."""
    if not needed.any:
        return
    report = _reported()
    if report is None:  # the first run: the browser has not said yet
        st.caption("Checking your screen…")
        st.stop()
    problem = devices.refusal(needed, devices.screen(report))
    if problem is not None:
        st.title("This study needs another screen")
        st.error(f"{problem[:1].upper()}{problem[1:]}.")
        st.caption("Nothing is lost: come back with the same link on a screen that fits.")
        st.stop()
