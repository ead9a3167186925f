"""Human labels in and out: import-ratings (ImagenHub TSV, tidy CSV) and exports.

The import itself lives in :mod:`concord.services.ratings_import` (the readers in
``concord.importers``); it is re-exported here for the callers that know it by this name.
"""

from __future__ import annotations

import pandas as pd
from sqlite_utils import Database

from concord import export
from concord.errors import ConcordError
from concord.services.ratings_import import RatingsImport, import_ratings  # noqa: F401
from concord.store import frames
from concord.store import studies as study_store


def ratings(db: Database, study_name: str) -> pd.DataFrame:
    """Current ratings of a study as a tidy frame."""
    return frames.ratings_frame(db, study_store.get_study(db, study_name).id)


def rankings(db: Database, study_name: str) -> pd.DataFrame:
    """Current rankings of a study as a tidy frame (one row per ranked image)."""
    return frames.rankings_frame(db, study_store.get_study(db, study_name).id)


def export_bytes(db: Database, study_name: str, fmt: str) -> bytes:
    """The study's labels in ``csv``, ``jsonl`` or ``parquet``."""
    frame = export.labels_frame(ratings(db, study_name), rankings(db, study_name))
    writers = {"csv": export.to_csv_bytes, "jsonl": export.to_jsonl_bytes,
               "parquet": export.to_parquet_bytes}
    if fmt not in writers:
        raise ConcordError(f"unknown export format {fmt!r} (use {', '.join(writers)})")
    return writers[fmt](frame)
