"""Checking the fields of ratings rows: a whole column at once (fast, answers only "all
valid?") or one value (slow, says what is wrong). Used by :mod:`ratings_csv`."""

from __future__ import annotations

import math
import re

MAX_NAME = 1_000
MAX_SAMPLE = 2**31 - 1
BAD_NAME = re.compile("[\x00\r\n\udc80-\udcff]")


def name_problem(text: str, *, required: bool) -> str | None:
    """What is wrong with one name (prompt id, model, rater, criterion, dimension)."""
    if not text:
        return "empty value" if required else None
    if BAD_NAME.search(text):
        return f"contains a NUL, newline or carriage return: {text[:40]!r}"
    if len(text) > MAX_NAME:
        return f"longer than {MAX_NAME} characters"
    return None


def number_problem(text: str, minimum: float | None = None) -> str | None:
    """What is wrong with one number (``value``, ``seconds``), or None."""
    if not text:
        return "empty value"
    try:
        value = float(text) if "_" not in text else None
    except ValueError:
        value = None
    if value is None:
        return f"not a number: {text[:40]!r}"
    if not math.isfinite(value):
        return f"not a finite number: {text!r}"
    if minimum is not None and value < minimum:
        return f"must be ≥ {minimum:g}, got {text!r}"
    return None


def sample_problem(text: str) -> str | None:
    """What is wrong with one ``sample`` (empty means 0), or None."""
    if not text:
        return None
    try:
        value = int(text) if "_" not in text else -1
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SAMPLE:
        return f"not a sample index (a whole number from 0 to {MAX_SAMPLE}): {text[:40]!r}"
    return None


def names(col: tuple[str, ...], *, required: bool = True) -> list[str] | None:
    """Stripped, un-neutralised names, or None if any is empty or bad (slow path names it)."""
    joined = "".join(col)
    # str.isprintable() is one fast scan; NUL, CR, LF, tabs, odd spaces and undecodable
    # bytes are all unprintable, so only a column that fails it needs the full checks.
    plain = joined.isprintable()
    out = list(map(str.strip, col)) if not plain or " " in joined else list(col)
    if (not plain and BAD_NAME.search("".join(out))) or (required and "" in out) \
            or max(map(len, out)) > MAX_NAME:
        return None
    if "'" in joined:
        from concord.export import unneutralise  # loads pandas; rarely needed

        out = [unneutralise(t) for t in out]
    return out


def dimensions(col: tuple[str, ...]) -> list[str | None] | None:
    """A dimension column (empty cells: None), or None if a cell is bad."""
    out = names(col, required=False)
    return None if out is None else [t or None for t in out]


def floats(col: tuple[str, ...], minimum: float | None = None) -> list[float] | None:
    """A column of finite numbers (≥ ``minimum``), or None if a cell is not one."""
    if "_" in "".join(col):
        return None  # float() reads "1_0" as 10
    try:
        values = list(map(float, col))
    except ValueError:
        return None
    # inf or nan anywhere makes the sum non-finite (a finite sum that overflows only sends
    # the chunk to the row-by-row checks, which find nothing wrong)
    if not math.isfinite(sum(values)):
        return None
    if minimum is not None and values and min(values) < minimum:
        return None
    return values


def samples(col: tuple[str, ...]) -> list[int] | None:
    """A ``sample`` column (empty cells: 0), or None if a cell is not a sample index."""
    if "_" in "".join(col):
        return None
    try:
        values = list(map(int, col))  # int() allows surrounding spaces
    except ValueError:
        try:  # an empty cell means sample 0
            values = [int(t) if t.strip() else 0 for t in col]
        except ValueError:
            return None
    if values and not (min(values) >= 0 and max(values) <= MAX_SAMPLE):
        return None
    return values


def seconds(col: tuple[str, ...]) -> list[float | None] | None:
    """A ``seconds`` column (empty cells: None), or None if a cell is bad."""
    if not any(map(str.strip, col)):
        return [None] * len(col)
    if "" in map(str.strip, col):
        parsed = [floats((t,), minimum=0) if t.strip() else [None] for t in col]
        return None if None in parsed else [p[0] for p in parsed]  # type: ignore[index]
    return floats(col, minimum=0)
