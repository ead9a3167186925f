"""The inner loop of a scoring run: store items → requests → results → rows, step by step."""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tqdm import tqdm

from concord.store.scores import ScoreRow, ScoringItem
from evaluators.base import Evaluator, EvaluatorError, ScoreRequest, ScoreResult

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Shard:
    """Part ``index`` of ``count`` (0-based), optionally split further between the
    ``world`` ranks of one multi-process job (rank ``rank``)."""

    index: int
    count: int
    rank: int = 0
    world: int = 1

    def holds(self, image_id: int) -> bool:
        """Whether this shard scores ``image_id`` (stable across runs and machines)."""
        digest = hashlib.blake2b(str(image_id).encode(), digest_size=8).digest()
        h = int.from_bytes(digest, "big")
        return h % self.count == self.index and (h // self.count) % self.world == self.rank

    def split(self, rank: int, world: int) -> Shard:
        """This shard's part for rank ``rank`` of ``world`` (the parts cover it exactly)."""
        return Shard(self.index, self.count, rank, world)

    @property
    def spec(self) -> str:
        """``"i/n"``, plus ``":r/w"`` for a rank's part (recorded with the run)."""
        base = f"{self.index}/{self.count}"
        return base if self.world == 1 else f"{base}:{self.rank}/{self.world}"


class Sink(Protocol):
    """Where a run's rows go (see :mod:`concord.services.metrics.score_output`)."""

    def write(self, rows: list[ScoreRow], run_id: str, n_scored: int,
              n_errors: int) -> int: ...


@dataclass(slots=True)
class Counts:
    """What a run did so far."""

    scored: int = 0
    errors: int = 0
    rows: int = 0


def to_request(item: ScoringItem, root: Path | None) -> ScoreRequest:
    """The evaluator's view of one store item (path made absolute against the study root)."""
    path = root / item.path if root is not None and item.path else None
    extra = {**item.meta, "prompt_id": item.prompt_id, "model": item.model,
             "sample": item.sample, "dimension": item.dimension, "variant": item.variant,
             "paraphrase_group": item.paraphrase_group, "atom_count": item.atom_count}
    return ScoreRequest(item.image_id, path, item.prompt, tuple(item.questions), extra)


def result_rows(result: ScoreResult, metric: str, judge: str,
                options_key: str | None = None) -> list[ScoreRow]:
    """The image row, then one row per question (an image that failed has only its row)."""
    rows = [ScoreRow(result.item_id, metric, judge, "", result.value, result.details,
                     result.error, options_key)]
    if result.error is None:
        for qid, value in result.question_values.items():
            details = result.question_details.get(qid, {})
            error = None if value is not None else str(details.get("error", "no value"))
            rows.append(ScoreRow(result.item_id, metric, judge, qid, value, details, error,
                                 options_key))
    return rows


def is_done(item: ScoringItem, done: set[tuple[int, str]], questions: bool) -> bool:
    """Whether an item's image row (and each question row) already holds a value."""
    if (item.image_id, "") not in done:
        return False
    return not questions or all((item.image_id, q.id) in done for q in item.questions)


def steps(items: Sequence[ScoringItem], size: int) -> Iterator[Sequence[ScoringItem]]:
    """``items`` in slices of ``size``."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def score_safely(evaluator: Evaluator, requests: list[ScoreRequest]) -> list[ScoreResult]:
    """Score a step; if it raises, score its images one by one so only the culprit fails."""
    try:
        return evaluator.score(requests)
    except EvaluatorError:
        raise
    except Exception as exc:  # one bad input must not stop a long run
        if len(requests) == 1:
            logger.warning("image %s failed: %s", requests[0].item_id, exc)
            return [ScoreResult.failed(requests[0].item_id, f"{type(exc).__name__}: {exc}")]
        logger.warning("step failed (%s); retrying its %d images one by one", exc,
                       len(requests))
        return [r for req in requests for r in score_safely(evaluator, [req])]


def score_steps(evaluator: Evaluator, pending: list[ScoringItem], sink: Sink, counts: Counts,
                *, run_id: str, root: str | None, step: int, options_key: str | None,
                progress: bool, label: str = "") -> None:
    """Score and write step by step (one write each), counting into ``counts``."""
    base = Path(root) if root else None
    with tqdm(total=len(pending), unit="img", file=sys.stderr, disable=not progress,
              desc=label or evaluator.name, dynamic_ncols=True) as bar:
        for part in steps(pending, step):
            results = score_safely(evaluator, [to_request(it, base) for it in part])
            rows: list[ScoreRow] = []
            for res in results:
                rows += result_rows(res, evaluator.name, evaluator.judge, options_key)
            scored = counts.scored + sum(res.error is None for res in results)
            errors = counts.errors + sum(res.error is not None for res in results)
            # counted once written: a write a cancel interrupts (rolled back) is not scored
            counts.rows += sink.write(rows, run_id, scored, errors)
            counts.scored, counts.errors = scored, errors
            bar.update(len(part))


def needs_questions(evaluator: Any) -> bool:
    """Whether the metric (or the base metric it wraps) scores the prompts' questions."""
    base = getattr(evaluator, "base", None)
    return bool(evaluator.has_questions or (base is not None and base.has_questions))
