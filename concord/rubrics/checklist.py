"""Condition checklists: the rater ticks conditions, the rubric's rules derive the value.

A rubric's ``checklist:`` maps a criterion key to its conditions (``id``, ``text``,
optional ``key``) and its ``derive`` rules, tried in order; the first rule whose ``when``
holds for the ticked conditions gives the criterion's value (a rule without ``when``
always holds). See docs/rubrics.md for the format and the ImagenHub rules.

Checking considers every combination of ticks (at most 2**MAX_CONDITIONS, as the bits of
one integer: concord.rubrics.checklist_checks), so a rule set that leaves a combination
without a value, or has a rule that can never apply, is refused when the rubric is
loaded, never discovered by a rater.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import product
from typing import Any

from concord.errors import ConcordError

MAX_CONDITIONS = 12  # per criterion: 4096 tick combinations to check, a screen to read
DEFAULT_CONDITION_KEYS = "1234567890"  # in order over all conditions of the rubric
CLAUSES = ("all_ticked", "any_ticked", "none_ticked", "not_all_ticked")
CONDITION_ID = re.compile(r"^[a-z][a-z0-9_]{0,47}$")


class ChecklistError(ConcordError, ValueError):
    """Ticks that do not fit a checklist (an unknown condition id)."""


@dataclass(frozen=True)
class Condition:
    """One statement the rater ticks when it holds for the image."""

    id: str
    text: str
    key: str | None = None  # the keyboard key that toggles it


@dataclass(frozen=True)
class Rule:
    """``value`` applies when every given clause holds for the set of ticked conditions."""

    value: float
    all_ticked: tuple[str, ...] = ()
    any_ticked: tuple[str, ...] = ()
    none_ticked: tuple[str, ...] = ()
    not_all_ticked: tuple[str, ...] = ()

    def applies(self, ticked: frozenset[str]) -> bool:
        """Whether the rule holds when exactly the conditions in ``ticked`` are ticked."""
        return (all(c in ticked for c in self.all_ticked)
                and (not self.any_ticked or any(c in ticked for c in self.any_ticked))
                and not any(c in ticked for c in self.none_ticked)
                and (not self.not_all_ticked
                     or not all(c in ticked for c in self.not_all_ticked)))


@dataclass(frozen=True)
class Checklist:
    """The conditions of one criterion and the rules deriving its value from the ticks."""

    criterion: str
    conditions: tuple[Condition, ...]
    rules: tuple[Rule, ...]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.conditions)

    def derive(self, ticks: Mapping[str, bool]) -> float:
        """The value the rules give for ``ticks`` (condition id -> ticked; a missing id
        counts as not ticked).

        Raises:
            ChecklistError: a tick names a condition this criterion does not have.
        """
        unknown = sorted(set(ticks) - set(self.ids))
        if unknown:
            raise ChecklistError(f"{self.criterion}: unknown condition(s) {unknown} "
                                 f"(conditions: {list(self.ids)})")
        return first_value(self.rules, frozenset(c for c, on in ticks.items() if on))


def first_value(rules: tuple[Rule, ...], ticked: frozenset[str]) -> float:
    """The value of the first rule that applies (checked rules always reach one)."""
    for rule in rules:
        if rule.applies(ticked):
            return rule.value
    raise ChecklistError(f"no rule applies to ticks {sorted(ticked)}")


def build(data: Mapping[str, Any]) -> tuple[Checklist, ...]:
    """The checklists of a checked rubric mapping, in criterion order, keys filled in."""
    raw = data.get("checklist") or {}
    out, spare = [], iter(DEFAULT_CONDITION_KEYS)
    for criterion in data["criteria"]:
        entry = raw.get(criterion["key"])
        if entry is None:
            continue
        conditions = tuple(
            Condition(c["id"], c["text"], c["key"] if "key" in c else next(spare, None))
            for c in entry["conditions"])
        rules = tuple(Rule(r["value"], **{k: tuple(v) for k, v in r.get("when", {}).items()})
                      for r in entry["derive"])
        out.append(Checklist(criterion["key"], conditions, rules))
    return tuple(out)


def combinations(ids: tuple[str, ...]):
    """Every set of ticked conditions, as frozensets (2**len(ids) of them)."""
    for bits in product((False, True), repeat=len(ids)):
        yield frozenset(i for i, on in zip(ids, bits, strict=True) if on)
