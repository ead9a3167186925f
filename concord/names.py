"""Names that people type and read back: studies and raters.

A name is one line of visible text: a newline would split the CLI's one-line-per-rater
output and the CSV export's rows in a spreadsheet, and a NUL ends C strings early.
"""

from __future__ import annotations

import unicodedata

from concord.errors import ConcordError

MAX_NAME_LENGTH = 200
# Control characters (NUL, newline, tab, ESC...), surrogates, line and paragraph separators.
_FORBIDDEN = {"Cc", "Cs", "Zl", "Zp"}


def name_problem(name: object, what: str) -> str | None:
    """Why ``name`` cannot name a ``what`` (``"study"``, ``"rater"``), or None when it can."""
    if name is None or (isinstance(name, str) and not name.strip()):
        return f"empty {what} name"
    if not isinstance(name, str):
        return f"a {what} name must be text, got {type(name).__name__} {str(name)[:40]!r}"
    if len(name) > MAX_NAME_LENGTH:
        return f"{what} name longer than {MAX_NAME_LENGTH} characters ({len(name):,})"
    bad = next((c for c in name if unicodedata.category(c) in _FORBIDDEN), None)
    if bad is not None:
        return (f"{what} name {name[:40]!r} contains the control character U+{ord(bad):04X}; "
                "use one line of visible text")
    return None


def check_name(name: object, what: str) -> str:
    """``name`` without surrounding spaces; ConcordError when it cannot name a ``what``."""
    problem = name_problem(name, what)
    if problem is not None:
        raise ConcordError(problem)
    return str(name).strip()
