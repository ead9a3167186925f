"""Exports of human labels: tidy CSV / JSONL / Parquet, and ImagenHub's TSV layout.

One row per current rating, one per ranked image and one per pairwise judgment, with a
``kind`` column (``rating``, ``ranking`` or ``pair``) and the union of their columns, so a
single file holds a whole study; ``display`` says how raters saw the images (``original``
or the study's normalisation, e.g. ``512px png``: concord.display). CSV cells that a
spreadsheet would run as a formula are neutralised.
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from concord import atomic
from concord.errors import ConcordError

COLUMNS = [
    "study", "kind", "prompt_id", "prompt", "model", "sample", "rater", "criterion", "value",
    "rank", "position", "seconds", "time", "left_model", "right_model", "outcome", "display",
    "dimension", "comment",
]
FORMATS = ("csv", "jsonl", "parquet", "imagenhub", "checklist")
# ``--format checklist``: one row per current rating x condition of a checklist study
# (docs/rubrics.md); ticked is 1/0, reason is set only when final differs from derived.
CHECKLIST_COLUMNS = [
    "study", "prompt_id", "model", "sample", "rater", "criterion", "rubric", "condition",
    "ticked", "derived", "final", "reason", "time",
]
# Characters that make Excel/LibreOffice/Sheets treat a cell as a formula (OWASP).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def labels_frame(ratings: pd.DataFrame, rankings: pd.DataFrame,
                 pairs: pd.DataFrame | None = None, *, display: str = "original",
                 comments: pd.DataFrame | None = None) -> pd.DataFrame:
    """Ratings, ranked images and pair judgments (``left_model``, ``right_model`` as shown,
    ``outcome``) as one tidy frame with :data:`COLUMNS`; ``display`` fills its column and
    ``comments`` (``kind, key, criterion, rater, comment``: the key is the image id, the
    prompt's id or the pair id) the ``comment`` column."""
    r = _commented(ratings.rename(columns={"created_at": "time"}).assign(kind="rating"),
                   comments, "rating", "image_id")
    k = _commented(rankings.rename(columns={"created_at": "time"}).assign(kind="ranking"),
                   comments, "ranking", "prompt_id")
    j = _commented((pairs if pairs is not None else pd.DataFrame()).rename(
        columns={"created_at": "time"}).assign(kind="pair"), comments, "pair", "pair_id")
    parts = [p for p in (r, k, j) if not p.empty]
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
    out = pd.concat(parts, ignore_index=True)
    for col in COLUMNS:
        if col not in out:
            out[col] = np.nan
    out["display"] = display
    return out[COLUMNS]


def _commented(frame: pd.DataFrame, comments: pd.DataFrame | None, kind: str,
               key: str) -> pd.DataFrame:
    """``frame`` with the ``comment`` of each row's label (matched on ``key``, the rater
    and, but for ratings, the criterion)."""
    if comments is None or frame.empty or key not in frame.columns:
        return frame
    part = comments[comments["kind"] == kind]
    if part.empty:
        return frame
    on = [key, "rater"] + ([] if kind == "rating" else ["criterion"])
    part = part.rename(columns={"key": key})[[*on, "comment"]]
    part[key] = part[key].astype(frame[key].dtype)
    part["rater"] = part["rater"].astype(str)
    left = frame.assign(rater=frame["rater"].astype(str))
    if kind != "rating":
        left["criterion"] = left["criterion"].astype(str)
    return left.merge(part, on=on, how="left")


def neutralise(value: object) -> object:
    """Prefix a text cell that starts like a formula with ``'`` (CSV injection)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _neutralise_column(text: pd.Series) -> pd.Series:
    """:func:`neutralise` on a whole column (vectorised for string columns)."""
    try:
        starts = text.str.startswith(_FORMULA_START)
    except AttributeError:  # an object column that holds no text
        return text.map(neutralise)
    starts = starts.fillna(False).astype(bool)
    return text.where(~starts, "'" + text.astype(str)) if starts.any() else text


def unneutralise(value: str) -> str:
    """Undo :func:`neutralise` when reading an exported CSV back."""
    if value.startswith("'") and value[1:].startswith(_FORMULA_START):
        return value[1:]
    return value


def to_csv_bytes(frame: pd.DataFrame) -> bytes:
    """CSV (UTF-8, header, ``\\n``), text cells quoted and neutralised.

    Written by pyarrow (a million rows in about a second). Numbers are written in their
    shortest form (``1``, ``0.5``); missing values are empty cells.
    """
    safe = frame.copy()
    for col in safe.columns:
        if safe[col].dtype == object or pd.api.types.is_string_dtype(safe[col]):
            safe[col] = _neutralise_column(safe[col])
    buf = io.BytesIO()
    options = pacsv.WriteOptions(quoting_style="needed", quoting_header="none")
    pacsv.write_csv(pa.Table.from_pandas(safe, preserve_index=False), buf, options)
    return buf.getvalue()


def to_jsonl_bytes(frame: pd.DataFrame) -> bytes:
    """JSON Lines, one object per row, NaN as null."""
    if frame.empty:
        return b""
    text = frame.to_json(orient="records", lines=True, force_ascii=False)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


def to_parquet_bytes(frame: pd.DataFrame) -> bytes:
    """Parquet (pyarrow)."""
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def format_level(value: float) -> str:
    """A score as ImagenHub writes it: 0, 0.5, 1, 2."""
    return f"{value:g}"


def imagenhub_tables(ratings: pd.DataFrame, *, sc: str = "SC", pr: str = "PR",
                     ) -> dict[str, str]:
    """ImagenHub TSVs, ``{"<Task>/<Task>_<rater>.tsv": text}``.

    Rows are the images' uids (prompt order), columns the models (study order), cells
    ``[SC,PR]``; a cell the rater did not rate is left empty. Uids and model names that
    start like a spreadsheet formula are neutralised (:func:`neutralise`). The task is the prompt's
    dimension; the uid is the prompt id's part after ``<task>/``. Task and rater names
    are made safe as file names (no path separators, no leading dots).
    """
    wanted = ratings[ratings["criterion"].isin([sc, pr])]
    if wanted.empty:
        return {}
    models = list(dict.fromkeys(ratings["model"]))
    out: dict[str, str] = {}
    for (task, rater), part in wanted.groupby(["dimension", "rater"], sort=False, dropna=False):
        task_name = _file_part(str(task)) if isinstance(task, str) else "ratings"
        cells = part.pivot_table(index="prompt_id", columns=["model", "criterion"],
                                 values="value", aggfunc="first", sort=False)
        shown = [m for m in models if m in set(cells.columns.get_level_values(0))]
        pairs = [(_column(cells, (m, sc)), _column(cells, (m, pr))) for m in shown]
        lines = ["\t".join(["uid", *map(_tsv_text, shown)])]
        for i, prompt_id in enumerate(cells.index):
            uid = _tsv_text(str(prompt_id).split("/", 1)[-1])
            lines.append("\t".join([uid, *(_cell(a[i], b[i]) for a, b in pairs)]))
        out[f"{task_name}/{task_name}_{_file_part(str(rater))}.tsv"] = "\n".join(lines) + "\n"
    return out


def _tsv_text(text: str) -> str:
    """A model name or uid as one TSV cell: neutralised like the CSV export (a spreadsheet
    opening the TSV would run ``=HYPERLINK(…)``; ``-p1`` reads as a formula too). The
    layout has no quoting, so a tab or line break cannot be written."""
    if any(c in text for c in "\t\n\r"):
        raise ConcordError(f"{text[:60]!r} holds a tab or line break, which the ImagenHub TSV"
                           " layout cannot hold; export it as csv or jsonl instead")
    return str(neutralise(text))


def _column(cells: pd.DataFrame, key: tuple[str, str]) -> list[float]:
    return cells[key].tolist() if key in cells.columns else [math.nan] * len(cells)


def _cell(sc: float, pr: float) -> str:
    if math.isnan(sc) or math.isnan(pr):
        return ""
    return f"[{format_level(sc)},{format_level(pr)}]"


def _file_part(text: str) -> str:
    """``text`` as one safe path component: other characters become ``_``."""
    return re.sub(r"[^\w.+-]", "_", text).lstrip(".") or "_"


def write_imagenhub(ratings: pd.DataFrame, directory: Path) -> list[Path]:
    """Write :func:`imagenhub_tables` as the folder ``directory``; returns the files.

    The folder is built beside ``directory`` and swapped in whole (:mod:`concord.atomic`),
    so it holds exactly this export and a killed export leaves the previous one intact.
    A folder that holds anything but an ImagenHub export (``<Task>/*.tsv``) is refused
    rather than replaced.
    """
    directory = Path(directory)
    stranger = _not_an_export(directory)
    if stranger is not None:
        raise ConcordError(f"{directory} holds {stranger}, which is not part of an ImagenHub "
                           "export; choose a new or empty folder (the export replaces the "
                           "whole folder)")
    files = {rel: text.encode("utf-8") for rel, text in imagenhub_tables(ratings).items()}
    return atomic.replace_dir(directory, files)


def _not_an_export(directory: Path) -> Path | None:
    """The first entry of ``directory`` that an ImagenHub export would not have."""
    if not directory.is_dir():
        return None
    for task in sorted(directory.iterdir()):
        if task.is_symlink() or not task.is_dir():
            return task
        for entry in sorted(task.iterdir()):
            if entry.is_symlink() or not entry.is_file() or entry.suffix != ".tsv":
                return entry
    return None


def imagenhub_zip_bytes(ratings: pd.DataFrame) -> bytes:
    """The ImagenHub TSVs of :func:`imagenhub_tables` in one zip (for a download button)."""
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, text in imagenhub_tables(ratings).items():
            zf.writestr(rel, text)
    return buf.getvalue()
