"""Metric scores computed elsewhere, as tidy frames: a CSV, or TIIF-Bench judge outputs.

Every reader returns one row per score with the columns of :data:`COLUMNS` (and, for TIIF,
the prompt and question fields a scores-only study is built from). Problems name file, row
and field; nothing is returned when there is any.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from concord.errors import InputError, Problem
from concord.importers.safe_load import MAX_SAMPLE, finite_number, id_problem, whole_number
from concord.importers.tables import TableError, read_csv_rows, readable_file_problem

if TYPE_CHECKING:  # pandas loads in the readers, so a bad path fails fast
    import pandas as pd

SCORE_COLUMNS = {"prompt_id", "model", "metric", "value"}
TIIF_METRIC = "tiif-judge"
# The columns every reader returns (``file`` and ``row`` say where a score came from).
COLUMNS = ("prompt_id", "model", "sample", "metric", "judge", "question_id", "value",
           "details", "error", "run_id", "options_key", "file", "row")


def read_scores_csv(path: Path) -> pd.DataFrame:
    """``prompt_id, model, metric, value`` [+ ``sample, question_id, judge``] rows: ids one
    line of visible text, ``value`` finite, ``sample`` a sample index (empty: 0)."""
    try:
        rows = read_csv_rows(path, SCORE_COLUMNS)
    except TableError as exc:
        raise InputError(exc.problems) from exc
    problems: list[Problem] = []
    out = []
    for line, row in rows:
        bad = len(problems)
        rec: dict = {k: _id(path, line, row, k, problems, required=k in SCORE_COLUMNS)
                     for k in ("prompt_id", "model", "metric", "question_id", "judge")}
        for k, parse in (("value", finite_number), ("sample", _sample)):
            try:
                rec[k] = parse(row.get(k) or ("" if k == "value" else "0"))
            except ValueError as exc:
                problems.append(Problem(str(path), str(exc), row=line, field=k))
        if len(problems) == bad:
            rec.update(details={}, error=None, run_id=None, options_key=None, file=str(path),
                       row=line)
            out.append(rec)
    if problems:
        raise InputError(problems)
    import pandas as pd

    return pd.DataFrame(out, columns=list(COLUMNS))


def _sample(text: str) -> int:
    return whole_number(text, 0, MAX_SAMPLE)


def _id(path: Path, line: int, row: dict, key: str, problems: list[Problem], *,
        required: bool) -> str:
    text = str(row.get(key) or "").strip()
    problem = "empty value" if required and not text else id_problem(text)
    if problem is not None:
        problems.append(Problem(str(path), problem, row=line, field=key))
    return text


def read_tiif(path: Path, judge: str | None) -> pd.DataFrame:
    """TIIF-Bench judge outputs (a JSONL file or the per-image tree) as per-question rows.

    The value is 1 when the judge's answer matches the expected one, else 0.
    """
    # Check a file before pandas loads (about a second), so a bad path fails fast.
    problem = None if path.is_dir() else readable_file_problem(path)
    if problem is not None:
        raise InputError([problem])
    import pandas as pd

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
        "model": df["model"], "sample": 0, "metric": TIIF_METRIC, "judge": judge,
        "question_id": df["question_id"].astype(str), "value": df["correct"].astype(float),
        "details": [{"pred": p, "answer": a} for p, a in zip(df["pred"], df["answer"],
                                                              strict=True)],
        "error": None, "run_id": None, "options_key": None, "file": str(path), "row": 0,
        "dimension": df["dimension"], "variant": df["variant"], "question": df["question"],
        "answer": df["answer"],
    })
