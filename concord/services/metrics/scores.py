"""Metric scores computed elsewhere: ``import-scores`` (CSV, TIIF judge outputs, a JSONL
score file) and ``merge-scores`` (the score files of a Slurm array, exactly once).

Everything is read and checked before anything is written; then the study and its images
are created where needed (a missing study becomes a scores-only study) and the scores go
in through the staging table in bounded chunks (:mod:`concord.store.imports.score_staging`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

from concord.errors import ConcordError, InputError, NotFoundError, Problem
from concord.importers.score_jsonl import ScoreFile, read_score_file
from concord.importers.score_tables import COLUMNS, read_scores_csv, read_tiif
from concord.plan import ImageSpec, PromptSpec, Question, StudyPlan
from concord.store import items
from concord.store import runs as run_store
from concord.store import studies as study_store
from concord.store.db import audit, dumps, transaction
from concord.store.imports import score_staging

if TYPE_CHECKING:  # pandas loads in the readers, so a bad path fails fast
    import pandas as pd

FORMATS = ("csv", "tiif", "jsonl")
_KEY = ["prompt_id", "model", "sample", "metric", "judge", "question_id"]


@dataclass(slots=True)
class ScoresImport:
    """What an import of metric scores did."""

    study: str
    created_study: bool = False
    files: int = 1
    rows: int = 0
    stored: int = 0  # new or changed values (a row equal to the stored one is not rewritten)
    runs: int = 0


def import_scores(db: Database, study_name: str, fmt: str, path: Path, *,
                  judge: str | None = None, actor: str = "cli") -> ScoresImport:
    """Import one file of metric scores; a missing study is created as scores-only."""
    if fmt == "csv":
        df = read_scores_csv(path)
    elif fmt == "tiif":
        df = read_tiif(path, judge)
    elif fmt == "jsonl":
        return merge_score_files(db, study_name, [path], actor=actor)
    else:
        raise ConcordError(f"unknown scores format {fmt!r} (use {', '.join(FORMATS)})")
    _refuse_duplicates(df, path)
    return _store(db, study_name, df, [], str(path), fmt, actor)


def merge_score_files(db: Database, study_name: str, paths: list[Path], *,
                      actor: str = "cli") -> ScoresImport:
    """Bring JSONL score files (one per Slurm task) into a study, exactly once.

    Within a file the last line for a score wins (a resumed task appends). Across files a
    value beats an error, and two values for one score are resolved in favour of the run
    that started last, unless they were computed with different options (refused).
    """
    files = [read_score_file(p) for p in _expand(paths)]
    problems = [Problem(str(f.path), f"scored for study {r['study']!r}, not {study_name!r}",
                        field="study")
                for f in files for r in f.runs.values() if r.get("study") not in
                (None, "", study_name)]
    if problems:
        raise InputError(problems)
    df = _combine(files)
    runs = [r for f in files for r in f.runs.values()]
    summary = _store(db, study_name, df, runs, ", ".join(str(f.path) for f in files), "jsonl",
                     actor)
    summary.files = len(files)
    return summary


def _expand(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if not found:
                raise InputError([Problem(str(path), "folder holds no .jsonl score files")])
            yield from found
        else:
            yield path


def _combine(files: list[ScoreFile]) -> pd.DataFrame:
    """One row per score across files (see :func:`merge_score_files`)."""
    import pandas as pd

    started = {rid: r.get("started_at", "") for f in files for rid, r in f.runs.items()}
    chosen: dict[tuple, dict[str, Any]] = {}
    problems: list[Problem] = []
    for row in (r for f in files for r in f.rows):
        key = tuple(row[k] for k in _KEY)
        old = chosen.get(key)
        if old is None or old["value"] is None:
            chosen[key] = row
        elif row["value"] is not None and row["value"] != old["value"]:
            if row["options_key"] != old["options_key"]:
                problems.append(Problem(row["file"], f"score {key[:3]}/{key[3]}/q{key[5]!r} "
                                        f"was also scored with other options in {old['file']} "
                                        f"line {old['row']}", row=row["row"], field="value"))
            elif started.get(row["run_id"] or "", "") >= started.get(old["run_id"] or "", ""):
                chosen[key] = row
    if problems:
        raise InputError(problems)
    return pd.DataFrame(list(chosen.values()), columns=list(COLUMNS))


def _refuse_duplicates(df: pd.DataFrame, path: Path) -> None:
    dup = df[df.duplicated(_KEY)]
    if not dup.empty:
        r = dup.iloc[0]
        keys = df[_KEY]
        same = ((keys == r[_KEY]) | (keys.isna() & r[_KEY].isna())).all(axis=1)
        first = int(df.loc[same, "row"].iloc[0])
        raise InputError([Problem(str(path), f"{len(dup)} duplicate score row(s), e.g. "
                                             f"{r['prompt_id']!r}/{r['model']!r}/{r['metric']}"
                                             f" scored again (first on line {first}; one score"
                                             f" per {', '.join(_KEY)})",
                                  row=int(r["row"]) or None, field="value")])


def _store(db: Database, study_name: str, df: pd.DataFrame, runs: list[dict[str, Any]],
           source: str, fmt: str, actor: str) -> ScoresImport:
    """Create the study/images if needed, then stage and publish the scores in chunks."""
    if df.empty:
        raise InputError([Problem(source, "no scores found")])
    score_staging.recover(db)
    summary = ScoresImport(study=study_name, rows=len(df))
    with transaction(db):
        study, summary.created_study = _target(db, study_name, fmt)
        _ensure_images(db, study, df)
        for run in runs:
            run_store.record_imported_run(db, run, study.id)
        summary.runs = len(runs)
    keys = items.image_keys(db, study.id)
    import_id = score_staging.begin(db, study.id, source)
    try:
        score_staging.stage(db, import_id, _staged(df, keys))
    except BaseException:
        score_staging.discard(db, import_id)
        raise
    summary.stored = score_staging.publish(db, import_id)
    if summary.stored or summary.created_study:
        with transaction(db):
            audit(db, actor, "import_scores", study_name, file=source, rows=summary.rows,
                  stored=summary.stored)
    return summary


def _staged(df: pd.DataFrame, keys: dict) -> Iterator[tuple]:
    import pandas as pd

    for r in df.itertuples(index=False):
        value = None if r.value is None or pd.isna(r.value) else float(r.value)
        yield (keys[(r.prompt_id, r.model, int(r.sample))], r.metric, r.judge, r.question_id,
               value, dumps(r.details or {}), _text(r.run_id), _text(r.error),
               _text(r.options_key))


def _text(cell: Any) -> Any:
    """A missing text cell (pandas' NaN) as NULL: SQLite stores a NaN as NULL by itself,
    PostgreSQL would store the text 'NaN'."""
    return None if isinstance(cell, float) and math.isnan(cell) else cell


def _target(db: Database, name: str, fmt: str) -> tuple[study_store.Study, bool]:
    try:
        return study_store.get_study(db, name), False
    except NotFoundError:
        plan = StudyPlan(name=name, protocol="score", rubric=None, root=None,
                         settings={"layout": f"scores-only ({fmt})"})
        study_store.apply_plan(db, plan)
        return study_store.get_study(db, name), True


def _ensure_images(db: Database, study: study_store.Study, df: pd.DataFrame) -> None:
    known = items.image_keys(db, study.id)
    targets = df.drop_duplicates(["prompt_id", "model", "sample"])
    missing = [t for t in targets.itertuples(index=False)
               if (t.prompt_id, t.model, int(t.sample)) not in known]
    if not missing:
        return
    if study.root is not None:
        t = missing[0]
        raise InputError([Problem(str(t.file), f"{len(missing)} score target(s) are not images "
                                               f"of study {study.name!r}, e.g. {t.prompt_id!r}/"
                                               f"{t.model!r}", row=int(t.row) or None,
                                  field="prompt_id")])
    plan = StudyPlan(name=study.name, protocol=study.protocol, rubric=study.rubric, root=None,
                     settings=study.settings, models=list(dict.fromkeys(df["model"])),
                     prompts=_prompts_for(df, {t.prompt_id for t in missing}),
                     images=[ImageSpec(t.prompt_id, t.model, int(t.sample)) for t in missing])
    study_store.apply_plan(db, plan)


def _prompts_for(df: pd.DataFrame, keys: set[str]) -> list[PromptSpec]:
    out = []
    for key, part in df[df["prompt_id"].isin(keys)].groupby("prompt_id", sort=False):
        first = part.iloc[0]
        spec = PromptSpec(key=str(key), text="", dimension=first.get("dimension"),
                          variant=first.get("variant"))
        if "question" in part:
            qs = part.drop_duplicates("question_id")
            spec.benchmark = "tiif"
            spec.questions = [Question(q.question_id, q.question, q.answer)
                              for q in qs.itertuples(index=False)]
        out.append(spec)
    return out


def scores(db: Database, study_name: str) -> pd.DataFrame:
    """All metric scores of a study as a tidy frame."""
    from concord.store import frames

    return frames.scores_frame(db, study_store.get_study(db, study_name).id)
