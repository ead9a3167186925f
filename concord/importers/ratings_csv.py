"""Streaming reader of tidy ratings tables (``import-ratings --format csv``).

Columns ``prompt_id, model, rater, criterion, value`` and optionally ``sample`` (default
0), ``seconds``, ``dimension`` and ``kind`` (Concord's export: ``ranking`` and ``pair``
rows are skipped); other columns are ignored. A ``.tsv`` file is read tab-separated.

The file is read in chunks of :data:`CHUNK_ROWS` rows, so memory does not grow with its
size. Each chunk is checked column by column (the loops run in C); only a chunk with a
problem is checked again row by row, to name the row and the field of every problem.
Bytes that are not UTF-8 are carried through as lone surrogates and reported where they
are, with their field.
"""

from __future__ import annotations

import collections
import csv
import functools
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from concord.errors import Problem, ProblemLog
from concord.importers import rating_fields as fields
from concord.importers.tables import header_text, regular_file_problem

REQUIRED = ("prompt_id", "model", "rater", "criterion", "value")
NAMES = ("prompt_id", "model", "rater", "criterion")
CHUNK_ROWS = 20_000
MAX_LINE_CHARS = 1 << 20  # a longer line is read in pieces (and reported as ragged rows)
_NOT_UTF8 = re.compile("[\udc80-\udcff]")

# (line, prompt_id, model, sample, rater, criterion, value, seconds, dimension)
Row = tuple[int, str, str, int, str, str, float, float | None, str | None]
# The same nine fields as columns: one list per field, the rows of a chunk in order.
Columns = tuple[list, ...]


def read_chunks(path: Path, log: ProblemLog, rows: int = CHUNK_ROWS) -> Iterator[Columns]:
    """Yield the valid rows of a ratings table as columns, a chunk at a time; problems go
    to ``log``.

    Rows with a problem are left out of the chunks: a caller that finds ``log`` non-empty
    at the end must not use what it got.
    """
    problem = regular_file_problem(path)
    if problem is not None:
        log.add(problem)
        return
    with path.open(encoding="utf-8", errors="surrogateescape", newline="") as f:
        lines = iter(functools.partial(f.readline, MAX_LINE_CHARS), "")
        reader = csv.reader(lines, delimiter="\t" if path.suffix.lower() == ".tsv" else ",",
                            strict=True)
        columns = _header(reader, path, log)
        if columns is None:
            return
        last = reader.line_num
        while True:
            try:
                chunk = list(itertools.islice(reader, rows))
            except csv.Error as exc:
                log.add(Problem(str(path), f"malformed CSV: {exc}", row=reader.line_num))
                return
            if not chunk:
                return
            records = list(zip(_first_lines(chunk, last, reader.line_num), chunk, strict=True))
            last = reader.line_num
            good = columns.fast(records)
            if good is None:
                slow = [r for r in (columns.row(n, c, log) for n, c in records) if r]
                good = tuple(map(list, zip(*slow, strict=True))) if slow else None
            if good:
                yield good


def _first_lines(chunk: list[list[str]], before: int, after: int) -> list[int]:
    """The line each row starts on (a row is named by it), from the lines read before and
    after the chunk; a quoted cell with line breaks makes its row span several lines."""
    if after - before == len(chunk):
        return list(range(before + 1, after + 1))
    spans = [1 + sum(_breaks(cell) for cell in cells) for cells in chunk]
    return list(itertools.accumulate([before + 1, *spans[:-1]]))


def _breaks(cell: str) -> int:
    """Line breaks inside a cell, counted as the reader counts lines (\\n, \\r, \\r\\n)."""
    return cell.count("\n") + cell.count("\r") - cell.count("\r\n")


def _header(reader: Any, path: Path, log: ProblemLog) -> _Columns | None:
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        log.add(Problem(str(path), "empty file: expected a header row"))
        return None
    except csv.Error as exc:
        log.add(Problem(str(path), f"malformed CSV: {exc}", row=1))
        return None
    if header:
        header[0] = header[0].removeprefix("\ufeff")
    missing = [c for c in REQUIRED if c not in header]
    # Counted once: header.count() per column took hours on a 100,000-column header.
    twice = sorted(h for h, n in collections.Counter(header).items() if n > 1 and h)
    if _NOT_UTF8.search("".join(header)):
        # Before the columns: a gzip or binary file has no header worth listing.
        log.add(Problem(str(path), "not UTF-8 text: expected a CSV saved as UTF-8 (a "
                                   "compressed or binary file cannot be read)", row=1))
        return None
    if missing or twice:
        why = (f"missing column(s) {missing}" if missing else
               f"column(s) {twice} appear twice")
        log.add(Problem(str(path), f"{why}; found {header_text(header)}", row=1))
        return None
    return _Columns(str(path), header)

_OTHER_KINDS = ("ranking", "pair")  # rows of Concord's export that are not ratings


class _Columns:
    """Where each known column is, and the checks of one chunk."""

    def __init__(self, file: str, header: list[str]) -> None:
        self.file, self.width = file, len(header)
        self.at = {name: i for i, name in enumerate(header)}
        known = {*REQUIRED, "sample", "seconds", "dimension", "kind"}
        self.ignored = [i for i, name in enumerate(header) if name not in known]

    def fast(self, records: list[tuple[int, list[str]]]) -> Columns | None:
        """The chunk's columns if every row is valid (checked per column), else None."""
        cells = [c for _, c in records]
        if set(map(len, cells)) != {self.width}:
            return None
        cols = list(zip(*cells, strict=True))
        # Columns read below reject bad bytes themselves; the others are checked here.
        for i in self.ignored:
            text = "".join(cols[i])
            if not text.isprintable() and _NOT_UTF8.search(text):
                return None
        names = [fields.names(cols[self.at[k]]) for k in NAMES]
        values = fields.floats(cols[self.at["value"]])
        samples = self._optional(cols, "sample", fields.samples, 0)
        seconds = self._optional(cols, "seconds", fields.seconds, None)
        dimension = self._optional(cols, "dimension", fields.dimensions, None)
        kinds = set(cols[self.at["kind"]]) if "kind" in self.at else {""}
        if (any(n is None for n in names) or None in (values, samples, seconds, dimension)
                or not kinds <= {"", "rating"}):
            return None
        prompt, model, rater, criterion = names
        return ([n for n, _ in records], prompt, model, samples, rater, criterion, values,
                seconds, dimension)

    def _optional(self, cols: list[tuple[str, ...]], name: str, parse: Any,
                  default: object) -> list | None:
        if name not in self.at:
            return [default] * len(cols[0])
        return parse(cols[self.at[name]])

    def row(self, line: int, cells: list[str], log: ProblemLog) -> Row | None:
        """One row checked field by field; every problem is logged, None if any."""
        if not cells or all(not c.strip() for c in cells):
            return None  # blank line
        if len(cells) != self.width:
            log.add(Problem(self.file, f"expected {self.width} cells, found {len(cells)}",
                            row=line))
            return None
        before = log.count
        get = {name: cells[i].strip() for name, i in self.at.items()}
        for name, text in get.items():
            if _NOT_UTF8.search(text):
                log.add(_problem(self, line, name, "not UTF-8 text; save the file as UTF-8"))
        if log.count > before:
            return None
        kind = get.get("kind", "")
        if kind in _OTHER_KINDS:
            return None
        if kind not in ("", "rating"):
            log.add(_problem(self, line, "kind",
                             f"{kind!r} is not 'rating' (or 'ranking' / 'pair', skipped)"))
        out = [_field(self, line, name, get, log) for name in (*NAMES, "value", "sample",
                                                                "seconds", "dimension")]
        if log.count > before:
            return None
        prompt, model, rater, criterion, value, sample, seconds, dimension = out
        return line, prompt, model, sample, rater, criterion, value, seconds, dimension


def _problem(cols: _Columns, line: int, name: str, message: str) -> Problem:
    return Problem(cols.file, message, row=line, field=name)


def _field(cols: _Columns, line: int, name: str, get: dict[str, str], log: ProblemLog) -> Any:
    """One field's value, or None after logging what is wrong with it."""
    text = get.get(name, "")
    if name in NAMES or name == "dimension":
        from concord.export import unneutralise  # loads pandas; only this slow path needs it

        text = unneutralise(text)
        message = fields.name_problem(text, required=name != "dimension")
        result: Any = text or None
    elif name == "value":
        message = fields.number_problem(text)
        result = float(text) if message is None else None
    elif name == "sample":
        message = fields.sample_problem(text)
        result = int(text) if text and message is None else 0
    else:  # seconds
        message = fields.number_problem(text, minimum=0) if text else None
        result = float(text) if text and message is None else None
    if message is not None:
        log.add(_problem(cols, line, name, message))
    return result
