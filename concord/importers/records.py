"""Streaming reader of label tables (pair votes, rankings): CSV, TSV, JSON or Parquet.

Yields ``(line, record)`` one row at a time, so memory does not grow with the file: a CSV
row is a dict of its cells (text), a JSON Lines row the object itself (strings, numbers,
``null``, and lists where a field takes one). Problems (a malformed line, ragged cells,
bytes that are not UTF-8, a line longer than :data:`MAX_LINE_CHARS`, a JSON line that is
not an object or breaks the bounds of :func:`concord.importers.safe_load.load_json`) go
to the caller's :class:`~concord.errors.ProblemLog` with the file and line; the row is
left out. The format is the file's suffix: ``.jsonl``/``.ndjson`` (JSON Lines), ``.json``
(one JSON array of objects, as arena battle logs are published, read an object at a time;
its rows are the objects, numbered from 1; a ``.json`` file that starts with ``{`` is JSON
Lines), ``.parquet`` (:mod:`concord.importers.parquet_rows`: the published datasets of the
Hugging Face Hub, their image columns left unread), ``.tsv`` (tab-separated), anything else
CSV.
"""

from __future__ import annotations

import csv
import functools
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from concord.errors import Problem, ProblemLog
from concord.importers import json_stream, parquet_rows
from concord.importers.safe_load import LoadError, load_json
from concord.importers.tables import header_text, regular_file_problem

MAX_LINE_CHARS = 1 << 20  # a longer line is refused (no label row comes near it)
_NOT_UTF8 = re.compile("[\udc80-\udcff]")
JSON_SUFFIXES = frozenset({".jsonl", ".ndjson"})

Record = dict[str, Any]
HeaderCheck = Callable[[list[str]], str | None]


# A JSON array is read an element at a time (bounded memory), so the file's size is not
# bounded beyond what a long import takes; each element is (json_stream.MAX_ITEM_BYTES).
MAX_ARRAY_BYTES = 1 << 40


def is_jsonl(path: Path) -> bool:
    """Whether ``path`` is read as JSON Lines (by its suffix)."""
    return path.suffix.lower() in JSON_SUFFIXES


def is_json(path: Path) -> bool:
    """Whether ``path`` is read as JSON of either kind (JSON Lines or a ``.json`` array)."""
    return is_jsonl(path) or path.suffix.lower() == ".json"


def read_records(path: Path, log: ProblemLog,
                 check: HeaderCheck = lambda header: None) -> Iterator[tuple[int, Record]]:
    """The rows of ``path`` with the line each starts on; problems go to ``log``.

    ``check``: what is wrong with a CSV header (e.g. a missing column), or None; a header
    it refuses is one problem and no rows. JSON Lines rows have no header: the caller
    checks each row's fields.
    """
    problem = regular_file_problem(path)
    if problem is not None:
        log.add(problem)
        return
    if is_jsonl(path) or (path.suffix.lower() == ".json" and not _starts_array(path)):
        yield from _jsonl(path, log)
    elif path.suffix.lower() == ".json":
        yield from _json_array(path, log)
    elif path.suffix.lower() == ".parquet":
        yield from parquet_rows.read(path, log, check)
    else:
        yield from _csv(path, log, check)


def _jsonl(path: Path, log: ProblemLog) -> Iterator[tuple[int, Record]]:
    file = str(path)
    with path.open("rb") as f:
        for n, raw in enumerate(iter(functools.partial(f.readline, MAX_LINE_CHARS + 1), b""),
                                start=1):
            if len(raw) > MAX_LINE_CHARS and not raw.endswith(b"\n"):
                log.add(Problem(file, f"line longer than {MAX_LINE_CHARS:,} bytes", row=n))
                return  # the rest of that line would be read as new lines
            try:
                text = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                log.add(Problem(file, f"not UTF-8 text (byte 0x{raw[exc.start]:02x}); save"
                                      " the file as UTF-8", row=n))
                continue
            if not text.strip():
                continue
            try:
                obj = load_json(text)
            except LoadError as exc:
                log.add(Problem(file, exc.message, row=n))
                continue
            if not isinstance(obj, dict):
                log.add(Problem(file, f"expected a JSON object, got {type(obj).__name__}",
                                row=n))
                continue
            yield n, obj


def _starts_array(path: Path) -> bool:
    """Whether the file's first character after a BOM and white space is ``[``."""
    with path.open("rb") as f:
        head = f.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    return head.startswith(b"[")


def _json_array(path: Path, log: ProblemLog) -> Iterator[tuple[int, Record]]:
    """The objects of a JSON array, numbered from 1 as its rows (a published array is often
    one line: its line numbers would not tell the objects apart)."""
    file, row = str(path), 0
    try:
        for row, (_, obj) in enumerate(json_stream.read_array(
                path, MAX_ARRAY_BYTES, "object", "a JSON array of objects"), start=1):
            if not isinstance(obj, dict):
                log.add(Problem(file, f"expected a JSON object, got {type(obj).__name__}",
                                row=row))
                continue
            yield row, obj
    except LoadError as exc:  # the rest of the array cannot be read reliably
        where = f"line {exc.line} of the file, " if exc.line else ""
        log.add(Problem(file, f"{exc.message} ({where}at object {row + 1})"))


def _csv(path: Path, log: ProblemLog, check: HeaderCheck) -> Iterator[tuple[int, Record]]:
    file = str(path)
    with path.open(encoding="utf-8", errors="surrogateescape", newline="") as f:
        lines = iter(functools.partial(f.readline, MAX_LINE_CHARS), "")
        reader = csv.reader(lines, delimiter="\t" if path.suffix.lower() == ".tsv" else ",",
                            strict=True)
        header = _header(reader, file, log, check)
        if header is None:
            return
        while True:
            start = reader.line_num + 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                log.add(Problem(file, f"malformed CSV: {exc}", row=reader.line_num))
                return
            if not cells or all(not c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                log.add(Problem(file, f"expected {len(header)} cells, found {len(cells)}",
                                row=start))
                continue
            bad = next((h for h, c in zip(header, cells, strict=True) if _NOT_UTF8.search(c)),
                       None)
            if bad is not None:
                log.add(Problem(file, "not UTF-8 text; save the file as UTF-8", row=start,
                                field=bad))
                continue
            yield start, dict(zip(header, cells, strict=True))


def _header(reader: Any, file: str, log: ProblemLog, check: HeaderCheck) -> list[str] | None:
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        log.add(Problem(file, "empty file: expected a header row"))
        return None
    except csv.Error as exc:
        log.add(Problem(file, f"malformed CSV: {exc}", row=1))
        return None
    if header:
        header[0] = header[0].removeprefix("\ufeff")
    if _NOT_UTF8.search("".join(header)):
        log.add(Problem(file, "not UTF-8 text: expected a CSV saved as UTF-8 (a compressed "
                              "or binary file cannot be read)", row=1))
        return None
    twice = sorted(h for h, n in Counter(header).items() if n > 1 and h)
    why = f"column(s) {twice} appear twice" if twice else check(header)
    if why:
        log.add(Problem(file, f"{why}; found {header_text(header)}", row=1))
        return None
    return header
