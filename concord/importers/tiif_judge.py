"""Reader for TIIF-Bench judge outputs (one JSON object per image, yes/no questions).

Accepts the concatenated JSONL files (one object per line, with ``source_path``) and the
released per-image tree ``<root>/<model>/<dimension>/<long|short>/<idx>.json``.
Each object has ``attribute, desc, jsonl_file, line_idx, questions, gt_answers,
model_pred, model_output``. The T2I model comes from ``source_path`` (or the tree path,
or a ``model`` field); the variant from ``desc`` and the path, which must agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd

from concord.errors import InputError, Problem
from concord.importers.safe_load import (
    INT64_MAX,
    MAX_DOCUMENT_BYTES,
    LoadError,
    load_json,
    whole_number_problem,
)
from concord.importers.tables import TableError, read_bytes, regular_file_problem

REQUIRED = ("attribute", "desc", "line_idx", "questions", "gt_answers", "model_pred")
COLUMNS = ["model", "dimension", "variant", "prompt_index", "question_id", "question",
           "answer", "pred", "correct"]
VARIANTS = {"short_description": "short", "long_description": "long"}
MISMATCH = ("error", "truncate")


class JudgeFileError(InputError, ValueError):
    """One or more problems in TIIF judge output files; ``problems`` lists them all."""


def _path_parts(path_text: str) -> dict[str, str]:
    """model / dimension / variant from ``.../<model>/<dimension>/<long|short>/<idx>.json``."""
    parts = Path(path_text).parts
    if len(parts) < 4 or parts[-2] not in ("short", "long"):
        return {}
    return {"model": parts[-4], "dimension": parts[-3], "variant": parts[-2]}


def _record_rows(obj: object, where: tuple[str, int], from_path: dict[str, str],
                 on_length_mismatch: str) -> tuple[list[tuple], list[Problem]]:
    file, line = where

    def problem(message: str, field: str | None = None) -> list[Problem]:
        return [Problem(file, message, row=line, field=field)]

    if not isinstance(obj, dict):
        return [], problem(f"expected a JSON object, got {type(obj).__name__}")
    shape = _shape_problems(obj, problem)
    if shape:
        return [], shape
    lists = {k: obj[k] for k in ("questions", "gt_answers", "model_pred")}
    sizes = {k: len(v) for k, v in lists.items()}
    if len(set(sizes.values())) > 1 and on_length_mismatch == "error":
        return [], problem(f"list lengths differ {sizes}; pass on_length_mismatch='truncate' "
                           "to keep the common prefix as the reference's zip() does",
                           "gt_answers")
    variant = VARIANTS.get(obj["desc"])
    if variant is None:
        return [], problem(f"unknown desc {obj['desc']!r}; expected one of {list(VARIANTS)}",
                           "desc")
    meta = {**from_path, **_path_parts(str(obj.get("source_path", "")))}
    model = obj.get("model", meta.get("model"))
    if not model:
        return [], problem("no T2I model: need 'source_path' (…/<model>/<dim>/<variant>/"
                           "<idx>.json) or a 'model' field", "source_path")
    for key, value in (("dimension", obj["attribute"]), ("variant", variant)):
        if key in meta and meta[key] != value:
            return [], problem(f"path says {key} {meta[key]!r} but the record says "
                               f"{value!r}", "attribute" if key == "dimension" else "desc")
    n = min(sizes.values())
    rows = [(model, obj["attribute"], variant, obj["line_idx"], q, lists["questions"][q],
             lists["gt_answers"][q], lists["model_pred"][q],
             lists["gt_answers"][q].strip().lower() == lists["model_pred"][q].strip().lower())
            for q in range(n)]
    return rows, []


def _shape_problems(obj: dict, problem: Callable[..., list[Problem]]) -> list[Problem]:
    """Missing fields, a ``line_idx`` SQLite cannot store, lists that are not of strings."""
    missing = [k for k in REQUIRED if k not in obj]
    if missing:
        return [p for k in missing for p in problem("missing field", k)]
    bad_index = whole_number_problem(obj["line_idx"], 0, INT64_MAX)
    if bad_index is not None:
        return problem(bad_index, "line_idx")
    for key in ("questions", "gt_answers", "model_pred"):
        value = obj[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return problem("must be a list of strings", key)
    return []


def _frame(rows: list[tuple]) -> pd.DataFrame:
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.astype({"prompt_index": int, "question_id": int, "correct": bool})


def read_tiif_judge_jsonl(path: Path, *, on_length_mismatch: str = "error") -> pd.DataFrame:
    """Read a concatenated TIIF judge-output JSONL file into one row per question.

    Args:
        path: JSONL file, one judge record per line.
        on_length_mismatch: ``"error"`` (default) reports records whose ``questions``,
            ``gt_answers`` and ``model_pred`` differ in length; ``"truncate"`` keeps the
            first ``min`` entries, like the reference's ``zip()`` (the released GPT-4o and
            QwenVL files have no such record).

    Returns:
        Columns ``model, dimension, variant ("short"/"long"), prompt_index (line_idx),
        question_id (0-based), question, answer (ground truth), pred, correct``, where
        ``correct = answer.strip().lower() == pred.strip().lower()``.

    Raises:
        JudgeFileError: Every problem (file, line, field): malformed JSON, missing or
            mistyped fields, length mismatch, unknown ``desc``, no model, path/record
            disagreement, empty file.
    """
    if on_length_mismatch not in MISMATCH:
        raise ValueError(f"on_length_mismatch must be one of {MISMATCH}, "
                         f"got {on_length_mismatch!r}")
    path = Path(path)
    rows: list[tuple] = []
    problems: list[Problem] = []
    for number, raw in _lines(path):
        try:
            obj = load_json(raw.decode("utf-8"))
        except (LoadError, UnicodeDecodeError) as exc:
            problems.append(Problem(str(path), _json_problem(exc), row=number))
            continue
        got, bad = _record_rows(obj, (str(path), number), {}, on_length_mismatch)
        rows.extend(got)
        problems.extend(bad)
    if not rows and not problems:
        problems.append(Problem(str(path), "empty file: no judge record", row=1))
    if problems:
        raise JudgeFileError(problems)
    return _frame(rows)


def read_tiif_judge_tree(root: Path, *, on_length_mismatch: str = "error") -> pd.DataFrame:
    """Read the released per-image tree ``<root>/<model>/<dimension>/<variant>/<idx>.json``.

    Same output and errors as :func:`read_tiif_judge_jsonl`; the model, dimension and
    variant come from each file's path (row numbers in errors are 1).
    """
    if on_length_mismatch not in MISMATCH:
        raise ValueError(f"on_length_mismatch must be one of {MISMATCH}, "
                         f"got {on_length_mismatch!r}")
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"not a directory: {root}")
    paths = sorted(root.glob("*/*/*/*.json"), key=lambda p: (p.parts[:-1], _index(p)))
    rows: list[tuple] = []
    problems: list[Problem] = []
    for path in paths:
        try:
            obj = load_json(read_bytes(path, MAX_DOCUMENT_BYTES).decode("utf-8"))
        except TableError as exc:  # not a regular file, too large
            problems.extend(exc.problems)
            continue
        except (LoadError, UnicodeDecodeError) as exc:
            problems.append(Problem(str(path), _json_problem(exc), row=1))
            continue
        meta = _path_parts(str(path.relative_to(root)))
        got, bad = _record_rows(obj, (str(path), 1), meta, on_length_mismatch)
        rows.extend(got)
        problems.extend(bad)
    if not paths:
        problems.append(Problem(str(root), "no <model>/<dimension>/<variant>/<idx>.json files"))
    if problems:
        raise JudgeFileError(problems)
    return _frame(rows)


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Numbered non-blank lines of a regular file (a pipe would block the read for ever)."""
    not_regular = regular_file_problem(path)
    if not_regular is not None:
        raise JudgeFileError([not_regular])
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                yield number, raw


def _json_problem(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    return exc.message if isinstance(exc, LoadError) else str(exc)


def _index(path: Path) -> tuple[int, str]:
    return (int(path.stem), "") if path.stem.isdigit() else (1 << 62, path.stem)
