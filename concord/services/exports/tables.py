"""Exports beside the labels table: revision history, adjudicated values, and the file
type of a table export chosen by the output's suffix.

The labels export itself is :mod:`concord.services.exports.labels`; the Hugging Face and
Label Studio exports are :mod:`concord.services.exports.hf_dataset` and
:mod:`concord.services.exports.label_studio`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from sqlite_utils import Database

from concord import export
from concord.errors import ConcordError
from concord.services.exclusions import without_excluded
from concord.store import exclusions, history
from concord.store import studies as study_store

TABLE_TYPES = ("csv", "jsonl", "parquet")
_WRITERS = {"csv": export.to_csv_bytes, "jsonl": export.to_jsonl_bytes,
            "parquet": export.to_parquet_bytes}
_SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet",
             ".pq": "parquet"}


def table_type(output: str | Path | None, given: str | None = None) -> str:
    """The file type of a table export: ``given`` (``--as``), else the suffix of
    ``output`` (``.csv``, ``.jsonl``, ``.parquet``), else CSV (stdout).

    Raises:
        ConcordError: a suffix that names none of them.
    """
    if given is not None:
        if given not in _WRITERS:
            raise ConcordError(f"unknown table type {given!r} (use {', '.join(TABLE_TYPES)})")
        return given
    if output is None:
        return "csv"
    suffix = Path(output).suffix.lower()
    if suffix not in _SUFFIXES:
        raise ConcordError(f"cannot tell the file type of {output} from its suffix "
                           f"{suffix or '(none)'!r}: end it in .csv, .jsonl or .parquet, "
                           "or pass --as csv|jsonl|parquet")
    return _SUFFIXES[suffix]


def table_bytes(frame: pd.DataFrame, kind: str) -> bytes:
    """``frame`` as CSV (neutralised), JSON Lines or Parquet."""
    return _WRITERS[kind](frame)


def history_frame(db: Database, study_name: str, *,
                  include_excluded: bool = False) -> pd.DataFrame:
    """Every revision of every rating, ranked image and pair judgment of the study
    (:data:`concord.store.history.COLUMNS`); undos have no value. Excluded raters are
    left out unless ``include_excluded``."""
    study = study_store.get_study(db, study_name)
    frame = history.revisions_frame(db, study.id, study.name)
    gone = set() if include_excluded else exclusions.excluded_names(db, study.id)
    return without_excluded(frame, gone)
