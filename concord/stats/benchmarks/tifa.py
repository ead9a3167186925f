"""TIFA aggregation: per-caption score, benchmark average, sample stdev, accuracy by type.

Input: one row per (model, caption, question) with ``model, prompt_id, value`` (the
question score: 1 when the multiple-choice answer equals the expected one, else 0; soft
scores in [0, 1] also work) and ``element_type`` for :func:`tifa_accuracy_by_type`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._validate import numeric_values, require_columns, require_nonempty


def _clean(df: pd.DataFrame, where: str, extra: tuple[str, ...] = ()) -> pd.DataFrame:
    require_columns(df, ["model", "prompt_id", "value", *extra], where=where)
    require_nonempty(df, where=where)
    values = numeric_values(df, "value", where=where)
    if np.isnan(values).any():
        raise ValueError(f"{where}: {int(np.isnan(values).sum())} question score(s) missing")
    return df.assign(value=values)


def tifa_caption_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean question score per caption (TIFA score of one image).

    Returns:
        Columns ``model, prompt_id, score, n_questions``.
    """
    df = _clean(scores, "tifa_caption_scores")
    out = df.groupby(["model", "prompt_id"], sort=True)["value"].agg(["mean", "size"])
    return out.rename(columns={"mean": "score", "size": "n_questions"}).reset_index()


def tifa_summary(scores: pd.DataFrame) -> pd.DataFrame:
    """``tifa_average`` (mean over captions) and ``tifa_stdev`` (sample std, ddof=1).

    With a single caption the stdev is NaN (the reference's ``statistics.stdev`` raises).

    Returns:
        Columns ``model, tifa_average, tifa_stdev, n_captions``.
    """
    per_caption = tifa_caption_scores(scores)
    out = per_caption.groupby("model", sort=True)["score"].agg(
        tifa_average="mean", tifa_stdev=lambda s: s.std(ddof=1), n_captions="size")
    return out.reset_index()


def tifa_accuracy_by_type(scores: pd.DataFrame) -> pd.DataFrame:
    """Micro accuracy over questions per element type (object, color, counting, ...).

    Returns:
        Columns ``model, element_type, accuracy, n_questions``.
    """
    df = _clean(scores, "tifa_accuracy_by_type", extra=("element_type",))
    out = df.groupby(["model", "element_type"], sort=True)["value"].agg(["mean", "size"])
    return out.rename(columns={"mean": "accuracy", "size": "n_questions"}).reset_index()
