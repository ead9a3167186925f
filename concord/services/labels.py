"""Human labels in and out: import-ratings (ImagenHub TSV, tidy CSV) and exports."""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from sqlite_utils import Database

from concord import export
from concord.errors import ConcordError, InputError, NotFoundError, Problem
from concord.importers.tables import TableError, read_csv_rows
from concord.plan import ImageSpec, PromptSpec, StudyPlan
from concord.services import common
from concord.services.exclusions import without_excluded
from concord.store import exclusions, frames, items
from concord.store import raters as rater_store
from concord.store import ratings as rating_store
from concord.store import studies as study_store
from concord.store.db import audit, transaction

RATING_COLUMNS = {"prompt_id", "model", "rater", "criterion", "value"}


@dataclass(slots=True)
class RatingsImport:
    """What an import of ratings did."""

    study: str
    created_study: bool = False
    rows: int = 0
    added: int = 0
    unchanged: int = 0
    changed: int = 0


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


def export_bytes(db: Database, study_name: str, fmt: str, *,
                 include_excluded: bool = False) -> bytes:
    """The study's labels in ``csv``, ``jsonl`` or ``parquet`` (excluded raters left out
    unless ``include_excluded``)."""
    frame = export.labels_frame(ratings(db, study_name, include_excluded=include_excluded),
                                rankings(db, study_name, include_excluded=include_excluded),
                                pair_judgments(db, study_name,
                                               include_excluded=include_excluded))
    writers = {"csv": export.to_csv_bytes, "jsonl": export.to_jsonl_bytes,
               "parquet": export.to_parquet_bytes}
    if fmt not in writers:
        raise ConcordError(f"unknown export format {fmt!r} (use {', '.join(writers)})")
    return writers[fmt](frame)


def read_imagenhub(path: Path) -> pd.DataFrame:
    """ImagenHub TSV(s) as tidy rows: a folder of ``<Task>/<Task>_raterN.tsv`` or one file."""
    from concord.importers import imagenhub_tsv

    try:
        if path.is_dir():
            df = imagenhub_tsv.read_imagenhub_dir(path)
        else:
            df = imagenhub_tsv.read_imagenhub_tsv(path)
    except ValueError as exc:
        problems = getattr(exc, "problems", None)
        if problems:
            raise InputError([p if isinstance(p, Problem) else Problem(str(path), str(p))
                              for p in problems]) from exc
        raise InputError([Problem(str(path), str(exc))]) from exc
    return df.assign(prompt_id=df["task"] + "/" + df["prompt_id"], sample=0,
                     dimension=df["task"], seconds=math.nan)


def read_ratings_csv(path: Path) -> pd.DataFrame:
    """A tidy ratings CSV (``prompt_id, model, rater, criterion, value`` [+ sample, seconds])."""
    try:
        rows = read_csv_rows(path, RATING_COLUMNS)
    except TableError as exc:
        raise InputError(exc.problems) from exc
    problems: list[Problem] = []
    out = []
    for line, row in rows:
        if row.get("kind", "rating") not in ("rating", ""):
            continue
        rec = {k: export.unneutralise(str(row.get(k, "")).strip())
               for k in ("prompt_id", "model", "rater", "criterion")}
        for key, val in rec.items():
            if not val:
                problems.append(Problem(str(path), "empty value", row=line, field=key))
        rec["value"] = _number(row.get("value"), path, line, "value", problems)
        rec["sample"] = _sample(row.get("sample") or "0", path, line, problems)
        secs = row.get("seconds") or ""
        rec["seconds"] = _number(secs, path, line, "seconds", problems) if secs else math.nan
        rec["dimension"] = row.get("dimension") or None
        rec["row"] = line
        out.append(rec)
    if problems:
        raise InputError(problems)
    cols = ["prompt_id", "model", "rater", "criterion", "value", "sample", "seconds",
            "dimension", "row"]
    return pd.DataFrame(out, columns=cols)


def _sample(text: str, path: Path, line: int, problems: list[Problem]) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        problems.append(Problem(str(path), f"not a sample index ≥ 0: {text!r}", row=line,
                                field="sample"))
    return value


def _number(text: object, path: Path, line: int, fld: str, problems: list[Problem]) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        problems.append(Problem(str(path), f"not a number: {text!r}", row=line, field=fld))
        return math.nan
    if math.isnan(value) or math.isinf(value):
        problems.append(Problem(str(path), f"not a finite number: {text!r}", row=line, field=fld))
    return value


def import_ratings(db: Database, study_name: str, fmt: str, path: Path, *,
                   actor: str = "cli") -> RatingsImport:
    """Import ratings; a missing study is created as a ratings-only study.

    Everything is validated before anything is written; a repeated import changes
    nothing, a changed value becomes a new revision (history is kept).
    """
    if fmt == "imagenhub":
        df = read_imagenhub(path)
    elif fmt == "csv":
        df = read_ratings_csv(path)
    else:
        raise ConcordError(f"unknown ratings format {fmt!r} (use imagenhub or csv)")
    if df.empty:
        raise InputError([Problem(str(path), "no ratings found")])
    _refuse_duplicates(df, path)
    summary = RatingsImport(study=study_name, rows=len(df))
    with transaction(db):
        study, summary.created_study = _target_study(db, study_name, df, fmt)
        _ensure_targets(db, study, df, path)
        _check_against_rubric(study, df, path)
        _write_ratings(db, study, df, summary)
        if summary.added or summary.changed or summary.created_study:
            audit(db, actor, "import_ratings", study_name, file=str(path), added=summary.added,
                  changed=summary.changed)
    return summary


def _refuse_duplicates(df: pd.DataFrame, path: Path) -> None:
    dup = df[df.duplicated(["prompt_id", "model", "sample", "rater", "criterion"])]
    if not dup.empty:
        raise InputError([Problem(str(path), f"second rating of {r.prompt_id!r}/{r.model!r} by "
                                             f"{r.rater!r} for {r.criterion}", row=int(r.row),
                                  field="criterion") for r in dup.head(50).itertuples()])


def _target_study(db: Database, name: str, df: pd.DataFrame,
                  fmt: str) -> tuple[study_store.Study, bool]:
    try:
        return study_store.get_study(db, name), False
    except NotFoundError:
        rubric = "imagenhub-released" if df["value"].max() <= 1 else "imagenhub-general"
        plan = StudyPlan(name=name, protocol="score", rubric=rubric, root=None,
                         settings={"raters_per_item": int(df["rater"].nunique()),
                                   "layout": f"ratings-only ({fmt})"})
        study_store.apply_plan(db, plan)
        return study_store.get_study(db, name), True


def _ensure_targets(db: Database, study: study_store.Study, df: pd.DataFrame, path: Path) -> None:
    """Create prompts/models/images of a ratings-only study; refuse unknown ones otherwise."""
    keys = df[["prompt_id", "model", "sample"]].drop_duplicates()
    known = items.image_keys(db, study.id)
    missing = [k for k in keys.itertuples(index=False, name=None) if k not in known]
    if not missing:
        return
    if study.root is not None:
        first = df.set_index(["prompt_id", "model", "sample"]).loc[[missing[0]], "row"].iloc[0]
        raise InputError([Problem(str(path), f"{len(missing)} rating target(s) are not images of"
                                             f" study {study.name!r}, e.g. prompt "
                                             f"{missing[0][0]!r}, model {missing[0][1]!r}, sample"
                                             f" {missing[0][2]}", row=int(first),
                                  field="prompt_id")])
    dims = df.drop_duplicates("prompt_id").set_index("prompt_id")["dimension"]
    prompts = [PromptSpec(key=k, text="", dimension=dims.get(k) or None,
                          benchmark="imagenhub" if "/" in k else None,
                          meta={"uid": k.split("/", 1)[-1]})
               for k in dict.fromkeys(m[0] for m in missing)]
    plan = StudyPlan(name=study.name, protocol=study.protocol, rubric=study.rubric,
                     root=study.root, settings=study.settings,
                     models=list(dict.fromkeys(df["model"])), prompts=prompts,
                     images=[ImageSpec(p, m, int(s)) for p, m, s in missing])
    study_store.apply_plan(db, plan)


def _rows(df: pd.DataFrame) -> Iterator[tuple]:
    """Rows as named tuples of plain Python values (fast with pyarrow-backed strings)."""
    return df.astype(object).itertuples(index=False)


def _check_against_rubric(study: study_store.Study, df: pd.DataFrame, path: Path) -> None:
    if not study.rubric:
        return
    rub = common.rubric(study.rubric)
    scales = {c.key: set(c.values) for c in rub.criteria}
    problems = []
    for row in _rows(df):
        if row.criterion not in scales:
            problems.append(Problem(str(path), f"criterion {row.criterion!r} is not in rubric "
                                               f"{rub.id} ({sorted(scales)})", row=row.row,
                                    field="criterion"))
        elif row.value not in scales[row.criterion]:
            problems.append(Problem(str(path), f"{row.value:g} is not on the {row.criterion} "
                                               f"scale {sorted(scales[row.criterion])}",
                                    row=row.row, field="value"))
        if len(problems) >= 50:
            break
    if problems:
        raise InputError(problems)


def _write_ratings(db: Database, study: study_store.Study, df: pd.DataFrame,
                   summary: RatingsImport) -> None:
    keys = items.image_keys(db, study.id)
    current = frames.ratings_frame(db, study.id)
    now_vals = {(r.image_id, r.rater, r.criterion): r.value for r in _rows(current)}
    rater_ids: dict[str, int] = {}
    fresh = []
    for row in _rows(df):
        if row.rater not in rater_ids:
            rater_ids[row.rater] = rater_store.ensure_rater(db, row.rater).id
            rater_store.add_to_study(db, rater_ids[row.rater], study.id)
        image_id = keys[(row.prompt_id, row.model, int(row.sample))]
        old = now_vals.get((image_id, row.rater, row.criterion))
        if old == row.value:
            summary.unchanged += 1
            continue
        fresh.append((study.id, image_id, rater_ids[row.rater], row.criterion,
                      float(row.value), secrets.token_hex(16),
                      None if math.isnan(row.seconds) else float(row.seconds)))
        if old is None:
            summary.added += 1
        else:
            summary.changed += 1
    rating_store.bulk_import_ratings(db, fresh)
