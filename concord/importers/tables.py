"""Reading CSV, JSON and JSONL inputs with errors that name file, row and field."""

from __future__ import annotations

import csv
import io
import os
import stat
from pathlib import Path
from typing import Any

from concord.errors import Problem
from concord.importers.safe_load import MAX_TABLE_BYTES, LoadError, load_json


class TableError(Exception):
    """Problems found while reading a table; carries every one of them."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


def regular_file_problem(path: Path, label: str | None = None) -> Problem | None:
    """Why ``path`` cannot be read as an input file, or None when it is a regular file.

    Opening a named pipe (FIFO) or a device blocks or never ends, so every input is checked
    with ``stat`` before it is opened; a symlink loop is reported, not raised.
    """
    label = label or str(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return Problem(label, "file not found")
    except OSError as exc:  # ELOOP (symlink loop), ENAMETOOLONG, EACCES...
        return Problem(label, f"cannot be read: {exc.strerror or exc}")
    except ValueError as exc:  # a NUL character in the path
        return Problem(label, f"cannot be read: {exc}")
    if stat.S_ISDIR(mode):
        return Problem(label, "is a directory, expected a file")
    if not stat.S_ISREG(mode):
        return Problem(label, "is not a regular file (a pipe, socket or device?)")
    return None


def readable_file_problem(path: Path, label: str | None = None) -> Problem | None:
    """:func:`regular_file_problem`, then whether the file opens for reading (permissions):
    for readers that want to fail on a bad path before loading anything heavy."""
    label = label or str(path)
    problem = regular_file_problem(path, label)
    if problem is not None:
        return problem
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        return Problem(label, f"cannot be read: {exc.strerror or exc}")
    return None


def read_bytes(path: Path, limit: int = MAX_TABLE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; TableError otherwise."""
    problem = regular_file_problem(path)
    if problem is not None:
        raise TableError([problem])
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)  # +1: a file that grew since stat is caught too
    except OSError as exc:
        raise TableError([Problem(str(path), f"cannot be read: {exc.strerror or exc}")]) from exc
    if len(data) > limit:
        raise TableError([Problem(str(path), f"file larger than the limit of {size_text(limit)} "
                                             f"for this input ({size_text(path.stat().st_size)})")])
    return data


def size_text(n: int) -> str:
    """A file size for messages: ``128.0 MiB`` or ``64 bytes``."""
    return f"{n / (1 << 20):,.1f} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def read_text(path: Path, limit: int = MAX_TABLE_BYTES) -> str:
    """The file as UTF-8 text (a BOM is allowed); TableError for a missing, non-regular,
    too large or non-UTF-8 file."""
    label = str(path)
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TableError([Problem(label, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                                         f"offset {exc.start}); save the file as UTF-8",
                                  row=line)]) from exc


def header_text(header: list[str], shown: int = 20) -> str:
    """A file's columns for an error message: the first ``shown`` of them, and how many
    there are when there are more (a header of 100,000 columns stays one short line)."""
    if len(header) <= shown:
        return repr(header)
    return f"{len(header)} columns, the first {shown}: {header[:shown]!r}"


def read_csv_rows(path: Path, required: set[str]) -> list[tuple[int, dict[str, str]]]:
    """Rows of a CSV (or TSV, by extension) as (line number, row dict).

    Raises:
        TableError: missing columns, ragged rows, or bad encoding.
    """
    text = read_text(path)
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise TableError([Problem(str(path), "empty file: expected a header row")]) from None
    except csv.Error as exc:
        raise TableError([Problem(str(path), f"malformed CSV: {exc}", row=1)]) from exc
    header = [h.strip() for h in header]
    missing = required - set(header)
    if missing:
        raise TableError([Problem(str(path), f"missing column(s) {sorted(missing)}; found "
                                             f"{header_text(header)}", row=1)])
    return _csv_body(path, reader, header)


def _csv_body(path: Path, reader: Any, header: list[str]) -> list[tuple[int, dict[str, str]]]:
    rows: list[tuple[int, dict[str, str]]] = []
    problems: list[Problem] = []
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append(Problem(str(path), f"malformed CSV: {exc}", row=reader.line_num))
            break
        if not cells or all(not c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            problems.append(Problem(str(path), f"expected {len(header)} cells, found "
                                               f"{len(cells)}", row=reader.line_num))
            continue
        rows.append((reader.line_num, dict(zip(header, cells, strict=True))))
    if problems:
        raise TableError(problems)
    return rows


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Objects of a JSON Lines file as (line number, object); blank lines skipped."""
    text = read_text(path)
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    # split("\n"), not splitlines(): a JSON string may hold U+2028 and other line breaks
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = load_json(line)
        except LoadError as exc:
            problems.append(Problem(str(path), exc.message, row=n))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(str(path), f"expected a JSON object, got "
                                               f"{type(obj).__name__}", row=n))
            continue
        rows.append((n, obj))
    if problems:
        raise TableError(problems)
    return rows


def read_json(path: Path) -> Any:
    """A whole JSON document; TableError with the line of a syntax error."""
    text = read_text(path)
    try:
        return load_json(text)
    except LoadError as exc:
        raise TableError([Problem(str(path), exc.message, row=exc.line)]) from exc


def read_records(path: Path, required: set[str]) -> list[tuple[int, dict[str, Any]]]:
    """CSV/TSV or JSONL by extension, with the required fields checked per row."""
    suffix = path.suffix.lower()
    if suffix in {".csv", ".tsv"}:
        return read_csv_rows(path, required)
    if suffix in {".jsonl", ".ndjson"}:
        rows = read_jsonl(path)
        problems = [
            Problem(str(path), f"missing field '{f}'", row=n, field=f)
            for n, obj in rows
            for f in sorted(required - set(obj))
        ]
        if problems:
            raise TableError(problems)
        return rows
    raise TableError([Problem(str(path), f"unsupported file type '{suffix}' (use .csv, .tsv "
                                         "or .jsonl)")])
