"""Scoring a study with an automatic metric: resumable, shardable, one commit per batch.

``run_scoring`` reads the study's images from the store, skips what this (metric, judge)
already scored, keeps the shard's share, scores the rest in batches and writes one row per
image (question_id "") plus one per question for question metrics. Every batch is its own
transaction, so an interrupted run keeps what it wrote; an image that cannot be scored
becomes an error row (value NULL) and is retried by the next run.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database
from tqdm import tqdm

from concord.errors import ConcordError
from concord.store.scores import (
    ScoreRow,
    ScoringItem,
    finish_run,
    scored_keys,
    scoring_items,
    start_run,
    write_scores,
)
from concord.store.studies import get_study
from evaluators.base import Evaluator, EvaluatorError, Question, ScoreRequest, ScoreResult
from evaluators.registry import UnknownEvaluatorError, evaluator_class

logger = logging.getLogger(__name__)

_SHARD = re.compile(r"^(\d+)/(\d+)$")


class ScoringError(ConcordError):
    """A scoring run that cannot start: unknown metric, bad option, model not loadable."""


@dataclass(frozen=True, slots=True)
class Shard:
    """Part ``index`` of ``count`` (0-based)."""

    index: int
    count: int

    def holds(self, image_id: int) -> bool:
        """Whether this shard scores ``image_id`` (stable across runs and machines)."""
        digest = hashlib.blake2b(str(image_id).encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") % self.count == self.index


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


@dataclass(slots=True)
class RunSummary:
    """What a scoring run did."""

    metric: str
    judge: str
    run_id: str | None = None
    images: int = 0
    already_done: int = 0
    other_shards: int = 0
    scored: int = 0
    errors: int = 0
    rows: int = 0
    seconds: float = 0.0


def build_evaluator(metric: str, *, model: str | None = None, device: str = "auto",
                    batch_size: int = 8, trust_remote_code: bool = False,
                    options: dict[str, Any] | None = None) -> Evaluator:
    """Create metric ``metric``; user mistakes become :class:`ScoringError` (one line).

    Judge options (model, device, batch size, remote code) go only to metrics that use a
    VLM judge; ``options`` go to the metric's constructor as keyword arguments.
    """
    try:
        cls = evaluator_class(metric)
    except UnknownEvaluatorError as exc:
        raise ScoringError(str(exc)) from exc
    kwargs = dict(options or {})
    if cls.needs_judge:
        kwargs.update(model=model, device=device, batch_size=batch_size,
                      trust_remote_code=trust_remote_code)
    elif model is not None:
        raise ScoringError(f"metric {metric!r} uses no judge model; drop --model {model!r}")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError, EvaluatorError) as exc:
        raise ScoringError(f"metric {metric!r}: {exc}") from exc


def to_request(item: ScoringItem, root: Path | None) -> ScoreRequest:
    """The evaluator's view of one store item (path made absolute against the study root)."""
    path = root / item.path if root is not None and item.path else None
    extra = {**item.meta, "prompt_id": item.prompt_id, "model": item.model,
             "sample": item.sample, "dimension": item.dimension, "variant": item.variant,
             "paraphrase_group": item.paraphrase_group, "atom_count": item.atom_count}
    questions = tuple(Question(q.question_id, q.text, q.answer, q.skill)
                      for q in item.questions)
    return ScoreRequest(item.image_id, path, item.prompt, questions, extra)


def result_rows(result: ScoreResult, metric: str, judge: str) -> list[ScoreRow]:
    """The image row, then one row per question (an image that failed has only its row)."""
    rows = [ScoreRow(result.item_id, metric, judge, "", result.value, result.details,
                     result.error)]
    if result.error is None:
        for qid, value in result.question_values.items():
            details = result.question_details.get(qid, {})
            error = None if value is not None else str(details.get("error", "no value"))
            rows.append(ScoreRow(result.item_id, metric, judge, qid, value, details, error))
    return rows


def _is_done(item: ScoringItem, done: set[tuple[int, str]], questions: bool) -> bool:
    if (item.image_id, "") not in done:
        return False
    return not questions or all((item.image_id, q.question_id) in done for q in item.questions)


def _batches(items: Sequence[ScoringItem], size: int) -> Iterator[Sequence[ScoringItem]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _score_safely(evaluator: Evaluator, requests: list[ScoreRequest]) -> list[ScoreResult]:
    """Score a batch; if it raises, score its images one by one so only the culprit fails."""
    try:
        return evaluator.score(requests)
    except EvaluatorError:
        raise
    except Exception as exc:  # one bad input must not stop a long run
        if len(requests) == 1:
            logger.warning("image %s failed: %s", requests[0].item_id, exc)
            return [ScoreResult.failed(requests[0].item_id, f"{type(exc).__name__}: {exc}")]
        logger.warning("batch failed (%s); retrying its %d images one by one", exc,
                       len(requests))
        return [r for req in requests for r in _score_safely(evaluator, [req])]


def pending_items(db: Database, study_id: int, evaluator: Evaluator, *,
                  shard: Shard | None = None, limit: int | None = None,
                  ) -> tuple[list[ScoringItem], RunSummary]:
    """The items this run will score, and the counts of those it skips."""
    summary = RunSummary(metric=evaluator.name, judge=evaluator.judge)
    done = scored_keys(db, study_id, evaluator.name, evaluator.judge)
    items = scoring_items(db, study_id)
    summary.images = len(items)
    pending = []
    for item in items:
        if shard is not None and not shard.holds(item.image_id):
            summary.other_shards += 1
        elif _is_done(item, done, evaluator.has_questions):
            summary.already_done += 1
        else:
            pending.append(item)
    return (pending if limit is None else pending[:limit]), summary


def run_scoring(db: Database, study_name: str, evaluator: Evaluator, *,
                batch_size: int = 8, shard: Shard | None = None, limit: int | None = None,
                params: dict[str, Any] | None = None, progress: bool = True) -> RunSummary:
    """Score what is still unscored in a study, writing (and committing) batch by batch.

    Args:
        db: the Concord database.
        study_name: the study to score.
        evaluator: a metric from :func:`build_evaluator`.
        batch_size: images per ``score`` call and per transaction.
        shard: score only this shard's images.
        limit: score at most this many images.
        params: recorded with the run (CLI arguments).
        progress: show a tqdm bar (images/s) on stderr.

    Raises:
        NotFoundError: no such study.
        ScoringError: the judge model or OCR engine cannot be loaded.
    """
    study = get_study(db, study_name)
    pending, summary = pending_items(db, study.id, evaluator, shard=shard, limit=limit)
    if not pending:
        return summary
    try:
        evaluator.load()
    except EvaluatorError as exc:
        raise ScoringError(str(exc)) from exc
    summary.run_id = start_run(db, study.id, evaluator.name, evaluator.judge, params or {})
    started = time.perf_counter()
    try:
        _score_batches(db, study.id, evaluator, pending, summary, root=study.root,
                       batch_size=batch_size, progress=progress)
    except EvaluatorError as exc:
        raise ScoringError(str(exc)) from exc
    finally:
        summary.seconds = time.perf_counter() - started
        finish_run(db, summary.run_id, summary.scored, summary.errors)
    return summary


def _score_batches(db: Database, study_id: int, evaluator: Evaluator,
                   pending: list[ScoringItem], summary: RunSummary, *, root: str | None,
                   batch_size: int, progress: bool) -> None:
    """Score and write batch by batch (one transaction each), counting into ``summary``."""
    base = Path(root) if root else None
    with tqdm(total=len(pending), unit="img", file=sys.stderr, disable=not progress,
              desc=evaluator.name, dynamic_ncols=True) as bar:
        for batch in _batches(pending, batch_size):
            results = _score_safely(evaluator, [to_request(it, base) for it in batch])
            rows = [row for res in results
                    for row in result_rows(res, evaluator.name, evaluator.judge)]
            summary.rows += write_scores(db, study_id, rows, summary.run_id)
            summary.scored += sum(res.error is None for res in results)
            summary.errors += sum(res.error is not None for res in results)
            bar.update(len(batch))
