"""The Export page's downloads: every file ``python -m concord export`` writes that fits in
one download (the Hugging Face dataset is a folder and needs ``datasets``: CLI only).

Each download is built only when its button is clicked (Streamlit runs the builder on a
thread of its own), so :func:`build` opens its own database connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlite_utils import Database

from concord.errors import ConcordError
from concord.services import rubric_choice
from concord.services.database import open_database
from concord.store import studies as study_store


@dataclass(frozen=True, slots=True)
class Download:
    """One download button: what it is called, the file it gives, and its type."""

    key: str
    label: str
    suffix: str  # the file is "<study>-<suffix>"
    mime: str
    help: str


DOWNLOADS = (
    Download("csv", "Labels (CSV)", "labels.csv", "text/csv",
             "One row per current rating, ranked image and pair judgment (column kind)."),
    Download("jsonl", "Labels (JSONL)", "labels.jsonl", "application/x-ndjson",
             "The labels table as JSON Lines."),
    Download("parquet", "Labels (Parquet)", "labels.parquet", "application/vnd.apache.parquet",
             "The labels table as Parquet."),
    Download("imagenhub", "ImagenHub TSVs (zip)", "imagenhub.zip", "application/zip",
             "<Task>/<Task>_<rater>.tsv files, as the ImagenHub human evaluation."),
    Download("checklist", "Checklist answers (CSV)", "checklist.csv", "text/csv",
             "One row per rating and checklist condition: ticked, derived and final value, "
             "override reason."),
    Download("history", "Revision history (CSV)", "history.csv", "text/csv",
             "Every revision of every label, edits and undos included."),
    Download("adjudications", "Adjudicated values (CSV)", "adjudications.csv", "text/csv",
             "The values set on the Adjudicate page, kept apart from the raters' own."),
    Download("questionnaire", "Questionnaire answers (CSV)", "questionnaire.csv", "text/csv",
             "Each participant's answers to the study's questions (never in the labels)."),
    Download("label-studio", "Label Studio tasks (JSON)", "label-studio.json",
             "application/json", "Tasks with the current ratings as annotations."),
    Download("label-studio-config", "Label Studio labeling config (XML)",
             "label-studio.xml", "application/xml",
             "The labeling config that matches the Label Studio tasks."),
)


def available(db: Database, study: str) -> list[Download]:
    """The downloads ``study`` has: the labeling config needs the study's default rubric."""
    rubrics = rubric_choice.study_rubrics(study_store.get_study(db, study))
    asked = bool(study_store.get_study(db, study).settings.get("questionnaire"))
    return [d for d in DOWNLOADS
            if (d.key != "label-studio-config" or rubrics.default is not None)
            and (d.key != "questionnaire" or asked)]


def check(db_path: str | Path, study: str) -> None:
    """Raise :class:`ConcordError` when ``study``'s downloads cannot be built now (the study
    was deleted, or the database cannot be opened), as :func:`build` would."""
    db = open_database(db_path, migrate=False)
    try:
        study_store.get_study(db, study)
    finally:
        db.conn.close()


def build(db_path: str | Path, study: str, key: str, *, include_excluded: bool = False) -> bytes:
    """The bytes of download ``key`` of ``study``, read through a connection of its own."""
    if key not in {d.key for d in DOWNLOADS}:
        raise ConcordError(f"unknown download {key!r}")
    db = open_database(db_path, migrate=False)
    try:
        return _bytes(db, study, key, include_excluded)
    finally:
        db.conn.close()


def _bytes(db: Database, study: str, key: str, include_excluded: bool) -> bytes:
    # Imported here: the Export page renders its buttons without pandas' writers.
    from concord import export
    from concord.services import adjudication, questionnaire
    from concord.services.exports import label_studio, labels
    from concord.services.exports import tables as export_tables

    if key in ("csv", "jsonl", "parquet", "checklist"):
        return labels.export_bytes(db, study, key, include_excluded=include_excluded)
    if key == "imagenhub":
        return export.imagenhub_zip_bytes(labels.ratings(db, study,
                                                         include_excluded=include_excluded))
    if key == "history":
        return export_tables.table_bytes(export_tables.history_frame(
            db, study, include_excluded=include_excluded), "csv")
    if key == "adjudications":
        return export_tables.table_bytes(adjudication.adjudications_frame(db, study), "csv")
    if key == "questionnaire":
        return export_tables.table_bytes(questionnaire.answers_frame(db, study), "csv")
    if key == "label-studio":
        return label_studio.export_bytes(db, study, include_excluded=include_excluded)[0]
    return label_studio.study_config(db, study).encode("utf-8")
