"""Rows of a Parquet file (``.parquet``), as datasets on the Hugging Face Hub are published
(GenAI-Bench's votes, for one), for ``import-pairs`` and ``import-rankings``.

The file is read a record batch at a time and only its columns of plain values (text,
numbers, booleans, times, and lists of them): a column of images (bytes, or a struct of
bytes and path, as Hugging Face's ``Image`` feature stores them) is never read, so the
memory stays that of a batch of labels however large the images are. Rows are numbered
from 1 in the file's order; a file that is not Parquet, a header that lacks columns or
names one twice, and a file broken part-way are each one problem with the file.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from concord.errors import Problem, ProblemLog
from concord.importers.tables import header_text

BATCH_ROWS = 5_000


def read(path: Path, log: ProblemLog,
         check: Callable[[list[str]], str | None]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row, record)`` of every row; problems go to ``log``."""
    import pyarrow as pa  # only a Parquet import pays for it
    import pyarrow.parquet as pq

    file = str(path)
    try:
        handle = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        log.add(Problem(file, f"not a readable Parquet file: {_first_line(exc)}"))
        return
    names = list(handle.schema_arrow.names)
    twice = sorted(n for n, k in Counter(names).items() if k > 1)
    why = f"column(s) {twice} appear twice" if twice else check(names)
    if why:
        log.add(Problem(file, f"{why}; found {header_text(names)}"))
        return
    columns = [f.name for f in handle.schema_arrow if _plain(f.type)]
    row = 0
    try:
        for batch in handle.iter_batches(batch_size=BATCH_ROWS, columns=columns):
            for record in batch.to_pylist():
                row += 1
                yield row, {k: _value(v) for k, v in record.items()}
    except (pa.ArrowException, OSError) as exc:
        log.add(Problem(file, f"cannot be read after row {row}: {_first_line(exc)}"))


def _plain(kind: Any) -> bool:
    """Whether a column holds values a label can use (not bytes, structs or maps)."""
    import pyarrow.types as t

    if t.is_dictionary(kind):
        return _plain(kind.value_type)
    if t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind):
        return _plain(kind.value_type)
    return bool(t.is_string(kind) or t.is_large_string(kind) or t.is_integer(kind)
                or t.is_floating(kind) or t.is_boolean(kind) or t.is_timestamp(kind)
                or t.is_date(kind) or t.is_decimal(kind) or t.is_null(kind))


def _value(value: Any) -> Any:
    """A cell as the label readers take it: times as ISO 8601 text (a time without a zone
    is UTC, as in a CSV), decimals as floats, lists element by element."""
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
