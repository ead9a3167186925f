"""Bounded parsing of the YAML and JSON that users hand to Concord, and the number bounds.

Every manifest, rubric file and JSON/JSONL table goes through :func:`load_yaml` or
:func:`load_json`. A hostile or broken file cannot make them grow without limit or crash
with a Python traceback:

- YAML aliases are counted as what they expand to, so a "billion laughs" document (a few
  hundred bytes that expand to 10^9 nodes) is refused while composing, before any Python
  object is built; an alias that refers to a node containing it is refused too.
- Nesting deeper than :data:`MAX_DEPTH` is refused (PyYAML and ``json`` would otherwise
  recurse until ``RecursionError``).
- A key given twice in one mapping is refused (both libraries silently keep the last).
- A number with more digits than Python converts (4,300) is refused, not raised.

File sizes are bounded where files are read (:func:`concord.importers.tables.read_text`).
"""

from __future__ import annotations

import json
import math
import unicodedata
from typing import Any

import yaml

# Manifests and rubric files are hand-written: 1 MiB is thousands of lines.
MAX_DOCUMENT_BYTES = 1 << 20
# Prompt, gold and question tables and benchmark JSON files: the largest benchmark we
# read (GenEval 2, TIIF-Bench) is a few MB; 256 MiB is about a million prompts.
MAX_TABLE_BYTES = 256 << 20
# No input of Concord nests more than 4 levels; 64 leaves room and stays far below
# Python's recursion limit.
MAX_DEPTH = 64
# Nodes of a YAML document once its aliases are expanded; a manifest has tens to
# hundreds, a rubric file a few hundred.
MAX_YAML_NODES = 100_000

# What SQLite can store in an INTEGER column.
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
# Sample indices and counts the app works with; 2**31 - 1 also fits any 32-bit reader of
# an export and a float64 exactly.
MAX_SAMPLE = (1 << 31) - 1
# Raters per item: the coverage target of an image (score) or prompt (rank). Published
# human studies use 3 to 10; a larger number is a typo, not a design.
MAX_RATERS_PER_ITEM = 1_000
# Ids and names read from files (prompt ids, models, metrics, judges, run ids): longer
# than this is not an id. Control characters (NUL, newline, tab...), surrogates and the
# line and paragraph separators U+2028/U+2029 would split or cut the rows they end up in.
MAX_ID_LENGTH = 1_000
_NOT_IN_IDS = frozenset({"Cc", "Cs", "Zl", "Zp"})


class LoadError(ValueError):
    """A document that cannot be used: what is wrong and, when known, its 1-based line."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.message = message
        self.line = line
        super().__init__(message if line is None else f"line {line}: {message}")


def shown(value: Any, width: int = 40) -> str:
    """``repr(value)`` cut to ``width`` characters, for error messages."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else \
        f"a {len(str(abs(value)))}-digit number"
    return text if len(text) <= width else text[: width - 1] + "…"


def whole_number_problem(value: Any, low: int, high: int) -> str | None:
    """Why ``value`` is not a whole number in ``[low, high]``, or None when it is."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"expected a whole number, got {shown(value)}"
    if not low <= value <= high:
        return f"expected a whole number from {low:,} to {high:,}, got {shown(value)}"
    return None


def whole_number(value: Any, low: int, high: int) -> int:
    """``value`` (an int, or its decimal text as in a CSV cell) as a whole number in
    ``[low, high]``; ValueError with a message naming the value otherwise."""
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:  # not a number, or more digits than Python converts
            raise ValueError(f"expected a whole number, got {shown(value)}") from None
    problem = whole_number_problem(value, low, high)
    if problem is not None:
        raise ValueError(problem)
    return value


def id_problem(text: str) -> str | None:
    """Why ``text`` cannot be an id or a name (one line of visible text of at most
    :data:`MAX_ID_LENGTH` characters), or None when it can."""
    if len(text) > MAX_ID_LENGTH:
        return f"longer than {MAX_ID_LENGTH:,} characters ({len(text):,})"
    if text.isprintable():  # the fast path: every character below is unprintable
        return None
    bad = next((c for c in text if unicodedata.category(c) in _NOT_IN_IDS), None)
    if bad is not None:
        return (f"contains the control character U+{ord(bad):04X} ({shown(text)}); an id "
                "is one line of visible text")
    return None


def finite_number(value: Any) -> float:
    """``value`` (a number or its text) as a finite float; ValueError otherwise."""
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a huge int
        raise ValueError(f"expected a number, got {shown(value)}") from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise ValueError(f"expected a finite number, got {shown(value)}")
    return number


# --- YAML --------------------------------------------------------------------------------

class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader with bounded depth and alias expansion, refusing duplicate keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) -> nodes it expands to

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            if id(node) not in self._sizes:  # the anchor is still open: a cycle
                raise _error("an alias refers to a node that contains it", mark)
            return node
        mark = self.peek_event().start_mark
        step = 1 if self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent) else 0
        self._depth += step
        if self._depth > MAX_DEPTH:
            raise _error(f"nested more than {MAX_DEPTH} levels deep", mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= step
        self._sizes[id(node)] = size = 1 + sum(self._sizes[id(c)] for c in _children(node))
        if size > MAX_YAML_NODES:
            raise _error(f"expands to more than {MAX_YAML_NODES:,} values (aliases are counted "
                         "each time they are used)", mark)
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<:` may override: allowed
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark)
            except TypeError:  # an unhashable key: PyYAML's own error names it
                break
            if first is not key_node.start_mark:
                raise _error(f"key {key!r} twice in one mapping (first on line "
                             f"{first.line + 1})", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError as exc:  # more than sys.get_int_max_str_digits() digits
            raise _error(f"number too long ({len(str(node.value)):,} characters)",
                         node.start_mark) from exc


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


class _Refused(yaml.MarkedYAMLError):
    """A bound exceeded or a duplicate key (the document itself may be well-formed)."""


def _error(message: str, mark: Any) -> _Refused:
    return _Refused(problem=message, problem_mark=mark)


def load_yaml(text: str) -> Any:
    """Parse one YAML document with the bounds above.

    Raises:
        LoadError: malformed YAML or a bound exceeded; ``line`` is where, when known.
    """
    try:
        return yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = "; ".join(p for p in (exc.context, exc.problem) if p)
        if not isinstance(exc, _Refused):
            message = f"malformed YAML: {message}"
        raise LoadError(message, None if mark is None else mark.line + 1) from exc
    except yaml.YAMLError as exc:
        raise LoadError(f"malformed YAML: {' '.join(str(exc).split())}") from exc


# --- JSON --------------------------------------------------------------------------------

class DuplicateKey(ValueError):
    """A key given twice in one JSON object."""


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of a JSON decoder that refuses a key given twice."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(f"key {key!r} twice in one object")
            seen.add(key)
    return out


def load_json(text: str) -> Any:
    """Parse one JSON document with the bounds above.

    Raises:
        LoadError: malformed JSON, a duplicate key, nesting deeper than :data:`MAX_DEPTH`
            or a number too long to convert; ``line`` is where, when known.
    """
    try:
        data = json.loads(text, object_pairs_hook=unique_object)
    except json.JSONDecodeError as exc:
        raise LoadError(f"malformed JSON: {exc.msg} (column {exc.colno})", exc.lineno) from exc
    except RecursionError as exc:
        raise LoadError(f"nested more than {MAX_DEPTH} levels deep") from exc
    except DuplicateKey as exc:
        raise LoadError(str(exc)) from exc
    except ValueError as exc:  # an integer longer than sys.get_int_max_str_digits()
        raise LoadError("a number with more than 4,300 digits") from exc
    check_depth(data)
    return data


def check_depth(data: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse lists and mappings nested deeper than ``limit`` (iterative: no recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            raise LoadError(f"nested more than {limit} levels deep")
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
