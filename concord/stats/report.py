"""One JSON-serialisable document with every statistic of a study (or several).

This is what ``python -m concord stats --json`` and the dashboard show. Each section is a
list of flat records; records carry ``study`` when the input frames have that column.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from concord.stats._validate import require_columns, require_frame
from concord.stats.agreement import LEVELS, leave_one_out
from concord.stats.agreement_frames import (
    agreement_row,
    agreement_table,
    gold_accuracy,
    group_matrices,
)
from concord.stats.human import (
    RATING_COLUMNS,
    model_scores,
    overall_scores,
)
from concord.stats.human_metric import human_metric_table
from concord.stats.rankings import (
    RANKING_COLUMNS,
    kendalls_w_by_prompt,
    model_ranking,
    position_bias,
    rank_by_position,
)

SCHEMA_VERSION = 1
# Key columns turned into categoricals once, so every later groupby works on integer codes.
_KEYS = ("study", "prompt_id", "model", "rater", "criterion", "dimension", "metric", "judge")


def jsonable(value: object) -> object:
    """Convert numpy/pandas scalars and containers to JSON types; NaN and NA become None."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return None if math.isnan(value) or math.isinf(value) else float(value)
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    return str(value)


def records(frame: pd.DataFrame | None) -> list[dict]:
    """A frame as a list of JSON-ready records (``[]`` for None)."""
    if frame is None or frame.empty:
        return []
    return [jsonable(r) for r in frame.to_dict(orient="records")]


def _studies(*frames: pd.DataFrame | None) -> list[object]:
    """Studies named in any frame; ``[None]`` (everything at once) when none has the column."""
    names = {s for f in frames if f is not None and "study" in f.columns
             for s in f["study"].dropna().unique().tolist()}
    return sorted(names, key=str) if names else [None]


def _of(frame: pd.DataFrame | None, study: object) -> pd.DataFrame | None:
    if frame is None or study is None or "study" not in frame.columns:
        return frame
    return frame[frame["study"] == study]


def full_report(
    ratings: pd.DataFrame,
    rankings: pd.DataFrame | None = None,
    scores: pd.DataFrame | None = None,
    *,
    gold: pd.DataFrame | None = None,
    n_boot: int = 1000,
    n_perm: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    criteria: tuple[str, str] = ("SC", "PR"),
    overall: str | None = "O",
    levels: Sequence[str] = LEVELS,
    higher_is_better: Mapping[str, bool] | None = None,
    by_dimension: bool = False,
) -> dict:
    """Every statistic of ``concord.stats`` over the tidy frames, as one JSON-ready dict.

    Args:
        ratings: Ratings frame (``prompt_id, model, rater, criterion, value``; may be empty).
        rankings: Rankings frame, or None.
        scores: Metric scores frame, or None.
        gold: Gold expectations (``image_id, criterion, expected, tolerance``), or None.
        n_boot: Bootstrap resamples (prompt level) for every CI.
        n_perm: Permutations for the model-level p-values.
        seed: Seed of all resampling.
        ci: Confidence level.
        criteria: The two criteria combined into ``overall`` (per rater and image).
        overall: Name of the combined criterion; None to skip it.
        levels: Krippendorff α levels.
        higher_is_better: Direction per metric name (default True).
        by_dimension: Also add ``"by_dimension": {"human", "agreement"}``: the model
            scores and per-model agreement of each prompt dimension, each computed exactly
            as if the ratings held only that dimension (its prompts are the resampling units).

    Returns:
        ``{"meta", "human", "agreement": {"study", "model", "raters", "gold"},
        "rankings": {"models", "kendalls_w", "position_bias", "rank_by_position"},
        "human_vs_metric"}`` (+ ``"by_dimension"``); floats are plain floats, NaN is None.
    """
    require_columns(ratings, RATING_COLUMNS, where="full_report")
    for name, frame, cols in (("rankings", rankings, RANKING_COLUMNS),
                              ("scores", scores, ("prompt_id", "model", "metric", "value"))):
        if frame is not None:
            require_columns(frame, cols, where=f"full_report ({name})")
    ratings, rankings, scores = (_categorical(f) for f in (ratings, rankings, scores))
    parts: dict[str, list[pd.DataFrame]] = {}
    for study in _studies(ratings, rankings, scores):
        sections = _study_sections(
            _of(ratings, study), _of(rankings, study), _of(scores, study), _of(gold, study),
            n_boot=n_boot, n_perm=n_perm, seed=seed, ci=ci, criteria=criteria,
            overall=overall, levels=levels, higher_is_better=higher_is_better,
            by_dimension=by_dimension)
        for key, frame in sections.items():
            if frame is not None and not frame.empty:
                tagged = frame if study is None else frame.assign(study=study)
                parts.setdefault(key, []).append(tagged)
    out = {k: pd.concat(v, ignore_index=True) for k, v in parts.items()}
    doc = {
        "meta": _meta(ratings, rankings, scores, n_boot=n_boot, n_perm=n_perm, seed=seed,
                      ci=ci, overall=overall, criteria=criteria),
        "human": records(out.get("human")),
        "agreement": {k: records(out.get(f"agreement_{k}"))
                      for k in ("study", "model", "raters", "gold")},
        "rankings": {k: records(out.get(f"rankings_{k}"))
                     for k in ("models", "kendalls_w", "position_bias", "rank_by_position")},
        "human_vs_metric": records(out.get("human_vs_metric")),
    }
    if by_dimension:
        doc["by_dimension"] = {k: records(out.get(f"dimension_{k}"))
                               for k in ("human", "agreement")}
    return doc


def _categorical(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    if frame is None:
        return None
    cols = {c: frame[c].astype("category") for c in _KEYS
            if c in frame.columns and not isinstance(frame[c].dtype, pd.CategoricalDtype)}
    return frame.assign(**cols) if cols else frame


def _with_overall(ratings: pd.DataFrame, criteria, overall) -> pd.DataFrame:
    present = set(ratings["criterion"].unique())
    if overall is None or not set(criteria) <= present or overall in present:
        return ratings
    combined = overall_scores(ratings, criteria=criteria, output=overall)
    if isinstance(ratings["criterion"].dtype, pd.CategoricalDtype):
        # Give both parts the same categories so concat keeps the column categorical
        # (re-encoding 1.5 M strings afterwards costs more than the statistic).
        crit = ratings["criterion"].cat.add_categories([overall])
        # Keep categories sorted, so groups come out in the same order as elsewhere.
        with contextlib.suppress(TypeError):
            crit = crit.cat.reorder_categories(sorted(crit.cat.categories))
        ratings = ratings.assign(criterion=crit)
        combined["criterion"] = pd.Categorical(combined["criterion"],
                                               categories=crit.cat.categories)
    return _categorical(pd.concat([ratings, combined], ignore_index=True))


def _study_sections(ratings, rankings, scores, gold, *, n_boot, n_perm, seed, ci, criteria,
                    overall, levels, higher_is_better,
                    by_dimension=False) -> dict[str, pd.DataFrame | None]:
    out: dict[str, pd.DataFrame | None] = {}
    has_value = ratings["value"].notna().to_numpy()
    rated = ratings if has_value.all() else ratings[has_value]
    if not rated.empty:
        rated = _with_overall(rated, criteria, overall)
        out["human"] = model_scores(rated, n_boot=n_boot, ci=ci, seed=seed)
        out["agreement_study"], out["agreement_raters"] = _study_agreement(rated, levels)
        out["agreement_model"] = agreement_table(rated, by=("model", "criterion"),
                                                 levels=levels)
        if gold is not None and "image_id" in rated.columns:
            out["agreement_gold"] = gold_accuracy(rated, gold)
        if by_dimension and "dimension" in rated.columns:
            out["dimension_human"], out["dimension_agreement"] = _dimension_sections(
                rated, n_boot=n_boot, ci=ci, seed=seed, levels=levels)
    if rankings is not None and not rankings.empty:
        out.update(_ranking_sections(rankings))
    if scores is not None and not scores.empty:
        out["human_vs_metric"] = human_metric_table(
            scores, ratings=rated if not rated.empty else None, rankings=rankings,
            higher_is_better=higher_is_better, n_boot=n_boot, n_perm=n_perm, seed=seed, ci=ci)
    return out


def _dimension_sections(rated: pd.DataFrame, *, n_boot, ci, seed,
                        levels) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    # One subset at a time, not one groupby over all: each dimension's CI then resamples
    # only its own prompts, so these rows equal a report filtered to that dimension.
    human, agree = [], []
    dims = rated["dimension"]
    for dim in sorted(dims.dropna().unique().tolist(), key=str):
        sub = rated[(dims == dim).to_numpy()]
        human.append(model_scores(sub, n_boot=n_boot, ci=ci, seed=seed).assign(dimension=dim))
        agree.append(agreement_table(sub, by=("model", "criterion"),
                                     levels=levels).assign(dimension=dim))
    if not human:
        return None, None
    return pd.concat(human, ignore_index=True), pd.concat(agree, ignore_index=True)


def _study_agreement(rated: pd.DataFrame, levels) -> tuple[pd.DataFrame, pd.DataFrame]:
    # agreement_table + rater_quality per criterion, sharing each criterion's matrix.
    rows, raters = [], []
    for head, data, names in group_matrices(rated, ("criterion",)):
        rows.append({**head, **agreement_row(data, levels)})
        raters.append(leave_one_out(data, raters=names).assign(**head))
    return pd.DataFrame(rows), pd.concat(raters, ignore_index=True)


def _ranking_sections(rankings: pd.DataFrame) -> dict[str, pd.DataFrame]:
    w = kendalls_w_by_prompt(rankings)
    summary = w.groupby("criterion", sort=True).agg(
        mean_w=("w", "mean"), median_w=("w", "median"), n_prompts=("w", "count"),
        mean_raters=("n_raters", "mean")).reset_index()
    out = {"rankings_models": model_ranking(rankings), "rankings_kendalls_w": summary}
    if "position" in rankings.columns:
        out["rankings_position_bias"] = position_bias(rankings)
        out["rankings_rank_by_position"] = rank_by_position(rankings)
    return out


def _meta(ratings, rankings, scores, **settings) -> dict:
    require_frame(ratings, where="full_report")

    def count(frame, col):
        return int(frame[col].nunique()) if frame is not None and col in frame else 0

    return jsonable({
        "schema_version": SCHEMA_VERSION,
        "n_ratings": len(ratings),
        "n_rankings_rows": 0 if rankings is None else len(rankings),
        "n_scores": 0 if scores is None else len(scores),
        "n_raters": count(ratings, "rater"),
        "n_models": count(ratings, "model"),
        "n_prompts": count(ratings, "prompt_id"),
        "metrics": [] if scores is None else sorted(scores["metric"].astype(str).unique()),
        **settings,
    })
