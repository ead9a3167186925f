"""Scoring a study with an automatic metric: checked first, resumable, shardable, watched.

``run_scoring`` checks what can be checked before any model loads (the study exists, a
question metric has questions to score, no live run scores the same thing), skips what is
already scored with the same metric, judge and score-changing options, keeps the shard's
share, records the run (pid, heartbeat, counts) and scores the rest step by step: every step
is one write (database transaction or score-file append), so an interrupted run keeps what
it wrote. An image that cannot be scored becomes an error row and is retried by the next
run. SIGTERM or Ctrl-C end the run as ``cancelled``; an error ends it as ``failed``.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from concord.errors import ConcordError
from concord.services.run_keys import normalise_judge
from concord.services.score_output import DatabaseSink, FileSink, Heartbeat, run_header
from concord.services.score_steps import Counts, Shard, is_done, needs_questions, score_steps
from concord.store import runs as run_store
from concord.store.db import now
from concord.store.scores import ScoringItem, has_questions, scored_keys, scoring_items
from concord.store.studies import Study, get_study
from evaluators.base import Evaluator, EvaluatorError
from evaluators.registry import UnknownEvaluatorError, evaluator_class

logger = logging.getLogger(__name__)

_SHARD = re.compile(r"^(\d+)/(\d+)$")
__all__ = ["RunCancelled", "RunSummary", "ScoringError", "ScoringJob", "Shard",
           "build_evaluator", "parse_shard", "run_scoring"]


class ScoringError(ConcordError):
    """A scoring run that cannot start: unknown metric, bad option, model not loadable."""


class RunCancelled(BaseException):
    """SIGTERM: stop now and record the run as cancelled (never caught as an Exception)."""


def parse_shard(text: str) -> Shard:
    """``"i/n"`` → Shard(i, n), with 0 ≤ i < n.

    Raises:
        ScoringError: malformed or out of range (the message shows the value).
    """
    match = _SHARD.match(text.strip())
    if match is None:
        raise ScoringError(f"--shard must look like i/n (e.g. 0/4), got {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or index >= count:
        raise ScoringError(f"--shard i/n needs 0 <= i < n, got {text!r}")
    return Shard(index, count)


def build_evaluator(metric: str, *, model: str | None = None,
                    options: dict[str, Any] | None = None, **judge: Any) -> Evaluator:
    """Create metric ``metric``; user mistakes become :class:`ScoringError` (one line).

    ``judge`` options (device, batch_size, trust_remote_code, share_prefix, device_map,
    max_memory, dtype) go only to metrics with a VLM judge, whose model id or path is
    normalised (see :func:`concord.services.run_keys.normalise_judge`); ``options`` go to
    the metric's constructor as keyword arguments.
    """
    try:
        cls = evaluator_class(metric)
    except UnknownEvaluatorError as exc:
        raise ScoringError(str(exc)) from exc
    kwargs = dict(options or {})
    if cls.needs_judge:
        kwargs.update(model=normalise_judge(model), **judge)
    elif model is not None:
        raise ScoringError(f"metric {metric!r} uses no judge model; drop --model {model!r}")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError, EvaluatorError) as exc:
        raise ScoringError(f"metric {metric!r}: {exc}") from exc


@dataclass(slots=True)
class ScoringJob:
    """What to score and how (everything but the metric itself).

    Attributes:
        study: the study's name.
        step: images per ``score`` call and per write.
        shard: score only this shard's images.
        limit: score at most this many images.
        params: recorded with the run (CLI arguments).
        options_key: hash of the score-changing options (resume key, with metric and judge).
        output: write a JSONL score file instead of the database.
        run_id: the run's id (given by a launcher that watches it), else a new one.
        log_path: the run's log file, recorded for the app.
        progress: show a tqdm bar on stderr.
    """

    study: str
    step: int = 32
    shard: Shard | None = None
    limit: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    options_key: str | None = None
    output: Path | None = None
    run_id: str | None = None
    log_path: str | None = None
    progress: bool = True


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


def _pending(db: Database, study: Study, evaluator: Evaluator, job: ScoringJob,
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


def run_scoring(db: Database, evaluator: Evaluator, job: ScoringJob) -> RunSummary:
    """Score what is still unscored in ``job.study``, writing step by step.

    Raises:
        NotFoundError: no such study.
        ScoringError: nothing to score it with (no questions), the judge model or OCR
            engine cannot be loaded, or a live run scores the same thing.
        RunCancelled: SIGTERM arrived (the run is recorded as cancelled first).
    """
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


def _run(db: Database, evaluator: Evaluator, job: ScoringJob, study: Study, sink: Any,
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


def summary_shard(job: ScoringJob) -> str:
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
