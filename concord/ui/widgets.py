"""Widgets the rating pages share: lossless images and a keyboard listener."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import streamlit as st
from PIL import Image

# Streamlit downsizes images wider than this when the width is not a number.
_STREAMLIT_MAX_WIDTH = 1460

_KEYS_JS = """
export default function(component) {
  const { setTriggerValue, data } = component;
  const keys = new Set(data.keys || []);
  const typing = (t) => t && (t.isContentEditable ||
      ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName));
  const onKey = (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.repeat || typing(e.target)) return;
    const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (!keys.has(k)) return;
    // Capture phase + stopImmediatePropagation: Streamlit's own R (rerun) and C
    // (clear cache) hotkeys must not fire when the page uses those letters.
    e.preventDefault();
    e.stopImmediatePropagation();
    setTriggerValue('key', k);
  };
  window.addEventListener('keydown', onKey, true);
  return () => window.removeEventListener('keydown', onKey, true);
}
"""

_keys_component = None


def keyboard(keys: Iterable[str], *, key: str) -> str | None:
    """Listen for single-key presses anywhere on the page; returns the key pressed.

    Returns the lower-cased key (or ``"Enter"``, ``"Escape"``…) on the run a key
    triggered, None otherwise. Keys typed into text fields are ignored.
    """
    global _keys_component
    if _keys_component is None:
        _keys_component = st.components.v2.component("concord_keys", js=_KEYS_JS)
    result = _keys_component(data={"keys": sorted(set(keys))}, key=key,
                             on_key_change=lambda: None)
    return getattr(result, "key", None) if result is not None else None


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
    data, fmt, pixels = image_payload(path)
    # A numeric width at least the image's own keeps Streamlit from resampling it.
    shown: int | str = "stretch" if pixels <= _STREAMLIT_MAX_WIDTH else pixels
    st.image(data, output_format=fmt, width=shown, alt=alt)
