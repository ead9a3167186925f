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
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concord.errors import InputError, Problem
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
    for n, line in enumerate(text.splitlines(), start=1):
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
            bad("type", f"unknown line type {kind!r} (run, score or end)")
    if problems:
        raise InputError(problems)
    out.rows = list(latest.values())
    return out


def _object(line: str, bad: _Bad) -> dict[str, Any] | None:
    """The line's JSON object; None (with a problem unless blank) otherwise."""
    if not line.strip():
        return None
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        bad(None, f"malformed JSON: {exc.msg} (column {exc.colno})")
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
    value = rec.get(name, None if required else default)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or (required and not value.strip()):
        if value is None:
            bad(name, "missing")
        else:
            bad(name, f"expected a {'non-empty ' if required else ''}string, got {value!r}")
        return None
    return value.strip()


def _score(rec: dict[str, Any], bad: _Bad) -> dict[str, Any] | None:
    before = len(bad.problems)
    row: dict[str, Any] = {k: _text(rec, k, bad) for k in ("prompt_id", "model", "metric")}
    row["judge"] = _text(rec, "judge", bad, required=False)
    row["question_id"] = _text(rec, "question_id", bad, required=False)
    sample = rec.get("sample", 0)
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        bad("sample", f"expected a whole number >= 0, got {sample!r}")
    value, error = rec.get("value", "missing"), rec.get("error")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                              or not math.isfinite(value)):
        bad("value", f"expected a finite number or null, got {value!r}")
    if error is not None and not isinstance(error, str):
        bad("error", f"expected a string or null, got {error!r}")
    if value is None and not error:
        bad("error", "a score without a value needs the error that explains it")
    details = rec.get("details", {})
    if not isinstance(details, dict):
        bad("details", f"expected an object, got {type(details).__name__}")
    for name in ("run_id", "options_key"):
        if rec.get(name) is not None and not isinstance(rec.get(name), str):
            bad(name, f"expected a string or null, got {rec.get(name)!r}")
    if len(bad.problems) > before:
        return None
    row.update(sample=sample, value=None if value is None else float(value), error=error,
               details=details, run_id=rec.get("run_id"), options_key=rec.get("options_key"),
               file=bad.file, row=bad.line)
    return row


def _run(rec: dict[str, Any], bad: _Bad) -> dict[str, Any] | None:
    before = len(bad.problems)
    run = {k: _text(rec, k, bad) for k in ("run_id", "metric", "started_at")}
    run["judge"] = _text(rec, "judge", bad, required=False)
    run["study"] = _text(rec, "study", bad, required=False)
    if not isinstance(rec.get("params", {}), dict):
        bad("params", "expected an object")
    if len(bad.problems) > before:
        return None
    keep = ("options_key", "shard", "params", "host")
    return {**run, **{k: rec[k] for k in keep if rec.get(k) is not None}}


def _end(rec: dict[str, Any], bad: _Bad, runs: dict[str, dict[str, Any]]) -> None:
    run_id, status = rec.get("run_id"), rec.get("status")
    if not isinstance(run_id, str) or run_id not in runs:
        bad("run_id", f"an end line for run {run_id!r}, which has no run line before it")
    elif status not in _STATUSES:
        bad("status", f"expected one of {', '.join(_STATUSES)}, got {status!r}")
    else:
        counts = {k: rec[k] for k in ("n_scored", "n_errors", "finished_at") if k in rec}
        runs[run_id].update(status=status, **counts)
