"""Checking a rubric's ``checklist:`` section; every problem names its key path.

Besides the shape (known criteria, unique condition ids, keys free, rule values on the
scale, rules naming conditions of their own criterion), the rules are tried on every
combination of ticks: a combination that reaches no value and a rule that never applies
(contradictory, or shadowed by earlier rules) are both refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from concord.rubrics.checklist import (
    CLAUSES,
    CONDITION_ID,
    DEFAULT_CONDITION_KEYS,
    MAX_CONDITIONS,
    Rule,
)

_RESERVED = ("enter", "s", "f", "u", "z")  # submit, skip, flag, undo, zoom (see checks.py)


class _Out(Protocol):
    def add(self, key: str, message: str) -> None: ...


def check_checklist(out: _Out, checklist: Any, criteria: list[Any],
                    scale: list[float] | None, used: dict[str, str]) -> None:
    """Report every problem of ``checklist`` (criterion key -> conditions and rules)."""
    if not isinstance(checklist, Mapping) or not checklist:
        out.add("checklist", f"must be a mapping of criterion key to its conditions and "
                             f"rules, got {checklist!r}")
        return
    known = [c.get("key") for c in criteria if isinstance(c, Mapping)]
    continuous = {c.get("key") for c in criteria if isinstance(c, Mapping) and "continuous" in c}
    ids: dict[str, str] = {}  # condition id -> where it is declared
    spare = iter(DEFAULT_CONDITION_KEYS)
    for name in [k for k in known if k in checklist] + [k for k in checklist if k not in known]:
        where = f"checklist.{name}"
        entry = checklist[name]
        if name not in known:
            out.add(where, f"no criterion {name!r} in this rubric (criteria: {known})")
        elif name in continuous:
            out.add(where, f"criterion {name!r} is continuous: a checklist derives a level")
        elif not isinstance(entry, Mapping):
            out.add(where, f"must be a mapping with conditions and derive, got {entry!r}")
        else:
            own = _conditions(out, where, entry.get("conditions"), ids, used, spare)
            _rules(out, where, entry.get("derive"), own, scale)
            for extra in sorted(set(entry) - {"conditions", "derive"}):
                out.add(f"{where}.{extra}", "unknown (allowed: conditions, derive)")


def _conditions(out: _Out, where: str, conditions: Any, ids: dict[str, str],
                used: dict[str, str], spare) -> list[str] | None:
    """Check the conditions; return their ids (None when they cannot be used)."""
    at = f"{where}.conditions"
    if not isinstance(conditions, list) or not conditions:
        out.add(at, f"must be a non-empty list of conditions, got {conditions!r}")
        return None
    if len(conditions) > MAX_CONDITIONS:
        out.add(at, f"{len(conditions)} conditions; at most {MAX_CONDITIONS} per criterion")
        return None
    own: list[str] = []
    for j, condition in enumerate(conditions):
        here = f"{at}[{j}]"
        if not isinstance(condition, Mapping):
            out.add(here, f"must be a mapping with id and text, got {condition!r}")
            continue
        for extra in sorted(set(condition) - {"id", "text", "key"}):
            out.add(f"{here}.{extra}", "unknown (allowed: id, text, key)")
        cid, text = condition.get("id"), condition.get("text")
        if not isinstance(cid, str) or not CONDITION_ID.match(cid):
            out.add(f"{here}.id", f"must be a lower-case name (letters, digits, _), got {cid!r}")
        elif cid in ids:
            out.add(f"{here}.id", f"duplicate condition id {cid!r} (also {ids[cid]})")
        else:
            ids[cid] = here
            own.append(cid)
        if not isinstance(text, str) or not text.strip():
            out.add(f"{here}.text", f"must be a non-empty string, got {text!r}")
        _key(out, here, condition, used, spare)
    return own if len(own) == len(conditions) else None


def _key(out: _Out, here: str, condition: Mapping[str, Any], used: dict[str, str],
         spare) -> None:
    explicit = "key" in condition
    key = condition["key"] if explicit else next(spare, None)
    at = f"{here}.key" if explicit else f"{here}.key (default {key!r})"
    if key is None:
        out.add(f"{here}.key", f"needs a key: the {len(DEFAULT_CONDITION_KEYS)} default keys "
                               f"({DEFAULT_CONDITION_KEYS}) are taken by earlier conditions")
    elif not isinstance(key, str) or len(key) != 1 or not key.isalnum():
        out.add(at, f"must be one letter or digit, got {key!r}")
    elif key.casefold() in _RESERVED:
        out.add(at, f"{key!r} is reserved by the app (Enter, S, F, U, Z)")
    elif key.casefold() in used:
        out.add(at, f"{key!r} is already bound to {used[key.casefold()]}")
    else:
        used[key.casefold()] = at


def _rules(out: _Out, where: str, rules: Any, own: list[str] | None,
           scale: list[float] | None) -> None:
    at = f"{where}.derive"
    if not isinstance(rules, list) or not rules:
        out.add(at, f"must be a non-empty list of rules (value, optional when), got {rules!r}")
        return
    if own is not None and len(rules) > 2 ** len(own):
        # each rule must be the first to apply to some combination of ticks
        out.add(at, f"{len(rules):,} rules for {len(own)} conditions: at most "
                    f"{2 ** len(own):,} can each be the first to apply to some combination "
                    "of ticks")
        return
    built: list[Rule | None] = [_rule(out, f"{at}[{i}]", rule, own, scale)
                                for i, rule in enumerate(rules)]
    if own is None or None in built:
        return  # the rules cannot be tried until every part is valid
    _coverage(out, at, own, [r for r in built if r is not None])


def _rule(out: _Out, at: str, rule: Any, own: list[str] | None,
          scale: list[float] | None) -> Rule | None:
    if not isinstance(rule, Mapping) or "value" not in rule:
        out.add(at, f"must be a mapping with a value (and optionally when), got {rule!r}")
        return None
    ok = True
    for extra in sorted(set(rule) - {"value", "when"}):
        out.add(f"{at}.{extra}", "unknown (allowed: value, when)")
        ok = False
    value = rule["value"]
    if scale is not None and (isinstance(value, bool) or value not in scale):
        out.add(f"{at}.value", f"{value!r} is not in scale {scale}")
        ok = False
    when = rule.get("when", {})
    if not isinstance(when, Mapping) or ("when" in rule and not when):
        out.add(f"{at}.when", f"must be a mapping of {', '.join(CLAUSES)} to condition ids, "
                              f"got {when!r}")
        return None
    for clause, names in when.items():
        ok = _clause(out, f"{at}.when.{clause}", clause, names, own) and ok
    return Rule(value, **{k: tuple(v) for k, v in when.items()}) if ok else None


def _clause(out: _Out, at: str, clause: Any, names: Any, own: list[str] | None) -> bool:
    if clause not in CLAUSES:
        out.add(at, f"unknown clause (allowed: {', '.join(CLAUSES)})")
        return False
    if not isinstance(names, list) or not names:
        out.add(at, f"must be a non-empty list of condition ids, got {names!r}")
        return False
    ok = True
    for k, name in enumerate(names):
        if own is not None and name not in own:
            out.add(f"{at}[{k}]", f"{name!r} is not a condition of this criterion "
                                  f"(conditions: {own})")
            ok = False
    return ok and own is not None


def _coverage(out: _Out, at: str, own: list[str], rules: list[Rule]) -> None:
    """Every tick combination reaches a value; every rule is the first to apply somewhere.

    A set of combinations is a bitset (bit ``c`` for the ``c``-th combination of
    :func:`combinations`), so each rule costs a few operations on one 2**n-bit integer
    instead of a pass over every combination: linear in the rules (8,500 rules that never
    apply took 76 s tried combination by combination; bench/bench_rubrics.py).
    """
    n = len(own)
    full = (1 << (1 << n)) - 1
    ticked = {cid: _ticked(n, n - 1 - j) for j, cid in enumerate(own)}
    left = full  # combinations no earlier rule applies to
    for i, rule in enumerate(rules):
        hits = _applies(rule, ticked, full) & left
        if hits:
            left &= ~hits
        else:
            out.add(f"{at}[{i}]", "can never apply: its when is contradictory or earlier "
                                  "rules take every case it covers")
    if left:
        first = (left & -left).bit_length() - 1  # the first combination without a value
        example = sorted(cid for j, cid in enumerate(own) if first >> (n - 1 - j) & 1)
        out.add(at, f"no rule gives a value in {left.bit_count()} of {2 ** n} cases "
                    f"(e.g. ticked: {example or 'nothing'}); end with a rule without when")


def _ticked(n: int, bit: int) -> int:
    """The combinations in which a condition is ticked: those whose index has ``bit`` set,
    i.e. runs of 2**bit unset then 2**bit set bits, repeated over all 2**n combinations."""
    run = 1 << bit
    block = ((1 << run) - 1) << run
    period = 2 * run
    return block * (((1 << (1 << n)) - 1) // ((1 << period) - 1))


def _applies(rule: Rule, ticked: dict[str, int], full: int) -> int:
    """The combinations that ``rule`` applies to (Rule.applies, on sets of combinations)."""
    hits = full
    for cid in rule.all_ticked:
        hits &= ticked[cid]
    if rule.any_ticked:
        anyone = 0
        for cid in rule.any_ticked:
            anyone |= ticked[cid]
        hits &= anyone
    for cid in rule.none_ticked:
        hits &= ~ticked[cid]
    if rule.not_all_ticked:
        every = full
        for cid in rule.not_all_ticked:
            every &= ticked[cid]
        hits &= ~every
    return hits & full
