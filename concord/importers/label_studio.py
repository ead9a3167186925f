"""Reader of Label Studio JSON exports (``import-ratings --format label-studio``).

A Label Studio export is a JSON array of tasks. Concord reads, per task:

- ``data.prompt_id`` and ``data.model`` (text, required), ``data.sample`` (whole number,
  default 0) and ``data.dimension`` (optional): which image was rated;
- per entry of ``annotations`` (cancelled ones, ``was_cancelled: true``, are skipped): the
  rater from ``completed_by`` (an object: its ``email``, else ``id``; a bare number: the
  user id, as ``ls-user-<id>``), ``lead_time`` (seconds, optional);
- per entry of the annotation's ``result``: the criterion from ``from_name`` and the value
  from ``value.choices`` (type ``choices``: exactly one choice, a number of the scale, e.g.
  ``"0.5"``), ``value.rating`` (type ``rating``) or ``value.number`` (type ``number``).
  Results of type ``textarea`` (a free-text comment beside the scores) are not ratings:
  they are the rater's comment, read by :mod:`concord.importers.label_studio_labels`;
  so are ``pairwise`` and ``ranker`` results (pair votes and rankings).

Anything else is an error naming the file, the task (its index in the array and its
``id``) and the field as a JSON path (``[3].annotations[0].result[1].value.choices``);
rows come out as :mod:`concord.importers.ratings_csv` columns, with the task index as the
row number, so the import stages and checks them exactly like a CSV.

The array is read one task at a time (:mod:`concord.importers.json_stream`): memory holds
a chunk of the file, one task and one chunk of rows, whatever the file's size (parsed
whole, a 120 MiB export took over 3 GB).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from concord.errors import Problem, ProblemLog
from concord.importers import json_stream
from concord.importers import rating_fields as fields
from concord.importers.safe_load import LoadError
from concord.importers.tables import regular_file_problem, size_text

# A Label Studio export is several times larger than the ratings it holds (ids, times,
# nested objects): 128 MiB holds about a million ratings. Read a task at a time, the
# memory it takes does not grow with the file (bench/bench_label_studio.py).
MAX_BYTES = 128 << 20
EXPECTED = "a JSON array of tasks (Label Studio's JSON export)"
CHUNK_ROWS = 20_000
VALUE_KEYS = {"choices": "choices", "rating": "rating", "number": "number"}
FREE_TEXT = "textarea"  # a comment box: kept as the rater's comment, not a score
# Pair votes and rankings: read by concord.importers.label_studio_labels, not as ratings.
LABEL_TYPES = frozenset({"pairwise", "ranker"})


class TaskError(Exception):
    """One problem in one task: the JSON path of the field and what is wrong."""

    def __init__(self, path: str, message: str) -> None:
        self.path, self.message = path, message
        super().__init__(message)


def read_chunks(path: Path, log: ProblemLog, rows: int = CHUNK_ROWS,
                skipped: Counter | None = None) -> Iterator[tuple]:
    """Yield the ratings of a Label Studio export as ratings-CSV columns, a chunk at a time;
    problems go to ``log`` (a caller that finds it non-empty must not use the rows), and
    the results left out, per type, to ``skipped``."""
    skipped = Counter() if skipped is None else skipped
    if not _readable(path, log):
        return
    chunk: list[tuple] = []
    try:
        for index, (_, task) in enumerate(json_stream.read_array(path, MAX_BYTES, "task",
                                                                 EXPECTED)):
            try:
                chunk.extend(_task_rows(index, task, skipped))
            except TaskError as bad:
                log.add(Problem(str(path), f"task {index}{task_id(task)}: {bad.message}",
                                field=f"[{index}]{bad.path}"))
                continue
            if len(chunk) >= rows:
                yield _columns(chunk)
                chunk = []
    except LoadError as exc:
        log.add(Problem(str(path), exc.message, row=exc.line))
        return
    except OSError as exc:
        log.add(Problem(str(path), f"cannot be read: {exc.strerror or exc}"))
        return
    if chunk:
        yield _columns(chunk)


def _readable(path: Path, log: ProblemLog) -> bool:
    """A regular file within :data:`MAX_BYTES` (else the problem goes to ``log``)."""
    problem = regular_file_problem(path)
    if problem is None and (size := path.stat().st_size) > MAX_BYTES:
        problem = Problem(str(path), f"file larger than the limit of {size_text(MAX_BYTES)} "
                                     f"for this input ({size_text(size)})")
    if problem is not None:
        log.add(problem)
    return problem is None


def task_id(task: Any) -> str:
    if isinstance(task, dict) and isinstance(task.get("id"), int | str):
        return f" (id {str(task['id'])[:40]})"
    return ""


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "true/false",
            type(None): "null"}.get(type(value), "a number")


def _task_rows(index: int, task: Any, skipped: Counter) -> list[tuple]:
    if not isinstance(task, dict):
        raise TaskError("", f"a task must be an object, got {_kind(task)}")
    data = _field(task, "data", dict, "")

    def image() -> tuple[str, str]:  # only a task with ratings names one image
        return _name(data, "prompt_id", ".data"), _name(data, "model", ".data")

    sample = _sample(data.get("sample", 0))
    dimension = data.get("dimension")
    if dimension is not None and (not isinstance(dimension, str)
                                  or fields.name_problem(dimension, required=False)):
        raise TaskError(".data.dimension", f"must be text, got {str(dimension)[:40]!r}")
    out = []
    for a, ann in enumerate(_field(task, "annotations", list, "")):
        where = f".annotations[{a}]"
        if not isinstance(ann, dict):
            raise TaskError(where, f"an annotation must be an object, got {_kind(ann)}")
        if ann.get("was_cancelled") is True:
            continue
        results = [(r, item) for r, item in enumerate(_field(ann, "result", list, where))
                   if not (isinstance(item, dict) and item.get("type") in LABEL_TYPES)]
        if not results:
            continue
        who = rater(ann.get("completed_by"), where + ".completed_by")
        spent = seconds(ann.get("lead_time"), where + ".lead_time")
        for r, item in results:
            if isinstance(item, dict) and item.get("type") == FREE_TEXT:
                continue  # a comment: concord.importers.label_studio_labels reads it
            criterion, value = _result(item, f"{where}.result[{r}]")
            prompt, model = image()
            out.append((index, prompt, model, sample, who, criterion, value, spent,
                        dimension or None))
    return out


def _field(obj: dict, key: str, kind: type, where: str) -> Any:
    if key not in obj:
        raise TaskError(f"{where}.{key}", f"missing field {key!r}")
    if not isinstance(obj[key], kind):
        raise TaskError(f"{where}.{key}", f"{key!r} must be {_kind(kind())}, got "
                                     f"{_kind(obj[key])}")
    return obj[key]


def _name(obj: dict, key: str, where: str) -> str:
    value = _field(obj, key, str, where)
    problem = fields.name_problem(value, required=True)
    if problem:
        raise TaskError(f"{where}.{key}", problem)
    return value


def _sample(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= \
            fields.MAX_SAMPLE:
        raise TaskError(".data.sample", f"not a sample index (a whole number from 0 to "
                                   f"{fields.MAX_SAMPLE}): {str(value)[:40]!r}")
    return value


def rater(value: Any, where: str) -> str:
    if isinstance(value, dict):
        found = value.get("email") or value.get("id")
        if isinstance(found, str) and not fields.name_problem(found, required=True):
            return found
        if isinstance(found, int) and not isinstance(found, bool):
            return f"ls-user-{found}"
        raise TaskError(where, "needs an 'email' (text) or 'id' (number) naming the rater")
    if isinstance(value, int) and not isinstance(value, bool):
        return f"ls-user-{value}"
    raise TaskError(where, f"missing rater: expected a user id or an object with 'email', got "
                      f"{_kind(value)}")


def seconds(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or value < 0:
        raise TaskError(where, f"must be a number of seconds ≥ 0, got {str(value)[:40]!r}")
    return float(value)


def _result(item: Any, where: str) -> tuple[str, float]:
    if not isinstance(item, dict):
        raise TaskError(where, f"a result must be an object, got {_kind(item)}")
    criterion = _name(item, "from_name", where)
    kind = _field(item, "type", str, where)
    if kind not in VALUE_KEYS:
        raise TaskError(f"{where}.type", f"unsupported result type {kind[:40]!r} (Concord reads"
                                         " choices, rating and number as ratings, pairwise and"
                                         " ranker as votes and rankings, textarea as comments)")
    value = _field(_field(item, "value", dict, where), VALUE_KEYS[kind], object,
                   f"{where}.value")
    at = f"{where}.value.{VALUE_KEYS[kind]}"
    if kind == "choices":
        if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], str):
            raise TaskError(at, f"expected exactly one choice, got {str(value)[:60]}")
        problem = fields.number_problem(value[0].strip())
        if problem:
            raise TaskError(at, f"unknown choice {value[0][:40]!r}: a choice must be a value of "
                           "the scale (e.g. \"0.5\")")
        return criterion, float(value[0])
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value):
        raise TaskError(at, f"must be a number, got {str(value)[:40]!r}")
    return criterion, float(value)


def _columns(rows: list[tuple]) -> tuple[list, ...]:
    return tuple(map(list, zip(*rows, strict=True)))
