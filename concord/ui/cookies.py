"""Cookies set from the page: the crowd participant's seat (concord.ui.crowd_join) and the
researcher's session (concord.ui.signin).

Streamlit lets a page read cookies (``st.context.cookies``, sent with the page's
connection) but not set them, and offers no HttpOnly cookie outside its own OIDC login
(or an ``st.App`` entry script with routes of its own), so a cookie is set by a small
script in the page: readable by scripts on the page, never in a URL or a log. What a
cookie holds is a random token the server checks on every run and can revoke.
"""

from __future__ import annotations

import streamlit as st

# Framed (an MTurk HIT shows the study in an iframe) and on https, a cookie must be
# SameSite=None; Secure; Partitioned to be kept at all (per top-level site); unframed it is
# SameSite=Lax, or Strict when asked (the researcher's: never sent from another site).
# An empty value with max_age 0 deletes the cookie.
_JS = """
export default function(component) {
  const {data} = component;
  if (!data || !data.name) return;
  const secure = window.location.protocol === 'https:';
  let framed = false;
  try { framed = window.top !== window.self; } catch (e) { framed = true; }
  const site = framed && secure && !data.strict ? '; SameSite=None; Secure; Partitioned'
      : '; SameSite=' + (data.strict ? 'Strict' : 'Lax') + (secure ? '; Secure' : '');
  document.cookie = data.name + '=' + encodeURIComponent(data.value || '') + '; Path=/; Max-Age='
                    + data.max_age + site;
}
"""
_component = None


def keep(name: str, value: str, max_age: int, *, key: str, strict: bool = False) -> None:
    """Set (or keep set) cookie ``name`` for ``max_age`` seconds; call on every run while
    it should be set (``key``: the script's widget key)."""
    global _component
    if _component is None:
        _component = st.components.v2.component("concord_cookie", js=_JS)
    _component(data={"name": name, "value": value, "max_age": int(max_age),
                     "strict": strict}, key=key)


def clear(name: str, *, key: str) -> None:
    """Delete cookie ``name`` in this browser."""
    keep(name, "", 0, key=key, strict=True)


def read(name: str) -> str | None:
    """The value of cookie ``name`` this browser sent when the page connected."""
    value = st.context.cookies.to_dict().get(name)
    return value if isinstance(value, str) and value else None
