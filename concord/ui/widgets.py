"""Widgets the rater pages share: blind images, literal text, a keyboard listener, layout."""

from __future__ import annotations

import dataclasses
import html
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from concord.rubrics import Rubric
from concord.services.media import ServedImage, display_size, served_image
from concord.ui import session

logger = logging.getLogger(__name__)

# Streamlit downsizes images wider than this when the width is not a number.
_STREAMLIT_MAX_WIDTH = 1460
_KEYS_JS = (Path(__file__).with_name("keys.js")).read_text(encoding="utf-8")
_keys_component = None

# Layout of the rater screens. The head (progress, notices, prompt) sticks to the top so a
# key press or a scroll never hides it; the image sticks beside the form and is scaled
# down to fit the window, never up (a 256 px image stays 256 px). --concord-head is the
# head's height, kept up to date by keys.js. On a phone (640 px wide or less) nothing
# sticks, the image comes before the choices, the two images of a pair stay side by side
# (left and right mean what they say) and a ranking set shows two images a row; on touch
# screens buttons and choices are at least 44 px high.
_RATER_CSS = """<style>
[data-testid="stMainBlockContainer"]{padding-top:3.5rem}
[data-testid="stLayoutWrapper"]:has(> .st-key-concord_head){position:sticky;top:0;
  z-index:10;background:var(--background-color,#fff);padding-top:3.5rem;margin-top:-3.5rem}
.st-key-concord_head .concord-prompt{max-height:9.5em;overflow-y:auto}
[data-testid="stColumn"]:has(.st-key-concord_image) > div{height:100%}
[data-testid="stLayoutWrapper"]:has(> .st-key-concord_image){position:sticky;
  top:calc(1rem + var(--concord-head,6rem))}
.st-key-concord_image img{width:auto!important;max-width:100%;
  max-height:calc(100vh - 2rem - var(--concord-head,6rem));object-fit:contain}
[class*='st-key-concord_zoom']{overflow:auto;max-height:78vh}
[class*='st-key-concord_zoom'] img{max-width:none!important;max-height:none!important;
  width:auto!important}
[class*='st-key-pair_side_'] img{cursor:pointer;width:auto!important;max-width:100%;
  max-height:calc(100vh - 8rem - var(--concord-head,6rem));object-fit:contain}
[class*='st-key-pair_side_'] [data-testid="stElementToolbar"]{display:none}
.concord-prompt{font-size:1.35rem;font-weight:600;line-height:1.35;white-space:pre-wrap;
  overflow-wrap:anywhere}
.concord-literal{white-space:pre-wrap;overflow-wrap:anywhere}
[class*='st-key-rank_slot_'] img{cursor:pointer}
.st-key-concord_preload{position:fixed;right:0;bottom:0;width:2px;height:2px;
  overflow:hidden;opacity:0.01;pointer-events:none;z-index:-1}
@media (max-width:640px){
  [data-testid="stLayoutWrapper"]:has(> .st-key-concord_head){position:static}
  .st-key-concord_head .concord-prompt{font-size:1.1rem;max-height:5.5em}
  [data-testid="stHorizontalBlock"]:has(.st-key-concord_image){flex-direction:column-reverse}
  [data-testid="stLayoutWrapper"]:has(> .st-key-concord_image){position:static}
  .st-key-concord_image img{max-height:60vh}
  [class*='st-key-pair_side_'] img{max-height:50vh}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] .st-key-pair_side_left){
    flex-wrap:nowrap}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] .st-key-pair_side_left)
    > [data-testid="stColumn"]{min-width:0!important;width:50%!important;flex:1 1 0!important}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [class*='st-key-rank_slot_'])
    {flex-wrap:wrap}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [class*='st-key-rank_slot_'])
    > [data-testid="stColumn"]{min-width:calc(50% - 0.5rem)!important;
    width:calc(50% - 0.5rem)!important;flex:1 1 calc(50% - 0.5rem)!important}
}
@media (max-width:640px),(pointer:coarse){
  [data-testid="stMain"] button{min-height:44px}
  [data-testid="stMain"] [role="radiogroup"] label,
  [data-testid="stMain"] [data-testid="stCheckbox"] label{min-height:44px;align-items:center}
}
</style>"""


@dataclass(frozen=True, slots=True)
class Keys:
    """What the key listener does on one screen (see keys.js for the meaning of each).

    ``bindings`` map a key to a click ``(css, nth, rerun)``; ``moves`` map a key to a step
    of the focus along ``ring`` (J / K on My ratings), ``cycles`` a key to radio groups
    (or sliders) the focus goes through (O: a checklist criterion's value, to override it;
    V: the next slider), ``focuses`` a key to a text field it puts the cursor in (C: the
    comment)."""

    bindings: dict[str, tuple[str, int, bool]]
    escape: str | None = None
    focus: str | None = None
    clicks: list[dict[str, str]] = field(default_factory=list)
    item: str | int | None = None
    opens: tuple[str, ...] = ()  # keys that open a reason field (skip, flag)
    submit: str | None = None  # the open reason form's submit button, which Enter clicks
    enter_in: str | None = None  # text fields in which Enter does what Enter does
    moves: dict[str, int] = field(default_factory=dict)
    ring: str | None = None
    cycles: dict[str, list[str]] = field(default_factory=dict)
    draft: dict | None = None  # {"id": ..., "fields": [css, ...]}: choices kept per item
    focuses: dict[str, str] = field(default_factory=dict)  # key -> css of a field it focuses
    sliders: list[str] = field(default_factory=list)  # css of the sliders arrow keys move
    comment: str | None = None  # css of the comment field (Esc leaves it, Ctrl+Enter submits)


def rater_style() -> None:
    """The rater screens' layout rules (call once per page run, outside fragments)."""
    st.html(_RATER_CSS)


def keyboard(keys: Keys, *, key: str) -> None:
    """Bind single keys to clicks on widgets, anywhere on the page.

    ``keys.bindings`` maps a key (lower-case letter or digit, or ``"Enter"``) to a CSS
    selector, the index of the match to click, and whether that click makes the app rerun
    (the next queued key then waits for the run to end). A key press is a click on that
    widget, so keys and mouse go through the same Streamlit widget events (a fast typist's
    keys queue up like fast clicks instead of being lost between reruns). Keys typed into
    text fields are ignored, except Esc, which clicks ``keys.escape``. Widgets are found by
    the ``st-key-<key>`` class Streamlit gives a keyed widget's container.
    """
    global _keys_component
    if _keys_component is None:
        _keys_component = st.components.v2.component("concord_keys", js=_KEYS_JS)
    data: dict[str, dict] = {k: {"css": css, "nth": nth, "rerun": rerun}
                             for k, (css, nth, rerun) in keys.bindings.items()}
    data.update({k: {"move": step} for k, step in keys.moves.items()})
    data.update({k: {"cycle": groups} for k, groups in keys.cycles.items()})
    data.update({k: {"focusOn": css} for k, css in keys.focuses.items()})
    _keys_component(data={"bindings": data, "escape": keys.escape, "focus": keys.focus,
                          "clicks": keys.clicks, "item": keys.item,
                          "opens": list(keys.opens), "submit": keys.submit,
                          "enterIn": keys.enter_in, "ring": keys.ring, "draft": keys.draft,
                          "sliders": keys.sliders, "comment": keys.comment},
                    key=key)


def widget_css(key_prefix: str, inner: str = "button") -> str:
    """CSS selector of the ``inner`` element of keyed widgets whose key starts with a prefix."""
    return f"[class*='st-key-{key_prefix}'] {inner}"


def level_keys(rubric: Rubric, key_of: Callable[[str], str]) -> dict[str, tuple[str, int, bool]]:
    """Each level key of each criterion (not a checklist one: its conditions have the keys)
    chooses that level in the radio whose widget key is ``key_of(criterion)`` (in a form:
    no rerun)."""
    bindings: dict[str, tuple[str, int, bool]] = {}
    for criterion in rubric.criteria:
        if rubric.checklist(criterion.key) is not None:
            continue
        radio = widget_css(key_of(criterion.key), "[role='radiogroup'] label")
        for i, level in enumerate(criterion.levels):
            if level.key:
                bindings[level.key.lower()] = (radio, i, False)
    return bindings


def slider_css(rubric: Rubric, key_of: Callable[[str], str]) -> list[str]:
    """The slider inputs of the rubric's continuous criteria (widget keys ``key_of``)."""
    return [widget_css(key_of(c.key), "input[type='range']") for c in rubric.criteria
            if c.continuous is not None]


def with_fields(keys: Keys, *, sliders: list[str], comment: str | None) -> Keys:
    """``keys`` plus the arrow keys for the sliders, V (the next slider) and C (the cursor
    in the comment field), each unless the screen's own keys (a rubric's) took it."""
    cycles = dict(keys.cycles)
    if sliders and "v" not in keys.bindings:
        cycles["v"] = sliders
    focuses = dict(keys.focuses)
    if comment is not None and "c" not in keys.bindings:
        focuses["c"] = comment
    return dataclasses.replace(keys, cycles=cycles, focuses=focuses, sliders=sliders,
                               comment=comment)


def button_keys(buttons: dict[str, str]) -> dict[str, tuple[str, int, bool]]:
    """Key bindings that click keyed buttons: ``{"Enter": "rate_submit", ...}``."""
    return {k: (widget_css(button), 0, True) for k, button in buttons.items()}


def _size() -> int | None:
    """The display size of the study on screen (its ``display``), None: as generated."""
    user = session.user()
    study = session.current_study(user.studies) if user is not None else None
    return display_size(session.db(), study) if study else None


def _served(path: Path, thumbnail: int | None = None) -> ServedImage | None:
    size = _size()
    try:
        return served_image(path, session.settings().media_cache,
                            size=thumbnail if size and thumbnail else size)
    except OSError:
        # The message of the error would show the path, and the path names the model.
        logger.exception("image file could not be read")
        st.error("This image could not be loaded. Please skip it (S) and tell the researcher.")
        return None


def show_image(path: Path, *, alt: str = "image to rate", width: int | None = None) -> None:
    """Show an image blind (no metadata), never upscaled by the browser.

    The browser gets the bytes of :func:`concord.services.media.served_image` (the study's
    display size when it has one) and scales them down to fit the column (CSS keeps it
    from scaling up); ``width`` asks for a smaller display (thumbnails: in a study with a
    display size they are normalised on the server too, so they match in size and type).
    """
    img = _served(path, thumbnail=width)
    if img is None:
        return
    # A numeric width at least the image's own keeps Streamlit from resampling it.
    shown: int | str = (min(width, img.width) if width else
                        "content" if img.width <= _STREAMLIT_MAX_WIDTH else img.width)
    st.image(img.data, output_format=img.format, width=shown, alt=alt)


def zoom_image(path: Path, *, alt: str = "image, actual size", key: str = "concord_zoom") -> None:
    """The image at 1:1 (one image pixel per CSS pixel) in a box that scrolls to pan.

    ``key`` (starting with ``concord_zoom``) tells several zoomed images apart.
    """
    img = _served(path)
    if img is None:
        return
    st.caption(f"Actual size ({img.width} px wide): scroll or drag the bars to pan.")
    with st.container(key=key):
        st.image(img.data, output_format=img.format, width=img.width, alt=alt)


def preload(path: Path | list[Path] | None) -> None:
    """Send the image(s) shown next ahead of time, in a 2 px transparent box (the browser
    caches and decodes them).

    Streamlit names media by content, so when that image comes up its URL is the same and
    the browser shows it from memory instead of downloading and decoding it then. The box
    is inside the viewport on purpose: Chromium does not decode an image placed far off
    screen, which cost 17 ms more per submit (docs/benchmarks.md, Raters).
    """
    paths = path if isinstance(path, list) else [] if path is None else [path]
    size = _size()
    with st.container(key="concord_preload"):
        for one in paths:
            if not one.is_file():
                continue
            try:
                img = served_image(one, session.settings().media_cache, size=size)
            except OSError:
                continue  # the real showing reports it
            st.image(img.data, output_format=img.format, width="content", alt="")


def literal(text: str, *, css: str = "concord-literal") -> None:
    """Show text exactly as written: no Markdown, no HTML, line breaks kept.

    A prompt such as ``*SALE*`` or ``[click](x)`` must reach the rater as typed.
    """
    st.html(f'<div class="{css}">{html.escape(text)}</div>')


def progress_and_notice(done: int, skipped: int, assigned: int, noun: str,
                        notice_key: str) -> None:
    """The progress bar of a rating page and a pending one-time message under it."""
    st.progress(done / max(assigned, 1),
                text=f"{done} / {assigned} {noun} · {skipped} skipped")
    notice = st.session_state.pop(notice_key, None)
    if notice:
        getattr(st, notice[0])(notice[1])
