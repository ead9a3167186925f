"""The statistics of one study: what ``python -m concord stats`` prints and the dashboard shows.

Loads the tidy frames from the store, leaves out excluded raters, applies the filters,
derives criteria from the study's rubric ``combine``, runs
:func:`concord.stats.full_report` with the study's quality thresholds, and adds the
benchmark summaries of the stored metric scores. The JSON document is described in
``docs/stats-json.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from sqlite_utils import Database

from concord.services.metrics import runs as metric_runs
from concord.services.report import cache as report_cache
from concord.services.report import request as report_request
from concord.services.report.frames import StudyFrames, load_frames
from concord.services.report.request import ReportOptions, ReportRequest
from concord.services.report.settings import (
    DERIVED_NAME,
    derived_criteria,
    pair_options,
    quality_thresholds,
)
from concord.stats import full_report
from concord.stats.benchmarks.stored import SECTIONS, benchmark_tables, image_scores
from concord.stats.checklist import condition_agreement, overrides
from concord.stats.report.records import records
from concord.store import frames
from concord.store import report_cache as cache_store
from concord.store import studies as study_store

_SCORE_COLUMNS = ["study", "prompt_id", "model", "sample", "image_id", "metric", "judge",
                  "value", "dimension"]


def data_version(db: Database) -> tuple[str, ...]:
    """A fingerprint that changes with every change of any row (a rating, a score, an
    exclusion, a gold flag, ...): the dashboard's cache key (concord.store.report_cache;
    the older, coarser one where a table lacks its change triggers)."""
    fp = cache_store.fingerprint(db)
    return (fp,) if fp is not None else frames.data_version(db)


def report_text(db: Database, request: ReportRequest, *, use_cache: bool = True) -> str:
    """:func:`study_report` as compact JSON, reused from the report cache while the data,
    the options and the code are unchanged (``concord.services.report.cache``)."""
    text, _ = report_cache.report_json(
        db, request, lambda: report_json(study_report(db, request), indent=None),
        use_cache=use_cache)
    return text


def study_names(db: Database) -> list[str]:
    """Every study, oldest first."""
    return study_store.list_study_names(db)


def study_report(db: Database, request: ReportRequest, *,
                 higher_is_better: Callable[[str], bool] | None = None,
                 data: StudyFrames | None = None) -> dict:
    """The statistics document of one study (``docs/stats-json.md``).

    Args:
        db: The database.
        request: The study, its dimensions and the options
            (:func:`concord.services.report.request.resolve`).
        higher_is_better: A metric's direction (from its evaluator class); default: asked
            of the metric catalog in a child process, since the app never imports the
            evaluators (the CLI passes ``evaluators.registry.higher_is_better``).
        data: The study's frames, when already read by :func:`load_frames` with the
            request's ``dimension`` and ``metric``.

    Returns:
        :func:`concord.stats.full_report`'s sections plus ``benchmarks`` and
        ``raters.excluded``; ``meta`` also names the study, rubric and filters.
    """
    opts = request.options
    if data is None:
        data = load_frames(db, request.study, dimension=opts.dimension, metric=opts.metric)
    return report_of(data, request, info=frames.images_frame(db, request.study.id),
                     higher_is_better=higher_is_better)


def report_of(data: StudyFrames, request: ReportRequest, *, info: pd.DataFrame | None = None,
              higher_is_better: Callable[[str], bool] | None = None) -> dict:
    """:func:`study_report` of frames already loaded (the filters only go into ``meta``);
    ``info``: the study's images (``image_id, prompt_id, prompt, model, sample, path``)
    that the disagreements are listed with."""
    opts, study = request.options, request.study
    images = image_scores(data.scores)
    stats_scores = images[_SCORE_COLUMNS] if not images.empty else None
    direction = higher_is_better or metric_runs.higher_is_better
    directions = {m: direction(m) for m in data.scores["metric"].unique()}
    doc = full_report(data.ratings, data.rankings, stats_scores, pairs=data.pairs,
                      gold=data.gold, n_boot=opts.n_boot, n_perm=opts.n_perm,
                      seed=opts.seed, higher_is_better=directions,
                      by_dimension=opts.by_dimension, model_score=opts.model_score,
                      derived=derived_criteria(study, list(request.dimensions)),
                      quality=quality_thresholds(study),
                      n_disagreements=opts.n_disagreements,
                      pair_options=pair_options(study, dict(opts.pairs) or None))
    doc["meta"].update(
        study=study.name, dimension=opts.dimension, metric=opts.metric,
        rubric=study.rubric, rubrics=study.settings.get("rubrics"),
        excluded_raters=[r["rater"] for r in data.excluded],
        lower_is_better=sorted(m for m, up in directions.items() if not up))
    doc["raters"]["excluded"] = [dict(r) for r in data.excluded]
    if info is not None and doc["disagreements"]:
        doc["disagreements"] = _with_images(doc["disagreements"], info)
    doc["checklist"] = checklist_section(data.checklist)
    tables = benchmark_tables(data.scores)
    doc["benchmarks"] = {k: records(tables.get(k)) for k in (*SECTIONS, "problems")}
    return doc


def checklist_section(ticks: pd.DataFrame | None) -> dict[str, list[dict]]:
    """``checklist``: agreement per condition and override shares (empty lists for a study
    without checklist answers)."""
    if ticks is None or ticks.empty:
        return {"conditions": [], "overrides": []}
    return {"conditions": records(condition_agreement(ticks)),
            "overrides": records(overrides(ticks))}


def _with_images(rows: list[dict], info: pd.DataFrame) -> list[dict]:
    """Disagreement records with ``image_id``, ``prompt`` and ``path`` (relative)."""
    frame = pd.DataFrame(rows)
    keys = ["prompt_id", "model", "sample"]
    extra = info[[*keys, "image_id", "prompt", "path"]].astype({"prompt_id": str,
                                                                "model": str})
    merged = frame.astype({"prompt_id": str, "model": str}).merge(extra, on=keys, how="left")
    return records(merged)


def dashboard(db: Database, request: ReportRequest) -> dict:
    """Everything the dashboard shows: the report (from the cache when it holds it) and
    the study's image folder.

    Returns:
        ``{"report": study_report, "root": the study's image folder or None}``.
    """
    return {"report": json.loads(report_text(db, request)), "root": request.study.root}


def image_file(root: str | None, path: object) -> str | None:
    """Absolute path of an image file, or None without a root or path."""
    if not root or not isinstance(path, str) or not path:
        return None
    return str(Path(root) / path)


def report_json(report: dict, *, indent: int | None = 2) -> str:
    """The report as strict JSON (NaN was already turned into null)."""
    return json.dumps(report, allow_nan=False, indent=indent, ensure_ascii=False)


def disagreements(db: Database, study: study_store.Study, metric: str, judge: str = "",
                  n: int = 20, *, source: str | None = None,
                  dimension: str | None = None) -> list[dict]:
    """Images where the human and the metric ranking disagree most (``disagreements``).

    Args:
        db: The database.
        study: The study.
        metric: Metric name.
        judge: Judge of the metric (``""`` when none).
        n: How many images.
        source: Human source (``ratings:<criterion>`` or ``rankings:<criterion>``);
            default :func:`default_source` of the report.
        dimension: Only this dimension.

    Returns:
        The report's ``disagreements`` records of that metric, judge and source, with
        ``path`` made absolute (None without a file).

    Raises:
        NotFoundError: A metric or dimension the study does not have.
    """
    options = ReportOptions(n_boot=1, n_perm=1, dimension=dimension, metric=metric,
                            n_disagreements=n)
    doc = study_report(db, report_request.for_study(db, study, options))
    source = source or default_source(doc)
    return [{**r, "path": image_file(study.root, r.get("path"))} for r in doc["disagreements"]
            if r["metric"] == metric and r["judge"] == judge and r["human_source"] == source]


def default_source(doc: dict) -> str | None:
    """The human source shown first: the derived criterion, else the first rated
    criterion, else the first ranking criterion."""
    sources = sorted({r["human_source"] for r in doc["disagreements"]}
                     | {r["human"] for r in doc["human_vs_metric"]})
    for prefer in (f"ratings:{DERIVED_NAME}", "ratings:", "rankings:"):
        found = [s for s in sources if s == prefer or (prefer.endswith(":")
                                                       and s.startswith(prefer))]
        if found:
            return found[0]
    return None


def rater_quality(db: Database, study: study_store.Study) -> list[dict]:
    """The report's ``raters.quality`` records (per rater × unit × criterion)."""
    request = report_request.for_study(db, study, ReportOptions(n_boot=1, n_perm=1))
    return study_report(db, request)["raters"]["quality"]
