"""Metric scores computed elsewhere, as tidy frames: a CSV, or TIIF-Bench judge outputs.

Every reader returns one row per score with the columns of :data:`COLUMNS` (and, for TIIF,
the prompt and question fields a scores-only study is built from). Problems name file, row
and field; nothing is returned when there is any.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING

from concord.errors import InputError, Problem
from concord.importers.tables import TableError, read_csv_rows, readable_file_problem

if TYPE_CHECKING:  # pandas loads in the readers, so a bad path fails fast
    import pandas as pd

SCORE_COLUMNS = {"prompt_id", "model", "metric", "value"}
TIIF_METRIC = "tiif-judge"
# The columns every reader returns (``file`` and ``row`` say where a score came from).
COLUMNS = ("prompt_id", "model", "sample", "metric", "judge", "question_id", "value",
           "details", "error", "run_id", "options_key", "file", "row")


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
        rec.update(question_id=str(row.get("question_id") or "").strip(),
                   judge=str(row.get("judge") or "").strip(), details={}, error=None,
                   run_id=None, options_key=None, file=str(path), row=line)
        out.append(rec)
    if problems:
        raise InputError(problems)
    import pandas as pd

    return pd.DataFrame(out, columns=list(COLUMNS))


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
