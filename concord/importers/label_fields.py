"""Checking one field of an imported pair vote or ranking (a CSV cell or a JSON value).

Each function returns the clean value or raises :class:`FieldError` with a message that
shows the bad value; the caller adds the file, the line and the field's name. Names are
one line of visible text (no control character, line or paragraph separator, e.g. NUL,
newline or U+2028, which split a CSV row or a log line on the way out), whole numbers are
bounded, numbers finite, times ISO 8601 or Unix seconds.
"""

from __future__ import annotations

import datetime as dt
import math
import unicodedata
from typing import Any

from concord.importers.safe_load import MAX_SAMPLE, finite_number, shown, whole_number

MAX_NAME = 1_000
MAX_TEXT = 100_000  # a prompt's text
MAX_COMMENT = 10_000  # a rater's comment (concord.services.labelling.comments)
_FORBIDDEN = {"Cc", "Cs", "Zl", "Zp"}  # control, surrogate (bad bytes), line/para separator
# 0001-01-01 to 9999-12-31 as Unix seconds: what an ISO 8601 date can hold.
_MIN_UNIX, _MAX_UNIX = -62_135_596_800, 253_402_300_799


class FieldError(ValueError):
    """One field's value cannot be used; the message shows the value."""


def blank(value: Any) -> bool:
    """Whether a field is absent: missing, null or an empty/blank cell."""
    return value is None or (isinstance(value, str) and not value.strip())


def name(value: Any, *, required: bool = True, limit: int = MAX_NAME,
         multiline: bool = False) -> str | None:
    """A name (prompt id, model, rater, criterion, dimension), stripped; None when blank
    and not required. A JSON integer is taken as its digits (prompt ids often are)."""
    if blank(value):
        if required:
            raise FieldError("empty value")
        return None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**18:
        value = str(value)
    if not isinstance(value, str):
        raise FieldError(f"expected text, got {type(value).__name__} {shown(value)}")
    # Checked before stripping: str.strip() would quietly drop a trailing U+2028 or NUL.
    # A printable text holds none of them (one C-speed scan); only others are looked at.
    allowed = {"\n", "\r", "\t"} if multiline else set()
    bad = None if value.isprintable() else next(
        (c for c in value if c not in allowed and unicodedata.category(c) in _FORBIDDEN),
        None)
    text = value.strip()
    if len(text) > limit:
        raise FieldError(f"longer than {limit:,} characters ({len(text):,})")
    if bad is not None:
        what = "bytes that are not UTF-8" if 0xDC80 <= ord(bad) <= 0xDCFF else \
            f"the control character U+{ord(bad):04X}"
        raise FieldError(f"contains {what}: {shown(value)}; use one line of visible text")
    return text


def number(value: Any, *, minimum: float | None = None) -> float:
    """A finite number (a JSON number or its text; ``1_0`` is refused)."""
    if blank(value):
        raise FieldError("empty value")
    if isinstance(value, str) and "_" in value:
        raise FieldError(f"expected a number, got {shown(value)}")
    try:
        out = finite_number(value)
    except ValueError as exc:
        raise FieldError(str(exc)) from None
    if minimum is not None and out < minimum:
        raise FieldError(f"must be ≥ {minimum:g}, got {shown(value)}")
    return out


def optional_number(value: Any, *, minimum: float | None = None) -> float | None:
    """:func:`number`, or None when blank."""
    return None if blank(value) else number(value, minimum=minimum)


def sample(value: Any) -> int:
    """A sample index from 0 to 2³¹ − 1 (blank: 0)."""
    if blank(value):
        return 0
    if isinstance(value, str) and "_" in value:
        raise FieldError(f"expected a whole number, got {shown(value)}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        return whole_number(value, 0, MAX_SAMPLE)
    except ValueError as exc:
        raise FieldError(str(exc)) from None


def time(value: Any) -> str | None:
    """When the label was given, as the store writes times (UTC ISO 8601 with
    microseconds); None when blank. Accepts ISO 8601 (without a zone: UTC) or Unix
    seconds (arena logs' ``tstamp``)."""
    if blank(value):
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            seconds: float | None = float(text) if "_" not in text else None
        except ValueError:
            seconds = None
        if seconds is None:
            return _iso(text)
        value = seconds
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FieldError(f"expected a time (ISO 8601 or Unix seconds), got {shown(value)}")
    if not (math.isfinite(value) and _MIN_UNIX <= value <= _MAX_UNIX):
        raise FieldError(f"not a time in years 1 to 9999: {shown(value)}")
    stamp = dt.datetime.fromtimestamp(0, dt.UTC) + dt.timedelta(seconds=float(value))
    return stamp.isoformat(timespec="microseconds")


def _iso(text: str) -> str:
    try:
        stamp = dt.datetime.fromisoformat(text)
    except ValueError:
        raise FieldError(f"expected a time (ISO 8601 or Unix seconds), got {shown(text)}"
                         ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.UTC)
    try:
        return stamp.astimezone(dt.UTC).isoformat(timespec="microseconds")
    except OverflowError:  # 0001-01-01T00:00+01:00 has no UTC time
        raise FieldError(f"not a time in years 1 to 9999: {shown(text)}") from None
