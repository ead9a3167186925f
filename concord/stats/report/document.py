"""One JSON-serialisable document with every statistic of a study (or several).

This is what ``python -m concord stats --json`` and the dashboard show (field by field in
``docs/stats-json.md``). Each section is a list of flat records; records carry ``study``
when the input frames have that column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from concord.stats._codes import RATING_COLUMNS, distinct_text
from concord.stats._validate import check_positive_int, require_columns, require_frame
from concord.stats.agreement.intervals import ORDINAL_MAX_VALUES
from concord.stats.agreement.matrices import LEVELS
from concord.stats.derived import Derived, with_derived
from concord.stats.differences import MAX_MODELS
from concord.stats.human_vs_metric.metric_compare import MAX_METRICS
from concord.stats.human_vs_metric.model_level import MODEL_SCORES
from concord.stats.human_vs_metric.table import join_sources
from concord.stats.quality import gold_results, split_gold
from concord.stats.rankings import RANKING_COLUMNS
from concord.stats.report.pair_sections import (
    ELO_K,
    ELO_ORDERS,
    PAIR_SECTIONS,
    PairOptions,
    pair_counts,
    pair_gold_results,
    pair_sections,
    split_gold_pairs,
)
from concord.stats.report.records import jsonable, records
from concord.stats.report.sections import (
    gold_only_sections,
    human_sections,
    metric_sections,
    ranking_sections,
    rater_sections,
)
from concord.stats.thresholds import QualityThresholds

__all__ = ["SCHEMA_VERSION", "full_report"]

SCHEMA_VERSION = 3
# Key columns turned into categoricals once, so every later groupby works on integer codes.
_KEYS = ("study", "prompt_id", "model", "rater", "criterion", "dimension", "metric", "judge")
# Document layout: top-level key -> {list name: section key} (or one section key).
_LAYOUT: dict[str, str | dict[str, str]] = {
    "human": "human",
    "model_differences": "model_differences",
    "agreement": {"study": "agreement_study", "model": "agreement_model"},
    "rankings": {k: f"rankings_{k}" for k in ("models", "kendalls_w", "kendalls_w_prompts",
                                              "position_bias", "rank_by_position")},
    "human_vs_metric": "human_vs_metric",
    "metric_comparisons": "metric_comparisons",
    "human_vs_metric_per_model": {"models": "per_model_models",
                                  "combined": "per_model_combined"},
    "rater_vs_rest": {k: f"rest_{k}" for k in ("per_model", "pooled", "combined",
                                               "human_raters")},
    "raters": {k: f"raters_{k}" for k in ("quality", "flags", "times", "too_fast", "gold")},
    "disagreements": "disagreements",
    "pairs": {k: f"pairs_{k}" for k in PAIR_SECTIONS},
}


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
    pairs: pd.DataFrame | None = None,
    gold: pd.DataFrame | None = None,
    n_boot: int = 1000,
    n_perm: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    derived: Sequence[Derived] = (),
    levels: Sequence[str] = LEVELS,
    higher_is_better: Mapping[str, bool] | None = None,
    by_dimension: bool = False,
    model_score: str = "mean_image_means",
    quality: QualityThresholds | None = None,
    n_disagreements: int = 20,
    pair_options: PairOptions | None = None,
) -> dict:
    """Every statistic of ``concord.stats`` over the tidy frames, as one JSON-ready dict.

    Args:
        ratings: Ratings frame (``prompt_id, model, rater, criterion, value``; may be empty).
        rankings: Rankings frame, or None.
        scores: Metric scores frame, or None.
        pairs: Pairs frame (pairwise judgments; ``gold_model`` marks gold pairs), or None.
        gold: Gold expectations (``image_id, unit, criterion, expected, tolerance``), or
            None. Gold ratings and rankings count only for rater quality.
        n_boot: Bootstrap resamples (prompt level) for every CI.
        n_perm: Permutations for the model-level p-values.
        seed: Seed of all resampling.
        ci: Confidence level.
        derived: Derived criteria (e.g. :data:`concord.stats.IMAGENHUB_O`), computed per
            rater and image before anything else; from the study's rubric ``combine``.
        levels: Krippendorff α levels.
        higher_is_better: Direction per metric name (default True).
        by_dimension: Also add ``"by_dimension": {"human", "agreement"}`` per dimension,
            each computed as if the ratings held only that dimension.
        model_score: Human model score of the model-level human-vs-metric correlation:
            ``mean_image_means`` (default) or ``mean_rater_means``.
        quality: Flag thresholds (default :class:`QualityThresholds()`).
        n_disagreements: Images listed per metric × judge × human source.
        pair_options: Conventions of the Bradley–Terry and Elo scores (arena defaults).

    Returns:
        The document of ``docs/stats-json.md`` (without the service's ``benchmarks``);
        floats are plain floats, NaN is None.
    """
    require_columns(ratings, RATING_COLUMNS, where="full_report")
    for name, frame, cols in (("rankings", rankings, RANKING_COLUMNS),
                              ("scores", scores, ("prompt_id", "model", "metric", "value"))):
        if frame is not None:
            require_columns(frame, cols, where=f"full_report ({name})")
    if model_score not in MODEL_SCORES:
        raise ValueError(f"model_score must be one of {list(MODEL_SCORES)}, got {model_score!r}")
    settings = {"n_boot": check_positive_int(n_boot, name="n_boot"),
                "n_perm": check_positive_int(n_perm, name="n_perm"), "seed": seed, "ci": ci,
                "derived": tuple(derived), "levels": levels,
                "higher_is_better": higher_is_better, "by_dimension": by_dimension,
                "model_score": model_score, "quality": quality or QualityThresholds(),
                "n_disagreements": check_positive_int(n_disagreements,
                                                      name="n_disagreements"),
                "pair_options": pair_options or PairOptions()}
    ratings, rankings, scores = (_categorical(f) for f in (ratings, rankings, scores))
    parts: dict[str, list[pd.DataFrame]] = {}
    counts: list[dict] = []
    for study in _studies(ratings, rankings, scores, pairs):
        sections, used = _study_sections(_of(ratings, study), _of(rankings, study),
                                         _of(scores, study), _of(gold, study),
                                         _of(pairs, study), **settings)
        counts.append(used)
        for key, frame in sections.items():
            if frame is not None and not frame.empty:
                tagged = frame if study is None else frame.assign(study=study)
                parts.setdefault(key, []).append(tagged)
    out = {k: pd.concat(v, ignore_index=True) for k, v in parts.items()}
    doc: dict = {"meta": _meta(ratings, rankings, scores, counts, settings)}
    for key, spec in _LAYOUT.items():
        doc[key] = (records(out.get(spec)) if isinstance(spec, str)
                    else {name: records(out.get(section)) for name, section in spec.items()})
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


def _study_sections(ratings, rankings, scores, gold, pairs, *, n_boot, n_perm, seed, ci,
                    derived, levels, higher_is_better, by_dimension, model_score, quality,
                    n_disagreements, pair_options) -> tuple[dict[str, pd.DataFrame | None],
                                                             dict]:
    has_value = ratings["value"].notna().to_numpy()
    valued = ratings if has_value.all() else ratings[has_value]
    ranked = rankings if rankings is not None and not rankings.empty else None
    split = split_gold(valued, ranked, gold)
    rated = with_derived(split.ratings, derived) if not split.ratings.empty else split.ratings
    clean_ranked = split.rankings if split.rankings is not None and not split.rankings.empty \
        else None
    out: dict[str, pd.DataFrame | None] = {}
    if not rated.empty:
        out.update(human_sections(rated, n_boot=n_boot, n_perm=n_perm, ci=ci, seed=seed,
                                  levels=levels, by_dimension=by_dimension))
    if clean_ranked is not None:
        out.update(ranking_sections(clean_ranked, n_boot=n_boot, seed=seed, ci=ci))
    joined = join_sources(scores, ratings=rated if not rated.empty else None,
                          rankings=clean_ranked, higher_is_better=higher_is_better)
    metric = metric_sections(joined, n_boot=n_boot, n_perm=n_perm, seed=seed, ci=ci,
                             model_score=model_score, n_disagreements=n_disagreements,
                             higher_is_better=higher_is_better)
    out.update(metric)
    data_pairs, gold_pairs = split_gold_pairs(pairs)
    out.update(pair_sections(data_pairs, clean_ranked, scores, n_boot=n_boot, seed=seed,
                             ci=ci, higher_is_better=higher_is_better, options=pair_options))
    gold_table = _concat(gold_results(split.gold_ratings, split.gold_rankings, gold),
                         pair_gold_results(gold_pairs))
    if not valued.empty or ranked is not None:
        out.update(rater_sections(valued, ranked, joined, gold_table, quality, metric))
    elif not gold_table.empty:
        out.update(gold_only_sections(gold_table, quality))
    used = {"ratings": split.ratings, "rankings": clean_ranked,
            "gold_ratings": len(split.gold_ratings),
            "gold_rankings": _n_rankings(split.gold_rankings),
            "pairs": pair_counts(data_pairs), "gold_pairs": len(gold_pairs)}
    return out, used


def _concat(*frames: pd.DataFrame) -> pd.DataFrame:
    parts = [f for f in frames if not f.empty]
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else (parts or [frames[0]])[0]


def _n_rankings(rankings: pd.DataFrame | None) -> int:
    """Distinct rankings (prompt × rater × criterion) of a Rankings frame."""
    if rankings is None or rankings.empty:
        return 0
    return len(rankings[["prompt_id", "rater", "criterion"]].drop_duplicates())


def _meta(ratings, rankings, scores, counts: list[dict], settings: dict) -> dict:
    require_frame(ratings, where="full_report")
    rated = [c["ratings"] for c in counts]
    ranked = [c["rankings"] for c in counts if c["rankings"] is not None]

    def distinct(frames, col, pair_key):
        return set().union(*(distinct_text(f[col]) for f in frames if f is not None and col in f),
                           *(c["pairs"][pair_key] for c in counts))

    return jsonable({
        "schema_version": SCHEMA_VERSION,
        "n_ratings": sum(len(f) for f in rated),
        "n_rated_images": len(set().union(*(set(f["image_id"]) for f in rated
                                              if "image_id" in f))),
        "n_raters_who_rated": len(set().union(*(distinct_text(f["rater"]) for f in rated
                                                  if "rater" in f))),
        "n_gold_ratings": sum(c["gold_ratings"] for c in counts),
        "n_ranked_images": sum(len(f) for f in ranked),
        "n_rankings": sum(_n_rankings(f) for f in ranked),
        "n_ranked_prompts": sum(int(f["prompt_id"].nunique()) for f in ranked),
        "n_gold_rankings": sum(c["gold_rankings"] for c in counts),
        "n_scores": 0 if scores is None else len(scores),
        "n_pair_judgments": sum(c["pairs"]["n"] for c in counts),
        "n_gold_pair_judgments": sum(c["gold_pairs"] for c in counts),
        "n_raters": len(distinct([*rated, *ranked], "rater", "raters")),
        "n_models": len(distinct([*rated, *ranked], "model", "models")),
        "n_prompts": len(distinct([*rated, *ranked], "prompt_id", "prompts")),
        "metrics": [] if scores is None else sorted(distinct_text(scores["metric"])),
        "criteria": sorted(set().union(*(distinct_text(f["criterion"]) for f in rated))),
        "ranking_criteria": sorted(set().union(*(distinct_text(f["criterion"])
                                                 for f in ranked))),
        "pairs": {"both_bad": "tie", "elo_k": ELO_K, "elo_orders": ELO_ORDERS,
                  **settings["pair_options"].meta()},
        "comparisons": {"max_models": MAX_MODELS, "max_metrics": MAX_METRICS,
                        "ordinal_max_values": ORDINAL_MAX_VALUES},
        "derived": [{"name": d.name, "method": d.method, "criteria": list(d.criteria),
                     "dimensions": None if d.dimensions is None else list(d.dimensions)}
                    for d in settings["derived"]],
        "model_score": settings["model_score"],
        "quality": settings["quality"].as_dict(),
        **{k: settings[k] for k in ("n_boot", "n_perm", "seed", "ci", "n_disagreements")},
    })
