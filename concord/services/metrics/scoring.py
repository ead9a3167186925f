"""Scoring a study with an automatic metric: checked first, resumable, shardable, watched.

The request comes resolved (:mod:`concord.services.metrics.score_request`: metric entry, judge
placement, resume key). ``run_scoring`` checks what can be checked before any model loads
(the study exists, a question metric has questions to score, no live run scores the same
thing), skips what is already scored with the same metric, judge and score-changing
options, keeps the shard's share, records the run (pid, heartbeat, counts) and scores the
rest step by step: every step is one write (database transaction or score-file append), so
an interrupted run keeps what it wrote. An image that cannot be scored becomes an error row
and is retried by the next run. SIGTERM or Ctrl-C end the run as ``cancelled``; an error
ends it as ``failed``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from concord.services.metrics.score_output import DatabaseSink, FileSink, Heartbeat, run_header
from concord.services.metrics.score_request import ScoringError, ScoringRequest, parse_shard
from concord.services.metrics.score_steps import (
    Counts,
    Shard,
    is_done,
    needs_questions,
    score_steps,
)
from concord.store import runs as run_store
from concord.store.db import now
from concord.store.scores import ScoringItem, has_questions, scored_keys, scoring_items
from concord.store.studies import Study, get_study
from evaluators.base import Evaluator, EvaluatorError

logger = logging.getLogger(__name__)

__all__ = ["RunCancelled", "RunSummary", "ScoringError", "ScoringRequest", "Shard",
           "build_evaluator", "parse_shard", "run_scoring"]


class RunCancelled(KeyboardInterrupt):
    """SIGTERM: stop now and record the run as cancelled (never caught as an Exception).

    A KeyboardInterrupt so that a database driver treats it as Ctrl-C: psycopg cancels
    the query it interrupts on the server instead of leaving the connection mid-command."""


def build_evaluator(request: ScoringRequest) -> Evaluator:
    """Create the request's metric (nothing loads yet); a bad option is a ScoringError.

    A metric with a VLM judge gets the normalised judge and the request's placement
    (device, batch_size, dtype, trust_remote_code, share_prefix, device_map, max_memory);
    the metric's own options go to its constructor as keyword arguments.
    """
    kwargs = dict(request.options)
    if request.metric.needs_judge:
        kwargs.update(model=request.model, **request.judge)
    try:
        return request.metric.load_class()(**kwargs)
    except (TypeError, ValueError, EvaluatorError) as exc:
        raise ScoringError(f"metric {request.metric.name!r}: {exc}") from exc


@dataclass(slots=True)
class RunSummary:
    """What a scoring run did."""

    metric: str
    judge: str
    run_id: str | None = None
    status: str = "nothing to do"
    images: int = 0
    already_done: int = 0
    other_shards: int = 0
    scored: int = 0
    errors: int = 0
    rows: int = 0
    seconds: float = 0.0


def _pending(db: Database, study: Study, evaluator: Evaluator, job: ScoringRequest,
             sink: Any) -> tuple[list[ScoringItem], RunSummary]:
    """The items this run will score, and the counts of those it skips."""
    summary = RunSummary(metric=evaluator.name, judge=evaluator.judge)
    items = scoring_items(db, study.id)
    if isinstance(sink, FileSink):
        sink = FileSink(db, sink.path, items)
    done = scored_keys(db, study.id, evaluator.name, evaluator.judge, job.options_key)
    done |= sink.done_keys(evaluator.name, evaluator.judge, job.options_key)
    summary.images = len(items)
    pending = []
    questions = needs_questions(evaluator)
    for item in items:
        if job.shard is not None and not job.shard.holds(item.image_id):
            summary.other_shards += 1
        elif is_done(item, done, questions):
            summary.already_done += 1
        else:
            pending.append(item)
    return (pending if job.limit is None else pending[:job.limit]), summary


def _precheck(db: Database, study: Study, evaluator: Evaluator) -> None:
    if needs_questions(evaluator) and not has_questions(db, study.id):
        raise ScoringError(
            f"metric {evaluator.name!r} scores each prompt's questions, but study "
            f"{study.name!r} has none; import the benchmark's questions with the study "
            "(manifest 'questions:' or a benchmark layout), or use an image-level metric")


def run_scoring(db: Database, job: ScoringRequest,
                evaluator: Evaluator | None = None) -> RunSummary:
    """Score what is still unscored in ``job.study``, writing step by step.

    ``evaluator`` is the request's metric when the caller built it already (see
    :func:`build_evaluator`).

    Raises:
        NotFoundError: no such study.
        ScoringError: nothing to score it with (no questions), the judge model or OCR
            engine cannot be loaded, or a live run scores the same thing.
        RunCancelled: SIGTERM arrived (the run is recorded as cancelled first).
    """
    evaluator = evaluator or build_evaluator(job)
    study = get_study(db, job.study)
    _precheck(db, study, evaluator)
    sink: Any = FileSink(db, job.output, []) if job.output else DatabaseSink(db, study.id)
    pending, summary = _pending(db, study, evaluator, job, sink)
    if not pending:
        return summary
    if isinstance(sink, FileSink):
        sink = FileSink(db, sink.path, pending)
    try:
        summary.run_id = run_store.start_run(
            db, run_id=job.run_id or run_store.new_run_id(), study_id=study.id,
            metric=evaluator.name, judge=evaluator.judge, params=job.params,
            options_key=job.options_key, shard=summary_shard(job), n_total=len(pending),
            log_path=job.log_path)
    except run_store.RunConflict as exc:
        raise ScoringError(str(exc)) from exc
    _run(db, evaluator, job, study, sink, pending, summary)
    return summary


def _run(db: Database, evaluator: Evaluator, job: ScoringRequest, study: Study, sink: Any,
         pending: list[ScoringItem], summary: RunSummary) -> None:
    """Load, score, and record how the run ended whatever happens."""
    counts, started, error = Counts(), time.perf_counter(), None
    summary.status = "failed"
    run_id = summary.run_id or ""
    try:
        with Heartbeat(db, run_id):
            try:
                evaluator.load()
            except EvaluatorError as exc:
                raise ScoringError(str(exc)) from exc
            sink.open(run_header(run_id, study.name, evaluator.name, evaluator.judge,
                                 job.options_key, summary_shard(job), job.params))
            score_steps(evaluator, pending, sink, counts, run_id=run_id, root=study.root,
                        step=job.step, options_key=job.options_key, progress=job.progress)
        summary.status = "done"
    except (RunCancelled, KeyboardInterrupt):
        summary.status = "cancelled"
        raise
    except ScoringError as exc:
        error = str(exc)
        raise
    except EvaluatorError as exc:
        error = str(exc)
        raise ScoringError(error) from exc
    except Exception as exc:
        error = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
        raise
    finally:
        summary.scored, summary.errors, summary.rows = counts.scored, counts.errors, counts.rows
        summary.seconds = time.perf_counter() - started
        _finish(db, sink, summary, error)


def summary_shard(job: ScoringRequest) -> str:
    """The shard spec recorded with a run (``""`` for the whole study)."""
    return job.shard.spec if job.shard is not None else ""


def _finish(db: Database, sink: Any, summary: RunSummary, error: str | None) -> None:
    run_id = summary.run_id or ""
    try:
        sink.close({"run_id": run_id, "status": summary.status, "n_scored": summary.scored,
                    "n_errors": summary.errors, "finished_at": now()})
    except OSError as exc:  # the score file's disk: the database still learns the end
        logger.error("could not finish the score file: %s", exc)
    run_store.finish_run(db, run_id, summary.status, summary.scored, summary.errors, error)
