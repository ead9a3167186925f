"""Helpers shared by CLI commands: opening the database, progress bars, tables."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from sqlite_utils import Database
from tqdm import tqdm

from concord.config import Settings
from concord.store.db import open_db


def db_for(settings: Settings) -> Database:
    """Open the database named by ``--db`` / ``CONCORD_DB`` (created if missing)."""
    return open_db(settings.database)


def whole_number_arg(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high`` (an id beyond what
    SQLite stores would otherwise end in a traceback)."""
    from concord.importers.safe_load import whole_number

    def parse(text: str) -> int:
        try:
            return whole_number(text, low, high)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def progress_factory(total: int, desc: str) -> tqdm:
    """A progress bar on stderr (hidden when stderr is not a terminal and total is small)."""
    return tqdm(total=total, desc=desc, unit="img", file=sys.stderr, leave=False,
                disable=total < 50 and not sys.stderr.isatty())


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> None:
    """Print dict rows as an aligned plain-text table."""
    if not rows:
        print("(none)")
        return
    cols = list(columns or rows[0].keys())
    text = [[_cell(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(t[i]) for t in text)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip())
    for t in text:
        print("  ".join(v.ljust(w) for v, w in zip(t, widths, strict=True)).rstrip())


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
