"""The input of a continuous criterion on the rater screens: a slider that starts unset.

A slider always points at some value, so one that started at the low end (or the middle)
would let a rater submit a value they never chose. The slider here starts on an extra
first stop, "not set", and a submit with it there is refused like a missing level. The
browser's own slider keys move it (←/→ one step, PgUp/PgDn a tenth of the scale,
Home/End the ends); the key listener sends those keys to the first slider when nothing
else has the focus, and V goes from slider to slider (widgets.slider_keys).

A scale of more than :data:`MAX_STOPS` points (or of any real number: no step) gets a
number field instead: a slider of a million stops cannot be set to one of them.
"""

from __future__ import annotations

import decimal

import streamlit as st

from concord.rubrics import Criterion
from concord.rubrics.model import Continuous

MAX_STOPS = 2001
KEY_HINT = "←/→ one step · PgUp/PgDn a tenth · Home/End the ends · V next slider"


def _decimals(number: float) -> int:
    exponent = decimal.Decimal(repr(number)).normalize().as_tuple().exponent
    return max(0, -int(exponent)) if isinstance(exponent, int) else 0


def stops(scale: Continuous) -> list[float] | None:
    """The points of the scale's grid, low to high (rounded to the digits of its low end
    and step, so 0.1 * 3 is 0.3); None when there is no step or too many points."""
    if scale.step is None:
        return None
    count = round((scale.high - scale.low) / scale.step) + 1
    if count > MAX_STOPS:
        return None
    digits = min(12, max(_decimals(scale.low), _decimals(scale.step)))
    return [round(scale.low + i * scale.step, digits) for i in range(count)]


def on_grid(points: list[float], value: float, step: float) -> float | None:
    """The stop ``value`` stands for (a stored 0.30000000000000004 is the stop 0.3), or
    None when it is none of them (then the number field shows it as it is)."""
    index = round((value - points[0]) / step)
    if 0 <= index < len(points) and abs(points[index] - value) <= 1e-9 * max(1.0, abs(value)):
        return points[index]
    return None


def _shown(value: float | None) -> str:
    return "not set" if value is None else f"{value:g}"


def uses_slider(criterion: Criterion, key: str) -> bool:
    """Whether the criterion's input (widget ``key``) is a slider (else a number field)."""
    scale = criterion.continuous
    points = stops(scale) if scale is not None else None
    if scale is None or points is None or scale.step is None:
        return False
    value = st.session_state.get(key)
    return value is None or on_grid(points, float(value), scale.step) is not None


def continuous(criterion: Criterion, key: str, label: str) -> None:
    """The slider (or number field) of one continuous criterion, under session-state
    ``key`` (None: not set). Anchors (``min_label``/``max_label``) are shown below it."""
    scale = criterion.continuous
    if scale is None:
        raise ValueError(f"criterion {criterion.key!r} is not continuous")
    st.session_state.setdefault(key, None)  # a widget without a value starts at the low end
    points = stops(scale)
    if uses_slider(criterion, key) and points is not None and scale.step is not None:
        value = st.session_state.get(key)
        if value is not None:
            st.session_state[key] = on_grid(points, float(value), scale.step)
        st.select_slider(label, [None, *points], key=key, format_func=_shown,
                         help=f"{criterion.definition}\n\nKeys: {KEY_HINT}")
    else:
        st.number_input(label, min_value=scale.low, max_value=scale.high,
                        step=scale.step, key=key, format="%g",
                        placeholder=f"a number from {scale.low:g} to {scale.high:g}",
                        help=criterion.definition)
    ends = [f"{scale.low:g} = {scale.low_label}" if scale.low_label else "",
            f"{scale.high:g} = {scale.high_label}" if scale.high_label else ""]
    if any(ends):
        st.caption(" · ".join(e for e in ends if e))
