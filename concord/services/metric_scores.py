"""Metric scores computed elsewhere: ``import-scores`` (tidy CSV, TIIF-Bench judge outputs)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from sqlite_utils import Database

from concord.errors import ConcordError, InputError, NotFoundError, Problem
from concord.importers.tables import TableError, read_csv_rows
from concord.plan import ImageSpec, PromptSpec, QuestionSpec, StudyPlan
from concord.store import frames, items
from concord.store import scores as score_store
from concord.store import studies as study_store
from concord.store.db import audit, transaction

SCORE_COLUMNS = {"prompt_id", "model", "metric", "value"}
TIIF_METRIC = "tiif-judge"


@dataclass(slots=True)
class ScoresImport:
    """What an import of metric scores did."""

    study: str
    created_study: bool = False
    rows: int = 0
    stored: int = 0  # new or changed values (a row equal to the stored one is not rewritten)


def read_scores_csv(path: Path) -> pd.DataFrame:
    """``prompt_id, model, metric, value`` [+ ``sample, question_id, judge``] rows."""
    try:
        rows = read_csv_rows(path, SCORE_COLUMNS)
    except TableError as exc:
        raise InputError(exc.problems) from exc
    problems: list[Problem] = []
    out = []
    for line, row in rows:
        rec = {k: str(row.get(k) or "").strip() for k in ("prompt_id", "model", "metric")}
        for k, v in rec.items():
            if not v:
                problems.append(Problem(str(path), "empty value", row=line, field=k))
        try:
            rec["value"] = float(row["value"])
            rec["sample"] = int(row.get("sample") or 0)
        except ValueError as exc:
            problems.append(Problem(str(path), f"not a number ({exc})", row=line,
                                    field="value" if "float" in str(exc) else "sample"))
            continue
        if not math.isfinite(rec["value"]):
            problems.append(Problem(str(path), "value must be finite", row=line, field="value"))
        rec["question_id"] = str(row.get("question_id") or "").strip()
        rec["judge"] = str(row.get("judge") or "").strip()
        rec["row"] = line
        out.append(rec)
    if problems:
        raise InputError(problems)
    return pd.DataFrame(out)


def read_tiif(path: Path, judge: str | None) -> pd.DataFrame:
    """TIIF-Bench judge outputs (a JSONL file or the per-image tree) as per-question rows.

    The value is 1 when the judge's answer matches the expected one, else 0.
    """
    from concord.importers import tiif_judge

    reader = tiif_judge.read_tiif_judge_tree if path.is_dir() else tiif_judge.read_tiif_judge_jsonl
    try:
        df = reader(path)
    except ValueError as exc:
        problems = getattr(exc, "problems", None) or [str(exc)]
        raise InputError([p if isinstance(p, Problem) else Problem(str(path), str(p))
                          for p in problems]) from exc
    if judge is None:
        m = re.search(r"eval_results_(.+?)\.jsonl?$", path.name)
        judge = m.group(1) if m else path.stem
    return pd.DataFrame({
        "prompt_id": df["dimension"] + "/" + df["prompt_index"].astype(str) + "/" + df["variant"],
        "model": df["model"], "metric": TIIF_METRIC, "value": df["correct"].astype(float),
        "sample": 0, "question_id": df["question_id"].astype(str), "judge": judge,
        "dimension": df["dimension"], "variant": df["variant"], "question": df["question"],
        "answer": df["answer"], "pred": df["pred"], "row": 0,
    })


def import_scores(db: Database, study_name: str, fmt: str, path: Path, *,
                  judge: str | None = None, actor: str = "cli") -> ScoresImport:
    """Import metric scores; a missing study is created as a scores-only study."""
    if fmt == "csv":
        df = read_scores_csv(path)
    elif fmt == "tiif":
        df = read_tiif(path, judge)
    else:
        raise ConcordError(f"unknown scores format {fmt!r} (use csv or tiif)")
    if df.empty:
        raise InputError([Problem(str(path), "no scores found")])
    dup = df[df.duplicated(["prompt_id", "model", "sample", "metric", "judge", "question_id"])]
    if not dup.empty:
        r = dup.iloc[0]
        raise InputError([Problem(str(path), f"{len(dup)} duplicate score row(s), e.g. "
                                             f"{r['prompt_id']!r}/{r['model']!r}/{r['metric']}",
                                  row=int(r["row"]) or None, field="question_id")])
    summary = ScoresImport(study=study_name, rows=len(df))
    with transaction(db):
        start = db.conn.total_changes
        study, summary.created_study = _target(db, study_name, fmt)
        _ensure_images(db, study, df, path)
        keys = items.image_keys(db, study.id)
        rows = [_score_row(keys, r) for r in df.itertuples(index=False)]
        before = db.conn.total_changes
        score_store.write_scores(db, study.id, rows, run_id=None)
        summary.stored = db.conn.total_changes - before
        if db.conn.total_changes > start:  # a repeated import changes nothing, logs nothing
            audit(db, actor, "import_scores", study_name, file=str(path), rows=len(rows),
                  stored=summary.stored)
    return summary


def _score_row(keys: dict, r: object) -> score_store.ScoreRow:
    details = {k: getattr(r, k) for k in ("pred", "answer") if hasattr(r, k)}
    return score_store.ScoreRow(
        image_id=keys[(r.prompt_id, r.model, int(r.sample))], metric=r.metric, judge=r.judge,
        question_id=r.question_id, value=float(r.value), details=details)


def _target(db: Database, name: str, fmt: str) -> tuple[study_store.Study, bool]:
    try:
        return study_store.get_study(db, name), False
    except NotFoundError:
        plan = StudyPlan(name=name, protocol="score", rubric=None, root=None,
                         settings={"layout": f"scores-only ({fmt})"})
        study_store.apply_plan(db, plan)
        return study_store.get_study(db, name), True


def _ensure_images(db: Database, study: study_store.Study, df: pd.DataFrame, path: Path) -> None:
    known = items.image_keys(db, study.id)
    targets = df.drop_duplicates(["prompt_id", "model", "sample"])
    missing = [t for t in targets.itertuples(index=False)
               if (t.prompt_id, t.model, int(t.sample)) not in known]
    if not missing:
        return
    if study.root is not None:
        t = missing[0]
        raise InputError([Problem(str(path), f"{len(missing)} score target(s) are not images of "
                                             f"study {study.name!r}, e.g. {t.prompt_id!r}/"
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
            spec.questions = [QuestionSpec(q.question_id, q.question, q.answer)
                              for q in qs.itertuples(index=False)]
        out.append(spec)
    return out


def scores(db: Database, study_name: str) -> pd.DataFrame:
    """All metric scores of a study as a tidy frame."""
    return frames.scores_frame(db, study_store.get_study(db, study_name).id)
