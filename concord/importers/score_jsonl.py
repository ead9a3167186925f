"""JSONL score files: what ``score --output`` writes and ``merge-scores`` reads.

One JSON object per line, ``type`` one of:

* ``run``: ``run_id``, ``study``, ``metric``, ``judge``, ``options_key``, ``shard``,
  ``params``, ``host``, ``started_at`` (written when a run starts);
* ``score`` (the default when ``type`` is absent): ``prompt_id``, ``model``, ``metric``,
  ``value`` (a finite number, or null with an ``error``) and optionally ``sample`` (0),
  ``question_id`` (""), ``judge`` (""), ``details`` ({}), ``error``, ``run_id``,
  ``options_key``;
* ``end``: ``run_id``, ``status``, ``n_scored``, ``n_errors``, ``finished_at``.

A resumed task appends to its file, so within one file the last line for a score wins.

Every line goes through the bounded JSON reader every other input uses
(:func:`concord.importers.safe_load.load_json`: no key twice, bounded nesting and number
length), ids and names must be one line of visible text, and every number is bounded
(``sample`` a sample index, counts what SQLite stores, ``value`` a finite float); each
problem names the file, the line and the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concord.errors import InputError, Problem
from concord.importers.safe_load import (
    INT64_MAX,
    MAX_SAMPLE,
    LoadError,
    finite_number,
    id_problem,
    load_json,
    shown,
    whole_number_problem,
)
from concord.importers.tables import TableError, read_text

_STATUSES = ("done", "failed", "cancelled", "stale", "running")


@dataclass(slots=True)
class ScoreFile:
    """A parsed score file: its runs (with their end, where written) and its scores."""

    path: Path
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)


def read_score_file(path: Path) -> ScoreFile:
    """Parse and check every line; InputError lists each problem with line and field."""
    try:
        text = read_text(path)
    except TableError as exc:
        raise InputError(exc.problems) from exc
    out, problems = ScoreFile(path), []
    latest: dict[tuple, dict[str, Any]] = {}
    # split("\n"), not splitlines(): a JSON string may hold U+2028 and other line breaks
    for n, line in enumerate(text.split("\n"), start=1):
        bad = _Bad(str(path), n, problems)
        rec = _object(line, bad)
        if rec is None:
            continue
        kind = rec.get("type", "score")
        if kind == "score":
            row = _score(rec, bad)
            if row is not None:
                latest[_key(row)] = row
        elif kind == "run":
            run = _run(rec, bad)
            if run is not None:
                out.runs.setdefault(run["run_id"], {}).update(run)
        elif kind == "end":
            _end(rec, bad, out.runs)
        else:
            bad("type", f"unknown line type {shown(kind)} (run, score or end)")
    if problems:
        raise InputError(problems)
    out.rows = list(latest.values())
    return out


def _object(line: str, bad: _Bad) -> dict[str, Any] | None:
    """The line's JSON object; None (with a problem unless blank) otherwise."""
    if not line.strip():
        return None
    try:
        rec = load_json(line)
    except LoadError as exc:
        bad(None, exc.message)
        return None
    if not isinstance(rec, dict):
        bad(None, f"expected a JSON object, got {type(rec).__name__}")
        return None
    return rec


def _key(row: dict[str, Any]) -> tuple:
    return (row["prompt_id"], row["model"], row["sample"], row["metric"], row["judge"],
            row["question_id"])


class _Bad:
    """Records a problem at one line of a file."""

    def __init__(self, file: str, line: int, problems: list[Problem]) -> None:
        self.file, self.line, self.problems = file, line, problems

    def __call__(self, field_name: str | None, message: str) -> None:
        self.problems.append(Problem(self.file, message, row=self.line, field=field_name))


def _text(rec: dict[str, Any], name: str, bad: _Bad, *, required: bool = True,
          default: str = "") -> str | None:
    """An id or name: text (a whole number is taken as its digits), one line, bounded."""
    value = rec.get(name, None if required else default)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= INT64_MAX:
        value = str(value)
    if not isinstance(value, str) or (required and not value.strip()):
        if value is None:
            bad(name, "missing")
        else:
            bad(name, f"expected a {'non-empty ' if required else ''}string, got "
                      f"{shown(value)}")
        return None
    problem = id_problem(value)
    if problem is not None:
        bad(name, problem)
        return None
    return value.strip()


def _optional_text(rec: dict[str, Any], name: str, bad: _Bad) -> None:
    """A field that may be absent or null, else an id or name."""
    if rec.get(name) is not None:
        _text(rec, name, bad, required=False)


def _count(rec: dict[str, Any], name: str, bad: _Bad, high: int = INT64_MAX) -> None:
    """A field that may be absent or null, else a whole number from 0 to ``high``."""
    if rec.get(name) is not None:
        problem = whole_number_problem(rec[name], 0, high)
        if problem is not None:
            bad(name, problem)


def _score(rec: dict[str, Any], bad: _Bad) -> dict[str, Any] | None:
    before = len(bad.problems)
    row: dict[str, Any] = {k: _text(rec, k, bad) for k in ("prompt_id", "model", "metric")}
    row["judge"] = _text(rec, "judge", bad, required=False)
    row["question_id"] = _text(rec, "question_id", bad, required=False)
    sample = rec.get("sample", 0)
    if (problem := whole_number_problem(sample, 0, MAX_SAMPLE)) is not None:
        bad("sample", problem)
    value, error = rec.get("value", "missing"), rec.get("error")
    if value is not None:
        value = _value(value, bad)
    if error is not None and not isinstance(error, str):
        bad("error", f"expected a string or null, got {shown(error)}")
    if rec.get("value", "missing") is None and not error:
        bad("error", "a score without a value needs the error that explains it")
    details = rec.get("details", {})
    if not isinstance(details, dict):
        bad("details", f"expected an object, got {type(details).__name__}")
    for name in ("run_id", "options_key"):
        _optional_text(rec, name, bad)
    if len(bad.problems) > before:
        return None
    row.update(sample=sample, value=value, error=error, details=details,
               run_id=rec.get("run_id"), options_key=rec.get("options_key"), file=bad.file,
               row=bad.line)
    return row


def _value(value: Any, bad: _Bad) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        bad("value", f"expected a finite number or null, got {shown(value)}")
        return None
    try:
        return finite_number(value)  # 1e400 is inf, a 400-digit integer overflows a float
    except ValueError:
        bad("value", f"expected a finite number or null, got {shown(value)}")
        return None


def _run(rec: dict[str, Any], bad: _Bad) -> dict[str, Any] | None:
    before = len(bad.problems)
    run = {k: _text(rec, k, bad) for k in ("run_id", "metric", "started_at")}
    run["judge"] = _text(rec, "judge", bad, required=False)
    run["study"] = _text(rec, "study", bad, required=False)
    for name in ("options_key", "shard", "host"):
        _optional_text(rec, name, bad)
    if not isinstance(rec.get("params", {}), dict):
        bad("params", "expected an object")
    if len(bad.problems) > before:
        return None
    keep = ("options_key", "shard", "params", "host")
    return {**run, **{k: rec[k] for k in keep if rec.get(k) is not None}}


def _end(rec: dict[str, Any], bad: _Bad, runs: dict[str, dict[str, Any]]) -> None:
    run_id, status = rec.get("run_id"), rec.get("status")
    before = len(bad.problems)
    for name in ("n_scored", "n_errors"):
        _count(rec, name, bad)
    _optional_text(rec, "finished_at", bad)
    if not isinstance(run_id, str) or run_id not in runs:
        bad("run_id", f"an end line for run {shown(run_id)}, which has no run line before it")
    elif status not in _STATUSES:
        bad("status", f"expected one of {', '.join(_STATUSES)}, got {shown(status)}")
    elif len(bad.problems) == before:
        counts = {k: rec[k] for k in ("n_scored", "n_errors", "finished_at")
                  if rec.get(k) is not None}
        runs[run_id].update(status=status, **counts)
