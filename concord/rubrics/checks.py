"""Checking rubric files: every problem found, each naming the file and the key path.

Split from :mod:`concord.rubrics.model` (the data model and loading) to keep both small.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from concord.errors import ConcordError
from concord.rubrics.checklist_checks import check_checklist

RESERVED_KEYS = ("Enter", "S", "F", "U", "Z")  # submit, skip, flag, undo, zoom
DEFAULT_KEY_ROWS = ("1234567890", "qwertyiop")  # by criterion position; "u" is reserved
RUBRIC_PROTOCOLS = ("score", "rank")  # study protocols: concord.plan.STUDY_PROTOCOLS
COMBINE_METHODS = ("geometric_mean", "arithmetic_mean")


# kind -> (required keys, optional keys). Keys in _TEXT must hold non-empty strings.
_SPECS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "score": (  # "scale" is required unless every criterion is continuous (check())
        ("id", "title", "task", "source", "criteria"),
        ("scale", "protocol", "inputs", "guide", "combine", "notes", "variant_of", "checklist"),
    ),
    "rank": (
        ("id", "title", "task", "source", "protocol", "criteria"),
        ("inputs", "guide", "notes"),
    ),
    "source": (("title",), ("url", "arxiv", "lineage", "notes")),
    "criterion": (("key", "name", "definition"), ("levels", "continuous", "keys", "aliases")),
    "continuous": (("min", "max"), ("step", "min_label", "max_label")),
    "rank_criterion": (("key", "name", "definition"), ()),
    "level": (("value", "label", "description"), ()),
    "combine": (("method", "criteria"), ("description",)),
}
_RANK = frozenset({"scale", "combine", "levels", "keys", "checklist", "continuous"})
_NOT_TEXT = {"source", "scale", "criteria", "protocol", "inputs", "combine", "levels", "keys",
             "aliases", "checklist", "continuous", "min", "max", "step"}
_TEXT = {k for req, opt in _SPECS.values() for k in req + opt} - _NOT_TEXT - {"value", "method"}
# A continuous scale is a grid of at most this many points (or any real number: no step).
MAX_STEPS = 10_000_000


@dataclass(frozen=True)
class RubricProblem:
    """One thing wrong in a rubric file: the file, the key path inside it, and what."""

    path: Path
    key: str
    message: str

    def __str__(self) -> str:
        try:
            shown = str(self.path.resolve().relative_to(Path.cwd()))
        except (ValueError, RuntimeError, OSError):  # elsewhere, or a symlink loop
            shown = str(self.path)
        return f"{shown}: {self.key}: {self.message}" if self.key else f"{shown}: {self.message}"


class RubricError(ConcordError, ValueError):
    """A rubric file that cannot be used; ``problems`` lists everything found."""

    def __init__(self, problems: list[RubricProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class RubricRootError(RubricError, TypeError):
    """The YAML document is not a mapping (also a ``TypeError``)."""


def parse(path: Path) -> dict[str, Any]:
    """The YAML of a rubric file: a regular file of at most 1 MiB, bounded YAML (depth,
    aliases), no key twice in one mapping, a mapping at the root."""
    from concord.importers.safe_load import MAX_DOCUMENT_BYTES, LoadError, load_yaml
    from concord.importers.tables import TableError, read_text, regular_file_problem

    missing = regular_file_problem(path)
    if missing is not None and missing.message == "file not found":
        raise FileNotFoundError(f"rubric file not found: {path.resolve()}")
    try:
        data = load_yaml(read_text(path, MAX_DOCUMENT_BYTES))
    except TableError as e:  # not a regular file, too large, not UTF-8
        raise RubricError([RubricProblem(path, "", p.message) for p in e.problems]) from e
    except LoadError as e:
        where = f" (line {e.line})" if e.line else ""
        message = e.message.removeprefix("malformed YAML: ")
        raise RubricError([RubricProblem(path, "", f"invalid YAML: {message}{where}")]) \
            from (e.__cause__ or e)
    if not isinstance(data, dict):
        kind = "an empty file" if data is None else type(data).__name__
        raise RubricRootError([RubricProblem(path, "", f"the root must be a mapping, got {kind}")])
    return data


class _Problems(list[RubricProblem]):
    """The problems of one file."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def add(self, key: str, message: str) -> None:
        self.append(RubricProblem(self.path, key, message))

    def mapping(self, where: str, data: Any, kind: str) -> bool:
        """Check the shape of the mapping at ``where`` against ``_SPECS[kind]``."""
        if not isinstance(data, Mapping):
            self.add(where, f"must be a mapping, got {data!r}")
            return False
        required, optional = _SPECS[kind]
        at = f"{where}." if where else ""
        rank = kind.startswith("rank")
        for key in required:
            if key not in data:
                self.add(f"{at}{key}", "missing required key")
        for key, value in data.items():
            if key not in required + optional:
                why = "not allowed when protocol is rank" if rank and key in _RANK else "unknown"
                self.add(f"{at}{key}", f"{why} (allowed: {', '.join(required + optional)})")
            elif key in _TEXT and (not isinstance(value, str) or not value.strip()):
                self.add(f"{at}{key}", f"must be a non-empty string, got {value!r}")
        return True


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check(data: Mapping[str, Any], path: Path) -> list[RubricProblem]:
    out = _Problems(path)
    protocol = data.get("protocol", "score")
    if protocol not in RUBRIC_PROTOCOLS:
        out.add("protocol", f"{protocol!r} is not one of {list(RUBRIC_PROTOCOLS)}")
        protocol = "score"
    rank = protocol == "rank"
    out.mapping("", data, protocol)
    if "id" in data and data["id"] != path.stem:
        out.add("id", f"{data['id']!r} does not match the file name {path.stem!r}")
    if "variant_of" in data and data["variant_of"] == data.get("id"):
        out.add("variant_of", "a rubric cannot be a variant of itself")
    inputs = data.get("inputs", [])
    if not isinstance(inputs, list) or not all(isinstance(v, str) and v for v in inputs):
        out.add("inputs", f"must be a list of non-empty strings, got {inputs!r}")
    if "source" in data:
        out.mapping("source", data["source"], "source")
    scale = None if rank or "scale" not in data else _check_scale(out, data["scale"])
    criteria = data.get("criteria")
    if not rank and "scale" not in data and not _all_continuous(criteria):
        out.add("scale", "missing required key (only a rubric whose criteria are all "
                         "continuous has none)")
    if "criteria" in data and (not isinstance(criteria, list) or not criteria):
        out.add("criteria", f"must be a non-empty list, got {criteria!r}")
    used: dict[str, str] = {}  # casefolded keyboard key -> where it is bound
    if criteria and isinstance(criteria, list):
        _check_criteria(out, criteria, scale, rank, used)
    if "combine" in data and not rank and out.mapping("combine", data["combine"], "combine"):
        _check_combine(out, data["combine"], criteria if isinstance(criteria, list) else [])
    if "checklist" in data and not rank:
        check_checklist(out, data["checklist"], criteria if isinstance(criteria, list) else [],
                        scale, _plain_keys(used, data["checklist"], criteria))
    return list(out)


def _all_continuous(criteria: Any) -> bool:
    return isinstance(criteria, list) and bool(criteria) and all(
        isinstance(c, Mapping) and "continuous" in c for c in criteria)


def _plain_keys(used: dict[str, str], checklist: Any, criteria: Any) -> dict[str, str]:
    """The level keys still bound while the checklist is on: those of criteria without
    one (a checklist criterion's level keys give way to its conditions' keys)."""
    if not isinstance(checklist, Mapping) or not isinstance(criteria, list):
        return dict(used)
    listed = tuple(f"criteria[{i}]." for i, c in enumerate(criteria)
                   if isinstance(c, Mapping) and c.get("key") in checklist)
    return {k: where for k, where in used.items() if not where.startswith(listed)}


def _check_scale(out: _Problems, scale: Any) -> list[float] | None:
    """Report scale problems; return the scale if its levels can be checked against it."""
    if not isinstance(scale, list) or not scale:
        out.add("scale", f"must be a non-empty list of numbers, got {scale!r}")
        return None
    bad = [i for i, value in enumerate(scale) if not _is_number(value)]
    for i in bad:
        out.add(f"scale[{i}]", f"{scale[i]!r} is not a number")
    if not bad and any(b <= a for a, b in pairwise(scale)):
        out.add("scale", f"{scale} is not strictly increasing")
    return None if bad else scale


def _check_criteria(
    out: _Problems, criteria: list[Any], scale: list[float] | None, rank: bool,
    used: dict[str, str],
) -> None:
    seen: dict[str, int] = {}
    for i, criterion in enumerate(criteria):
        where = f"criteria[{i}]"
        if not out.mapping(where, criterion, "rank_criterion" if rank else "criterion"):
            continue
        key = criterion.get("key")
        if isinstance(key, str) and key in seen:
            out.add(f"{where}.key", f"duplicate criterion key {key!r} (also criteria[{seen[key]}])")
        elif isinstance(key, str):
            seen[key] = i
    if not rank:
        _check_aliases(out, criteria)
    for i, criterion in enumerate(criteria):
        where = f"criteria[{i}]"
        if not isinstance(criterion, Mapping) or rank:
            continue
        if "continuous" in criterion:
            _check_continuous(out, where, criterion)
            continue
        if "levels" not in criterion:
            out.add(f"{where}.levels", "missing required key (or 'continuous' for a slider)")
        else:
            _check_levels(out, where, criterion["levels"], scale)
        if scale is not None:
            _check_keyboard(out, where, criterion, keys_of(criterion, i, len(scale)), used)


def _check_continuous(out: _Problems, where: str, criterion: Mapping[str, Any]) -> None:
    """A continuous criterion: ``min < max``, a ``step`` > 0 (or ``any``) that fits the
    range at most :data:`MAX_STEPS` times, no levels or keys (a slider has neither)."""
    for key in ("levels", "keys"):
        if key in criterion:
            out.add(f"{where}.{key}", "not allowed with 'continuous' (a slider has no levels)")
    spec = criterion["continuous"]
    at = f"{where}.continuous"
    if not out.mapping(at, spec, "continuous"):
        return
    low, high, step = spec.get("min"), spec.get("max"), spec.get("step", "any")
    if not (_is_number(low) and _is_number(high)):
        out.add(at, f"min and max must be finite numbers, got {low!r} and {high!r}")
        return
    if not low < high:
        out.add(at, f"min must be below max, got {low!r} and {high!r}")
    elif step != "any" and not (_is_number(step) and step > 0):
        out.add(f"{at}.step", f"must be a number > 0 or 'any', got {step!r}")
    elif step != "any" and (high - low) / step > MAX_STEPS:
        out.add(f"{at}.step", f"{step!r} cuts {low:g}..{high:g} into more than "
                              f"{MAX_STEPS:,} steps; use a larger step or 'any'")


def _check_aliases(out: _Problems, criteria: list[Any]) -> None:
    """Aliases (other names a criterion goes by in files, e.g. PQ for PR) are unique and
    never equal a criterion key or another alias: a name must resolve to one criterion."""
    keys = {c.get("key"): i for i, c in enumerate(criteria) if isinstance(c, Mapping)}
    taken: dict[str, str] = {}
    for i, criterion in enumerate(criteria):
        if not isinstance(criterion, Mapping) or "aliases" not in criterion:
            continue
        aliases, where = criterion["aliases"], f"criteria[{i}].aliases"
        if not isinstance(aliases, list) or not aliases:
            out.add(where, f"must be a non-empty list of names, got {aliases!r}")
            continue
        for j, alias in enumerate(aliases):
            at = f"{where}[{j}]"
            if not isinstance(alias, str) or not alias.strip() or alias != alias.strip():
                out.add(at, f"must be a non-empty name without surrounding spaces, got {alias!r}")
            elif alias in keys:
                out.add(at, f"{alias!r} is the key of criteria[{keys[alias]}]")
            elif alias in taken:
                out.add(at, f"{alias!r} is already an alias ({taken[alias]})")
            else:
                taken[alias] = at


def _check_levels(out: _Problems, where: str, levels: Any, scale: list[float] | None) -> None:
    if not isinstance(levels, list):
        out.add(f"{where}.levels", f"must be a list with one level per scale value, got {levels!r}")
        return
    found: dict[float, int] = {}
    for j, level in enumerate(levels):
        at = f"{where}.levels[{j}]"
        if not out.mapping(at, level, "level") or scale is None or "value" not in level:
            continue
        value = level["value"]
        if not _is_number(value) or value not in scale:
            out.add(f"{at}.value", f"{value!r} is not in scale {scale}")
        elif value in found:
            out.add(f"{at}.value", f"{value!r} has two levels (also levels[{found[value]}])")
        else:
            found[value] = j
    missing = [value for value in scale or [] if value not in found]
    if missing:
        out.add(f"{where}.levels", f"no level for scale value(s) {missing} (scale {scale})")


def keys_of(criterion: Mapping[str, Any], index: int, count: int) -> list[Any]:
    """The explicit ``keys`` of a criterion, or the default row for its position (maybe [])."""
    if "keys" in criterion:
        return criterion["keys"] if isinstance(criterion["keys"], list) else [criterion["keys"]]
    row = DEFAULT_KEY_ROWS[index] if index < len(DEFAULT_KEY_ROWS) else ""
    return list(row[:count]) if count <= len(row) else []


def _check_keyboard(
    out: _Problems, where: str, criterion: Mapping[str, Any], keys: list[Any], used: dict[str, str]
) -> None:
    explicit = "keys" in criterion
    if (
        explicit
        and isinstance(criterion.get("levels"), list)
        and len(keys) != len(criterion["levels"])
    ):
        out.add(f"{where}.keys", f"needs one key per level, got {len(keys)}: {keys!r}")
    reserved = {key.casefold() for key in RESERVED_KEYS}
    for j, key in enumerate(keys):
        at = f"{where}.keys[{j}]" if explicit else f"{where}.keys (default {key!r})"
        if not isinstance(key, str) or not key.strip():
            out.add(at, f"must be a non-empty string, got {key!r}")
        elif key.casefold() in reserved:
            out.add(at, f"{key!r} is reserved by the app ({', '.join(RESERVED_KEYS)})")
        elif key.casefold() in used:
            out.add(at, f"{key!r} is already bound to {used[key.casefold()]}")
        else:
            used[key.casefold()] = at


def _check_combine(out: _Problems, combine: Mapping[str, Any], criteria: list[Any]) -> None:
    if "method" in combine and combine["method"] not in COMBINE_METHODS:
        out.add("combine.method", f"{combine['method']!r} is not one of {list(COMBINE_METHODS)}")
    known = [c.get("key") for c in criteria if isinstance(c, Mapping)]
    keys = combine.get("criteria", known)
    if not isinstance(keys, list) or not keys or any(key not in known for key in keys):
        out.add("combine.criteria", f"must list criterion keys from {known}, got {keys!r}")
