"""Widgets the rating pages share: lossless images and a keyboard listener."""

from __future__ import annotations

import logging
from pathlib import Path

import streamlit as st
from PIL import Image

logger = logging.getLogger(__name__)

# Streamlit downsizes images wider than this when the width is not a number.
_STREAMLIT_MAX_WIDTH = 1460

_KEYS_JS = """
// One page-wide key listener. Each key becomes a click on a widget; clicks are sent one
// at a time, each after the app has finished the rerun the previous one caused, so fast
// typing neither loses keys nor reorders them (Streamlit merges clicks that arrive
// during a run).
const BUSY = new Set(['running', 'rerunRequested', 'stopRequested']);
const appState = () => {
  const app = document.querySelector('[data-testid="stApp"]');
  return app ? app.getAttribute('data-test-script-state') : null;
};
const typing = (t) => t && (t.isContentEditable || t.tagName === 'TEXTAREA' ||
    t.tagName === 'SELECT' || (t.tagName === 'INPUT' && !['radio', 'checkbox'].includes(t.type)));

function pump(kb) {
  if (kb.busy || kb.queue.length === 0) return;
  if (BUSY.has(appState())) {
    // A run is still updating the page (e.g. resetting the choices for the next
    // image): a click now could be overwritten by it, so wait for it to end.
    setTimeout(() => pump(kb), 5);
    return;
  }
  const b = kb.queue.shift();
  const el = document.querySelectorAll(b.css)[b.nth || 0];
  if (!el) { pump(kb); return; }
  kb.busy = true;
  el.click();
  if (!b.rerun) {  // e.g. a choice inside a form: nothing runs on the server
    // A choice made while the page is still settling can be dropped; check that the
    // radio took it and click again once if it did not.
    const input = el.querySelector('input');
    setTimeout(() => {
      if (input && !input.checked && !b.retried) {
        kb.queue.unshift({...b, retried: true});
      }
      kb.busy = false;
      pump(kb);
    }, 20);
    return;
  }
  const t0 = performance.now();
  let ran = false;
  const wait = () => {
    const busy = BUSY.has(appState());
    ran = ran || busy;
    const waited = performance.now() - t0;
    // A click that causes no run (a disabled or vanished widget) must not block the queue.
    if ((ran && !busy) || (!ran && waited > 1000) || waited > 10000) {
      kb.busy = false;
      pump(kb);
    } else {
      setTimeout(wait, 5);
    }
  };
  setTimeout(wait, 5);
}

export default function(component) {
  const kb = window.__concordKeys || (window.__concordKeys = {queue: [], busy: false,
                                                             bindings: {}});
  kb.bindings = component.data.bindings || {};
  // A marker tests (and curious users) can wait for: keys work from now on.
  document.documentElement.dataset.concordKeys = 'ready';
  if (!kb.observing) {
    // Decode the preloaded next image ahead of time, so showing it is a paint only.
    kb.observing = true;
    new MutationObserver(() => {
      document.querySelectorAll('.st-key-concord_preload img').forEach((img) => {
        if (!img.dataset.decoded) { img.dataset.decoded = '1'; img.decode().catch(() => {}); }
      });
    }).observe(document.body, {childList: true, subtree: true, attributes: true,
                               attributeFilter: ['src']});
  }
  if (!kb.listening) {
    kb.listening = true;
    window.addEventListener('keydown', (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey || e.repeat || typing(e.target)) return;
      const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
      const b = kb.bindings[k];
      if (!b) return;
      // Capture phase + stopImmediatePropagation: Streamlit's own R (rerun) and C
      // (clear cache) hotkeys must not fire when the page binds those letters.
      e.preventDefault();
      e.stopImmediatePropagation();
      kb.queue.push(b);
      pump(kb);
    }, true);
  }
  return () => {
    kb.bindings = {};
    delete document.documentElement.dataset.concordKeys;
  };
}
"""

_keys_component = None


def keyboard(bindings: dict[str, tuple[str, int, bool]], *, key: str) -> None:
    """Bind single keys to clicks on widgets, anywhere on the page.

    ``bindings`` maps a key (lower-case letter or digit, or ``"Enter"``) to a CSS
    selector, the index of the match to click, and whether that click makes the app
    rerun (the next queued key then waits for the run to end). A key press is a click on that
    widget, so keys and mouse go through the same Streamlit widget events (a fast
    typist's keys queue up like fast clicks instead of being lost between reruns).
    Keys typed into text fields are ignored. Widgets are found by the ``st-key-<key>``
    class Streamlit gives a keyed widget's container.
    """
    global _keys_component
    if _keys_component is None:
        _keys_component = st.components.v2.component("concord_keys", js=_KEYS_JS)
    data = {k: {"css": css, "nth": nth, "rerun": rerun}
            for k, (css, nth, rerun) in bindings.items()}
    _keys_component(data={"bindings": data}, key=key)


def widget_css(key_prefix: str, inner: str = "button") -> str:
    """CSS selector of the ``inner`` element of keyed widgets whose key starts with a prefix."""
    return f"[class*='st-key-{key_prefix}'] {inner}"


def image_payload(path: Path) -> tuple[bytes, str, int]:
    """Bytes, Streamlit output format and pixel width for showing ``path`` losslessly.

    PNG and JPEG files are passed through byte for byte (Streamlit keeps the bytes when
    the declared format matches the file's); anything else (WebP) becomes a lossless PNG.
    """
    data = path.read_bytes()
    with Image.open(path) as im:
        fmt, width = im.format, im.size[0]
    if fmt not in ("PNG", "JPEG"):
        fmt = "PNG"
    return data, fmt, width


def show_image(path: Path, *, alt: str = "image to rate") -> None:
    """Show an image without lossy re-encoding or server-side resizing.

    The browser scales it to the column; the bytes it receives are the original file's.
    """
    try:
        data, fmt, pixels = image_payload(path)
    except OSError:
        # The message of the error would show the path, and the path names the model.
        logger.exception("image file could not be read")
        st.error("This image could not be loaded. Please skip it (S) and tell the researcher.")
        return
    # A numeric width at least the image's own keeps Streamlit from resampling it.
    shown: int | str = "stretch" if pixels <= _STREAMLIT_MAX_WIDTH else pixels
    st.image(data, output_format=fmt, width=shown, alt=alt)


_PRELOAD_CSS = ("<style>.st-key-concord_preload{position:fixed;left:-10000px;top:0;"
                "width:64px;height:64px;overflow:hidden;pointer-events:none}</style>")


def preload(path: Path | None) -> None:
    """Send the image shown next ahead of time, off screen (the browser caches and decodes it).

    Streamlit names media by content, so when that image comes up its URL is the same and
    the browser shows it from memory instead of downloading and decoding it then.
    """
    st.html(_PRELOAD_CSS)
    with st.container(key="concord_preload"):
        if path is not None and path.is_file():
            data, fmt, _ = image_payload(path)
            st.image(data, output_format=fmt, alt="")


def button_keys(buttons: dict[str, str]) -> dict[str, tuple[str, int, bool]]:
    """Key bindings that click keyed buttons: ``{"Enter": "rate_submit", ...}``."""
    return {k: (widget_css(button), 0, True) for k, button in buttons.items()}


def progress_and_notice(done: int, skipped: int, assigned: int, noun: str,
                        notice_key: str) -> None:
    """The progress bar of a rating page and a pending one-time message under it."""
    st.progress(done / max(assigned, 1),
                text=f"{done} / {assigned} {noun} · {skipped} skipped")
    notice = st.session_state.pop(notice_key, None)
    if notice:
        getattr(st, notice[0])(notice[1])
