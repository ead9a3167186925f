"""GenEval 2 aggregation: VQAScore, TIFA and Soft-TIFA (AM / GM) totals and breakdowns.

Input: one row per (model, prompt, question) with columns
``model, prompt_id, question_id, value`` and, for the breakdowns, ``skill`` (per
question) and ``atom_count`` (per prompt). ``question_id`` is the 0-based position in the
prompt's ``vqa_list``. For VQAScore there is one row per prompt.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._validate import (
    check_choice,
    numeric_values,
    require_columns,
    require_nonempty,
)

METHODS = ("vqascore", "tifa", "soft_tifa_am", "soft_tifa_gm")
# Print order of soft_tifa_analysis.py; skills outside it follow alphabetically.
SKILL_ORDER = ("object", "attribute", "count", "position", "verb")
BASE = ("model", "prompt_id", "question_id", "value")


def _clean(df: pd.DataFrame, where: str, extra: tuple[str, ...] = ()) -> pd.DataFrame:
    require_columns(df, [*BASE, *extra], where=where)
    require_nonempty(df, where=where)
    values = numeric_values(df, "value", where=where)
    if np.isnan(values).any() or (values < 0).any():
        raise ValueError(f"{where}: values must be non-negative numbers (no NaN); "
                         f"got e.g. {values[np.isnan(values) | (values < 0)][:3].tolist()}")
    if df.duplicated(["model", "prompt_id", "question_id"]).any():
        raise ValueError(f"{where}: duplicate (model, prompt_id, question_id) rows")
    for col in extra:
        if df[col].isna().any():
            raise ValueError(f"{where}: column {col!r} has missing values")
    return df.assign(value=values)


def prompt_scores(scores: pd.DataFrame, *, method: str = "soft_tifa_am") -> pd.DataFrame:
    """Per-prompt score: arithmetic mean (VQAScore, TIFA, Soft-TIFA AM) or geometric mean.

    The geometric mean is ``exp(mean(log s))``, 0 when a question scores exactly 0 (scipy's
    ``gmean`` gives the same up to the last ulp).

    Returns:
        Columns ``model, prompt_id, score, n_questions`` (score as a fraction, not ×100).
    """
    check_choice(method, METHODS, name="method")
    df = _clean(scores, "prompt_scores")
    if method == "vqascore" and df.duplicated(["model", "prompt_id"]).any():
        raise ValueError("prompt_scores: VQAScore has one score per prompt; found several")
    if method == "tifa" and not df["value"].isin([0.0, 1.0]).all():
        raise ValueError("prompt_scores: TIFA scores must be 0 or 1")
    grouped = df.groupby(["model", "prompt_id"], sort=True)
    if method == "soft_tifa_gm":
        with np.errstate(divide="ignore"):
            logs = df.assign(value=np.log(df["value"].to_numpy()))
        score = np.exp(logs.groupby(["model", "prompt_id"], sort=True)["value"].mean())
    else:
        score = grouped["value"].mean()
    out = score.rename("score").reset_index()
    out["n_questions"] = grouped.size().to_numpy()
    return out


def geneval2_totals(scores: pd.DataFrame, *, method: str = "soft_tifa_am") -> pd.DataFrame:
    """Benchmark total of ``evaluation.py``: ``100 · mean over prompts`` of the prompt score.

    Returns:
        Columns ``model, method, score, n_prompts``.
    """
    per_prompt = prompt_scores(scores, method=method)
    out = per_prompt.groupby("model", sort=True)["score"].agg(["mean", "size"]).reset_index()
    out = out.rename(columns={"mean": "score", "size": "n_prompts"})
    out["score"] *= 100.0
    out.insert(1, "method", method)
    return out


def geneval2_by_skill(scores: pd.DataFrame) -> pd.DataFrame:
    """Soft-TIFA AM per skill, pooled over all questions (atoms) with that skill, ×100.

    Returns:
        Columns ``model, skill, score, n_questions``; skills absent from the input are
        omitted (the reference divides by zero instead).
    """
    df = _clean(scores, "geneval2_by_skill", extra=("skill",))
    out = df.groupby(["model", "skill"], sort=True)["value"].agg(["mean", "size"]).reset_index()
    out = out.rename(columns={"mean": "score", "size": "n_questions"})
    out["score"] *= 100.0
    rank = {s: k for k, s in enumerate(SKILL_ORDER)}
    out["_o"] = out["skill"].map(lambda s: (rank.get(str(s).lower(), len(rank)), str(s)))
    return out.sort_values(["model", "_o"], ignore_index=True).drop(columns="_o")


def geneval2_by_atomicity(scores: pd.DataFrame) -> pd.DataFrame:
    """Soft-TIFA GM per atom count: ``100 · mean over prompts`` of the per-prompt gmean.

    Every atom count present is reported (the reference hard-codes 3..10 and fails on an
    empty bucket); absent counts are omitted.

    Returns:
        Columns ``model, atom_count, score, n_prompts``.
    """
    df = _clean(scores, "geneval2_by_atomicity", extra=("atom_count",))
    atoms = df.groupby(["model", "prompt_id"], sort=True)["atom_count"].agg(["first", "nunique"])
    if (atoms["nunique"] > 1).any():
        raise ValueError("geneval2_by_atomicity: a prompt has several atom_count values")
    per_prompt = prompt_scores(df, method="soft_tifa_gm")
    per_prompt["atom_count"] = atoms["first"].to_numpy()
    out = per_prompt.groupby(["model", "atom_count"], sort=True)["score"].agg(["mean", "size"])
    out = out.rename(columns={"mean": "score", "size": "n_prompts"}).reset_index()
    out["score"] *= 100.0
    return out
