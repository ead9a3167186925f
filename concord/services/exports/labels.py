"""Human labels out: a study's current ratings, rankings, pair judgments and checklist
ticks as tidy frames (without excluded raters by default), and the labels export.

Labels in (``import-ratings``) are :mod:`concord.services.imports.ratings`.
"""

from __future__ import annotations

import pandas as pd
from sqlite_utils import Database

from concord import export
from concord.display import ORIGINAL, Display
from concord.errors import ConcordError
from concord.services.exclusions import without_excluded
from concord.services.labelling import checklist
from concord.store import comments as comment_store
from concord.store import exclusions, frames
from concord.store import studies as study_store


def _excluded(db: Database, study_id: int, include_excluded: bool) -> set[str]:
    # Raters excluded from the study (concord.services.exclusions) are left out of every
    # export unless asked for explicitly.
    return set() if include_excluded else exclusions.excluded_names(db, study_id)


def ratings(db: Database, study_name: str, *, include_excluded: bool = False) -> pd.DataFrame:
    """Current ratings of a study as a tidy frame (without excluded raters by default)."""
    study_id = study_store.get_study(db, study_name).id
    return without_excluded(frames.ratings_frame(db, study_id),
                            _excluded(db, study_id, include_excluded))


def rankings(db: Database, study_name: str, *, include_excluded: bool = False) -> pd.DataFrame:
    """Current rankings of a study as a tidy frame, one row per ranked image (without
    excluded raters by default)."""
    study_id = study_store.get_study(db, study_name).id
    return without_excluded(frames.rankings_frame(db, study_id),
                            _excluded(db, study_id, include_excluded))


def pair_judgments(db: Database, study_name: str, *,
                   include_excluded: bool = False) -> pd.DataFrame:
    """Current pair judgments of a study (Pairs frame; without excluded raters by default)."""
    study_id = study_store.get_study(db, study_name).id
    return without_excluded(frames.pairs_frame(db, study_id),
                            _excluded(db, study_id, include_excluded))


def checklist_ticks(db: Database, study_name: str, *,
                    include_excluded: bool = False) -> pd.DataFrame:
    """The ticks behind the current ratings of a checklist study, one row per rating x
    condition (:data:`concord.export.CHECKLIST_COLUMNS`; without excluded raters by
    default). Empty when no rating came with a checklist."""
    study_id = study_store.get_study(db, study_name).id
    frame = without_excluded(checklist.ticks_frame(db, study_id),
                             _excluded(db, study_id, include_excluded))
    return frame.assign(study=study_name)[export.CHECKLIST_COLUMNS]


def export_bytes(db: Database, study_name: str, fmt: str, *,
                 include_excluded: bool = False) -> bytes:
    """The study's labels in ``csv``, ``jsonl`` or ``parquet``, or the checklist ticks as
    CSV (``checklist``); excluded raters are left out unless ``include_excluded``."""
    if fmt == "checklist":
        return export.to_csv_bytes(checklist_ticks(db, study_name,
                                                   include_excluded=include_excluded))
    study = study_store.get_study(db, study_name)
    shown = Display.of(study.settings)
    frame = export.labels_frame(ratings(db, study_name, include_excluded=include_excluded),
                                rankings(db, study_name, include_excluded=include_excluded),
                                pair_judgments(db, study_name,
                                               include_excluded=include_excluded),
                                display=shown.label() if shown else ORIGINAL,
                                comments=comment_store.current(db, study.id))
    writers = {"csv": export.to_csv_bytes, "jsonl": export.to_jsonl_bytes,
               "parquet": export.to_parquet_bytes}
    if fmt not in writers:
        raise ConcordError(f"unknown export format {fmt!r} (use {', '.join(writers)})")
    return writers[fmt](frame)
