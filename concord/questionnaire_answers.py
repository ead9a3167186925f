"""Answers to a study's questionnaire (concord.questionnaire), checked for the question they
answer: one of the options, a number in range, free text without control characters.
Pure: no I/O."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any

from concord.questionnaire import BAD_IN_TEXT, Question, finite


class AnswerError(ValueError):
    """An answer that does not fit its question (the message is for the participant)."""


def check(question: Question, value: Any) -> Any:
    """The answer to store (JSON-ready), None for one left blank.

    Raises:
        AnswerError: a required question left blank, or an answer that is not one of the
            options, out of range, too long or with control characters.
    """
    blank = value is None or value == "" or value == [] or \
        (isinstance(value, str) and not value.strip())
    if blank:
        if question.required:
            raise AnswerError(f"please answer: {question.text}")
        return None
    checker = {"single": _single, "multiple": _multiple, "likert": _likert,
               "number": _number, "text": _free_text}[question.kind]
    return checker(question, value)


def _single(q: Question, value: Any) -> str:
    if value not in q.options:
        raise AnswerError(f"{q.text}: choose one of the options")
    return value


def _multiple(q: Question, value: Any) -> list[str]:
    if not isinstance(value, list | tuple) or any(v not in q.options for v in value) or \
            len(set(value)) != len(value):
        raise AnswerError(f"{q.text}: choose among the options, each once")
    return [o for o in q.options if o in value]  # in the order of the options


def _likert(q: Question, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= q.points:
        raise AnswerError(f"{q.text}: choose a point from 1 to {q.points}")
    return value


def _number(q: Question, value: Any) -> float | int:
    if isinstance(value, str):
        try:
            value = float(value.strip()[:40])
        except ValueError:
            raise AnswerError(f"{q.text}: enter a number") from None
    if not finite(value):
        raise AnswerError(f"{q.text}: enter a number")
    if q.integer and value != int(value):
        raise AnswerError(f"{q.text}: enter a whole number")
    if (q.minimum is not None and value < q.minimum) or \
            (q.maximum is not None and value > q.maximum):
        raise AnswerError(f"{q.text}: enter a number from {_bound(q.minimum)} to "
                          f"{_bound(q.maximum)}")
    return int(value) if q.integer else float(value)


def _bound(value: float | None) -> str:
    return "any" if value is None else f"{value:g}"


def _free_text(q: Question, value: Any) -> str:
    if not isinstance(value, str):
        raise AnswerError(f"{q.text}: enter text")
    if len(value) > q.max_length:
        raise AnswerError(f"{q.text}: at most {q.max_length:,} characters, please "
                          f"({len(value):,} given)")
    bad = next((c for c in value if unicodedata.category(c) in BAD_IN_TEXT
                and c not in "\n\t"), None)
    if bad is not None:
        raise AnswerError(f"{q.text}: the answer contains the control character "
                          f"U+{ord(bad):04X}; please remove it")
    return value.strip()


@dataclass(frozen=True, slots=True)
class Answered:
    """What :func:`check_all` made of a part's answers: the values to store, or the
    problems to show (one per question)."""

    values: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def check_all(questions: tuple[Question, ...], given: dict[str, Any]) -> Answered:
    """Every question of a part checked against ``given`` (question id -> raw value)."""
    values: dict[str, Any] = {}
    problems = []
    for q in questions:
        try:
            values[q.id] = check(q, given.get(q.id))
        except AnswerError as exc:
            problems.append(str(exc))
    return Answered(values, problems)
