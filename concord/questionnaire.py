"""Questions before and after a study's items (the manifest's ``questionnaire`` key):
demographics, colour vision, the device, exit feedback, "did you use AI help".

Each question has an ``id``, a ``kind`` (``single``, ``multiple``, ``likert``, ``number``,
``text``), its ``text`` and whether it is ``required``. The answers are kept apart from the
ratings (concord.services.questionnaire): no statistic reads them. Checked once when a
manifest is imported (each problem names its key); every answer a participant sends is
checked by concord.questionnaire_answers. Pure: no I/O.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import asdict, dataclass
from typing import Any

from concord.names import name_problem

PARTS = ("before", "after")
KINDS = ("single", "multiple", "likert", "number", "text")
KEYS = ("id", "kind", "text", "required", "options", "points", "low", "high", "min", "max",
        "integer", "max_length", "help")
MAX_QUESTIONS = 100
MAX_OPTIONS = 50
MAX_TEXT = 2_000  # a question, a help text, a free-text answer's longest limit
MAX_OPTION = 200
MAX_POINTS = 11
DEFAULT_TEXT_LENGTH = 2_000
MAX_NUMBER = 1e15
# Line and paragraph separators, NUL and other control characters but newline and tab.
BAD_IN_TEXT = {"Cc", "Cs", "Zl", "Zp"}


@dataclass(frozen=True, slots=True)
class Question:
    """One question; ``options`` for single and multiple choice, ``points`` (and the end
    labels ``low``, ``high``) for a Likert item, ``minimum``/``maximum``/``integer`` for a
    number, ``max_length`` for free text."""

    id: str
    kind: str
    text: str
    required: bool = False
    options: tuple[str, ...] = ()
    points: int = 5
    low: str = ""
    high: str = ""
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False
    max_length: int = DEFAULT_TEXT_LENGTH
    help: str = ""


@dataclass(frozen=True, slots=True)
class Questionnaire:
    """The questions asked before the first item and after the last."""

    before: tuple[Question, ...] = ()
    after: tuple[Question, ...] = ()

    def part(self, name: str) -> tuple[Question, ...]:
        """The questions of ``before`` or ``after``."""
        return self.before if name == "before" else self.after

    def stored(self) -> dict[str, list[dict[str, Any]]]:
        """What the study settings keep."""
        return {p: [asdict(q) | {"options": list(q.options)} for q in self.part(p)]
                for p in PARTS if self.part(p)}

    @classmethod
    def of(cls, settings: dict[str, Any] | None) -> Questionnaire:
        """From a study's stored settings (no questions when there are none)."""
        found = (settings or {}).get("questionnaire") or {}
        return cls(*(tuple(Question(**{**q, "options": tuple(q.get("options", ()))})
                           for q in found.get(p, ())) for p in PARTS))


def parse(value: Any) -> tuple[Questionnaire | None, list[tuple[str, str]]]:
    """The manifest's ``questionnaire: {before: [...], after: [...]}``; problems as
    ``(key, message)``."""
    if value is None:
        return None, []
    if not isinstance(value, dict):
        return None, [("questionnaire", "expected a mapping with 'before' and/or 'after' "
                                        f"lists of questions, got {_short(value)}")]
    problems = [(f"questionnaire.{k}", "unknown key (known: before, after)")
                for k in sorted(set(value) - set(PARTS), key=str)]
    parts: dict[str, tuple[Question, ...]] = {}
    seen: set[str] = set()
    for part in PARTS:
        given = value.get(part, [])
        if not isinstance(given, list) or len(given) > MAX_QUESTIONS:
            problems.append((f"questionnaire.{part}", f"expected a list of at most "
                                                      f"{MAX_QUESTIONS} questions, got "
                                                      f"{_short(given)}"))
            continue
        asked = []
        for n, item in enumerate(given):
            question, found = _question(item, f"questionnaire.{part}[{n}]", seen)
            problems += found
            if question is not None:
                asked.append(question)
        parts[part] = tuple(asked)
    if problems:
        return None, problems
    return Questionnaire(parts.get("before", ()), parts.get("after", ())), []


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _text(value: Any, limit: int, *, line: bool) -> str | None:
    """``value`` as text within ``limit`` characters without control characters (a line:
    no newline either), else None."""
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        return None
    allowed = set() if line else {"\n", "\t"}
    if any(unicodedata.category(c) in BAD_IN_TEXT and c not in allowed for c in value):
        return None
    return value.strip()


def _question(item: Any, at: str, seen: set[str]) -> tuple[Question | None,
                                                           list[tuple[str, str]]]:
    if not isinstance(item, dict):
        return None, [(at, f"expected a mapping (id, kind, text...), got {_short(item)}")]
    problems = [(f"{at}.{k}", f"unknown key (known: {', '.join(KEYS)})")
                for k in sorted(set(item) - set(KEYS), key=str)]
    qid = item.get("id")
    if (problem := name_problem(qid, "question")) is not None:
        problems.append((f"{at}.id", problem))
    elif qid in seen:
        problems.append((f"{at}.id", f"question id {qid!r} is used twice"))
    else:
        seen.add(qid)
    kind = item.get("kind")
    if kind not in KINDS:
        problems.append((f"{at}.kind", f"expected one of {', '.join(KINDS)}, got "
                                       f"{_short(kind)}"))
    text = _text(item.get("text"), MAX_TEXT, line=False)
    if text is None:
        problems.append((f"{at}.text", f"expected the question as text of at most "
                                       f"{MAX_TEXT:,} characters, got {_short(item.get('text'))}"))
    required = item.get("required", False)
    if not isinstance(required, bool):
        problems.append((f"{at}.required", f"expected true or false, got {_short(required)}"))
    fields, found = _kind_fields(item, kind, at)
    problems += found
    helped = _optional(item, "help", MAX_TEXT, at, problems, line=False)
    if problems:
        return None, problems
    return Question(id=qid.strip(), kind=kind, text=text or "", required=required,
                    help=helped, **fields), []


def _optional(item: dict, key: str, limit: int, at: str, problems: list[tuple[str, str]], *,
              line: bool) -> str:
    """An optional text key (``help``, ``low``, ``high``): "" when absent or empty."""
    value = item.get(key)
    if value is None or value == "":
        return ""
    found = _text(value, limit, line=line)
    if found is None:
        problems.append((f"{at}.{key}", f"expected {'one line of ' if line else ''}text of "
                                        f"at most {limit:,} characters, got {_short(value)}"))
        return ""
    return found


def _kind_fields(item: dict, kind: Any, at: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The fields of one kind of question, checked."""
    if kind in ("single", "multiple"):
        options = item.get("options")
        clean = [_text(o, MAX_OPTION, line=True) for o in options] \
            if isinstance(options, list) else []
        if (not isinstance(options, list) or not 2 <= len(options) <= MAX_OPTIONS
                or None in clean or len(set(clean)) != len(clean)):
            return {}, [(f"{at}.options", f"expected 2 to {MAX_OPTIONS} different options, "
                                          f"each one line of at most {MAX_OPTION} characters, "
                                          f"got {_short(options)}")]
        return {"options": tuple(clean)}, []
    if kind == "likert":
        points = item.get("points", 5)
        if isinstance(points, bool) or not isinstance(points, int) or not 2 <= points <= MAX_POINTS:
            return {}, [(f"{at}.points", f"expected a whole number from 2 to {MAX_POINTS}, "
                                         f"got {_short(points)}")]
        problems: list[tuple[str, str]] = []
        ends = {k: _optional(item, k, MAX_OPTION, at, problems, line=True)
                for k in ("low", "high")}
        return {"points": points, **ends}, problems
    if kind == "number":
        return _number_fields(item, at)
    if kind == "text":
        limit = item.get("max_length", DEFAULT_TEXT_LENGTH)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            return {}, [(f"{at}.max_length", f"expected a whole number from 1 to 10000, "
                                             f"got {_short(limit)}")]
        return {"max_length": limit}, []
    return {}, []


def _number_fields(item: dict, at: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    out: dict[str, Any] = {}
    problems = []
    for key, name in (("min", "minimum"), ("max", "maximum")):
        value = item.get(key)
        if value is None:
            continue
        if not finite(value):
            problems.append((f"{at}.{key}", f"expected a number up to {MAX_NUMBER:g} in size, "
                                            f"got {_short(value)}"))
        else:
            out[name] = float(value)
    integer = item.get("integer", False)
    if not isinstance(integer, bool):
        problems.append((f"{at}.integer", f"expected true or false, got {_short(integer)}"))
    out["integer"] = integer is True
    low, high = out.get("minimum"), out.get("maximum")
    if low is not None and high is not None and low > high:
        problems.append((f"{at}.min", f"min {low:g} is above max {high:g}"))
    return out, problems


def finite(value: Any) -> bool:
    """A number (not a bool) that is finite and at most MAX_NUMBER in size (a huge int
    cannot even be turned into a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value) and abs(value) <= MAX_NUMBER
    except OverflowError:
        return False
