"""The statistics of one study: what ``python -m concord stats`` prints and the dashboard shows.

Loads the tidy frames from the store, applies the filters, runs
:func:`concord.stats.full_report` and adds the benchmark summaries of the stored metric
scores. Also the dashboard's drill-downs: where humans and a metric disagree most, and
per-rater quality. The JSON document is described in ``docs/stats-json.md``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sqlite_utils import Database

from concord.errors import NotFoundError
from concord.stats import full_report, gold_accuracy, overall_scores
from concord.stats import rater_quality as leave_one_out_table
from concord.stats.benchmarks.stored import SECTIONS, benchmark_tables, image_scores
from concord.stats.report import records
from concord.store import frames
from concord.store import studies as study_store

# Direction of the known metrics. The app must not import evaluator classes (they pull in
# torch), so the evaluators' ``higher_is_better`` is mirrored here: GNED is a distance.
LOWER_IS_BETTER = frozenset({"gned"})
_SCORE_COLUMNS = ["study", "prompt_id", "model", "sample", "image_id", "metric", "judge",
                  "value", "dimension"]


def higher_is_better(metric: str) -> bool:
    """Whether a higher value of ``metric`` means a better image (unknown metrics: True)."""
    return metric not in LOWER_IS_BETTER


@dataclass(frozen=True, slots=True)
class StudyFrames:
    """The tidy frames of one study after the filters (``rankings``/``gold`` None if none)."""

    ratings: pd.DataFrame
    rankings: pd.DataFrame | None
    scores: pd.DataFrame
    gold: pd.DataFrame | None


def data_version(db: Database) -> tuple[str, ...]:
    """A fingerprint that changes with every rating, ranking or score (the cache key)."""
    return frames.data_version(db)


def study_names(db: Database) -> list[str]:
    """Every study, oldest first."""
    return study_store.list_study_names(db)


def filter_options(db: Database, study_name: str) -> dict[str, list]:
    """What a study can be filtered by: ``dimensions`` and ``metrics`` ((metric, judge))."""
    study = study_store.get_study(db, study_name)
    dims = frames.images_frame(db, study.id)["dimension"].dropna().unique().tolist()
    return {"dimensions": sorted(map(str, dims)),
            "metrics": frames.metric_judges(db, study.id)}


def _check_choice(value: str | None, known: list[str], what: str, study: str) -> None:
    if value is not None and value not in known:
        raise NotFoundError(f"study {study!r} has no {what} {value!r} "
                           f"({what}s: {', '.join(known) or 'none'})")


def load_frames(db: Database, study_name: str, *, dimension: str | None = None,
                metric: str | None = None) -> StudyFrames:
    """The study's ratings, rankings, metric scores and gold, filtered.

    Raises:
        NotFoundError: No such study, or a ``dimension``/``metric`` it does not have.
    """
    study = study_store.get_study(db, study_name)
    options = filter_options(db, study_name)
    _check_choice(dimension, options["dimensions"], "dimension", study_name)
    _check_choice(metric, sorted({m for m, _ in options["metrics"]}), "metric", study_name)
    ratings = frames.ratings_frame(db, study.id, categorical=True, times=False)
    rankings = frames.rankings_frame(db, study.id)
    scores = frames.scores_frame(db, study.id)
    gold = frames.gold_frame(db, study.id)
    if dimension is not None:
        ratings = ratings[(ratings["dimension"] == dimension).to_numpy()]
        rankings = rankings[rankings["dimension"] == dimension]
        scores = scores[scores["dimension"] == dimension]
    if metric is not None:
        scores = scores[scores["metric"] == metric]
    return StudyFrames(ratings.reset_index(drop=True),
                       None if rankings.empty else rankings.reset_index(drop=True),
                       scores.reset_index(drop=True), None if gold.empty else gold)


def study_report(db: Database, study_name: str, *, n_boot: int = 1000, n_perm: int = 1000,
                 seed: int = 0, dimension: str | None = None, metric: str | None = None,
                 by_dimension: bool = False) -> dict:
    """The statistics document of one study (``docs/stats-json.md``).

    Args:
        db: The database.
        study_name: The study.
        n_boot: Prompt-bootstrap resamples of every CI.
        n_perm: Permutations of the model-level p-values.
        seed: Seed of all resampling.
        dimension: Only prompts of this dimension (ratings, rankings and scores).
        metric: Only this metric (human vs metric and benchmarks).
        by_dimension: Add per-dimension model scores and agreement (``by_dimension``).

    Returns:
        :func:`concord.stats.full_report`'s sections plus ``benchmarks``; ``meta`` also
        names the study and the filters. Sections without data are empty, not errors.

    Raises:
        NotFoundError: No such study, or a dimension or metric it does not have.
    """
    data = load_frames(db, study_name, dimension=dimension, metric=metric)
    return report_of(data, study_name, n_boot=n_boot, n_perm=n_perm, seed=seed,
                     dimension=dimension, metric=metric, by_dimension=by_dimension)


def report_of(data: StudyFrames, study_name: str, *, n_boot: int = 1000, n_perm: int = 1000,
              seed: int = 0, dimension: str | None = None, metric: str | None = None,
              by_dimension: bool = False) -> dict:
    """:func:`study_report` of frames already loaded (the filters only go into ``meta``)."""
    images = image_scores(data.scores)
    stats_scores = images[_SCORE_COLUMNS] if not images.empty else None
    directions = {m: higher_is_better(m) for m in data.scores["metric"].unique()}
    doc = full_report(data.ratings, data.rankings, stats_scores, gold=data.gold,
                      n_boot=n_boot, n_perm=n_perm, seed=seed, higher_is_better=directions,
                      by_dimension=by_dimension)
    doc["meta"].update(study=study_name, dimension=dimension, metric=metric,
                       lower_is_better=sorted(m for m, up in directions.items() if not up))
    tables = benchmark_tables(data.scores)
    doc["benchmarks"] = {k: records(tables.get(k)) for k in (*SECTIONS, "problems")}
    return doc


def dashboard(db: Database, study_name: str, *, dimension: str | None = None,
              metric: str | None = None, n_boot: int = 1000, n: int = 20) -> dict:
    """Everything the dashboard shows, from ONE read of the study's frames.

    Returns:
        ``{"report": study_report, "raters": rater_quality, "disagreements": [{metric,
        judge, images: disagreements}]}`` (per metric × judge, default human criterion).
    """
    data = load_frames(db, study_name, dimension=dimension, metric=metric)
    human, source = _human_items(data, None)
    values = image_scores(data.scores)
    info = _image_info(db, study_name) if not (human.empty or values.empty) else None
    worst = []
    for (m, j), part in (values.groupby(["metric", "judge"], sort=True)
                         if info is not None else ()):
        worst.append({"metric": m, "judge": j,
                      "images": _disagreements(human, source, part, info, m, n)})
    return {"report": report_of(data, study_name, n_boot=n_boot, n_perm=n_boot, seed=0,
                                dimension=dimension, metric=metric),
            "raters": _rater_quality(data), "disagreements": worst}


def report_json(report: dict, *, indent: int | None = 2) -> str:
    """The report as strict JSON (NaN was already turned into null)."""
    return json.dumps(report, allow_nan=False, indent=indent, ensure_ascii=False)


def _human_items(data: StudyFrames, criterion: str | None) -> tuple[pd.DataFrame, str]:
    """Per image: mean human score (ratings, or minus the mean rank) and raters."""
    ratings = data.ratings.astype({"criterion": str})
    present = set(ratings["criterion"].unique())
    if not ratings.empty:
        if criterion is None:
            criterion = "O" if {"SC", "PR"} <= present else sorted(present)[0]
        if criterion == "O" and "O" not in present:
            ratings = overall_scores(ratings)
        part = ratings[ratings["criterion"] == criterion]
        items = part.groupby("image_id", sort=False, observed=True)["value"].agg(
            human="mean", n_raters="size")
        return items.reset_index(), f"ratings:{criterion}"
    if data.rankings is not None:
        crit = criterion or "overall"
        part = data.rankings[data.rankings["criterion"] == crit]
        items = part.groupby("image_id", sort=False)["rank"].agg(
            human=lambda r: -r.mean(), n_raters="size")
        return items.reset_index(), f"rankings:{crit}"
    return pd.DataFrame(columns=["image_id", "human", "n_raters"]), ""


def disagreements(db: Database, study_name: str, metric: str, judge: str = "", n: int = 20,
                  *, criterion: str | None = None, dimension: str | None = None) -> list[dict]:
    """Images where the human and the metric ranking disagree most.

    Both are ranked over the images they share (percentile ranks, 1 = best; a
    lower-is-better metric is flipped first); ``gap`` = |human rank − metric rank|.

    Args:
        db: The database.
        study_name: The study.
        metric: Metric name.
        judge: Judge of the metric (``""`` when none).
        n: How many images.
        criterion: Human criterion (default ``O`` when SC and PR are rated, for rankings
            ``overall``).
        dimension: Only this dimension.

    Returns:
        Records, largest gap first: ``image_id, prompt_id, prompt, model, sample,
        dimension, path`` (absolute, None without a file), ``human, metric, human_rank,
        metric_rank, gap, n_raters, source``.
    """
    data = load_frames(db, study_name, dimension=dimension, metric=metric)
    human, source = _human_items(data, criterion)
    scores = data.scores[data.scores["judge"] == judge]
    values = image_scores(scores)
    if human.empty or values.empty:
        return []
    return _disagreements(human, source, values, _image_info(db, study_name), metric, n)


def _disagreements(human: pd.DataFrame, source: str, values: pd.DataFrame,
                   info: pd.DataFrame, metric: str, n: int) -> list[dict]:
    both = human.merge(values[["image_id", "value"]].rename(columns={"value": "metric"}),
                       on="image_id").dropna(subset=["human", "metric"])
    sign = 1.0 if higher_is_better(metric) else -1.0
    both["human_rank"] = both["human"].rank(ascending=False, pct=True)
    both["metric_rank"] = (sign * both["metric"]).rank(ascending=False, pct=True)
    both["gap"] = (both["human_rank"] - both["metric_rank"]).abs()
    top = both.sort_values(["gap", "image_id"], ascending=[False, True]).head(n)
    cols = ["image_id", "prompt_id", "prompt", "model", "sample", "dimension", "path"]
    out = top.merge(info[cols], on="image_id", how="left")[
        [*cols, "human", "metric", "human_rank", "metric_rank", "gap", "n_raters"]]
    return records(out.assign(source=source))


def _image_info(db: Database, study_name: str) -> pd.DataFrame:
    """The study's images with absolute paths (None for an image without a file)."""
    study = study_store.get_study(db, study_name)
    info = frames.images_frame(db, study.id)
    root = Path(study.root) if study.root else None
    info["path"] = [str(root / p) if root and isinstance(p, str) and p else None
                    for p in info["path"]]
    return info


def rater_quality(db: Database, study_name: str) -> list[dict]:
    """Per rater and criterion: agreement with the others, time, straight-lining, gold.

    Returns:
        Records with ``rater, criterion, n_ratings, median_seconds, modal_value,
        modal_share`` (share of the rater's ratings equal to their most common value),
        ``zero_variance`` (all of ≥ 2 ratings equal), ``loo_spearman, loo_pearson`` (vs
        the mean of the other raters, per image) and, with gold items, ``gold_n,
        gold_accuracy``. Empty for a study without ratings.
    """
    return _rater_quality(load_frames(db, study_name))


def _rater_quality(data: StudyFrames) -> list[dict]:
    ratings = data.ratings.astype({"rater": str, "criterion": str})
    if ratings.empty:
        return []
    keys = ["rater", "criterion"]
    table = ratings.groupby(keys, sort=True).agg(
        n_ratings=("value", "size"), median_seconds=("seconds", "median"), std=("value", "std"))
    # The most common value of each rater (ties: the lowest value) and its share.
    counts = ratings.groupby([*keys, "value"]).size().rename("count").reset_index()
    top = counts.sort_values([*keys, "count", "value"], ascending=[True, True, False, True])
    top = top.drop_duplicates(keys).set_index(keys)
    table = table.assign(modal_value=top["value"], modal_share=top["count"] / table["n_ratings"],
                         zero_variance=table["std"] == 0)
    loo = leave_one_out_table(ratings).rename(
        columns={"spearman": "loo_spearman", "pearson": "loo_pearson"})
    table = table.reset_index().drop(columns="std").merge(
        loo[["rater", "criterion", "loo_spearman", "loo_pearson"]],
        on=["rater", "criterion"], how="left")
    if data.gold is not None:
        gold = gold_accuracy(ratings, data.gold)
        table = table.merge(gold.rename(columns={"n_gold": "gold_n",
                                                 "accuracy": "gold_accuracy"}),
                            on=[c for c in ("rater", "criterion") if c in gold.columns],
                            how="left").drop(columns=["n_correct"], errors="ignore")
    return records(table.replace({np.inf: np.nan}))
