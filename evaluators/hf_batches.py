"""Planning and running the forwards of one scoring call.

Pairs that share an image and a prefix form a :class:`Group` (shared-prefix path, when the
backend allows it); the rest go through the unshared path. Both are cut into micro-batches
of at most ``backend.batch_size`` pairs, bucketed by image size so a batch pads little.
A worker thread prepares (processor, tokenizer) the next micro-batches while the model runs
the current one. An out-of-memory error halves the backend's batch size and the failing
batch is split and run again; a batch of one pair that does not fit is an error. A batch
whose inputs the processor refuses (a 1×300 image for Qwen-VL) is prepared again image by
image: the refused images' pairs get a :class:`~evaluators.base.PairError`, the rest runs.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import torch

from evaluators import hf_flat, hf_memory, hf_prefix
from evaluators.base import EvaluatorError, PairError
from evaluators.token_probs import Processing

logger = logging.getLogger(__name__)


class OutOfMemory(EvaluatorError):
    """Even one (image, question) pair per forward does not fit in memory."""


@dataclass(slots=True)
class Pair:
    """One (image, text) to score; ``suffix`` holds its ids after a shared prefix."""

    index: int
    image: Any
    text: str
    answer: tuple[int, ...] | None = None
    suffix: list[int] | None = None


@dataclass(slots=True)
class Group:
    """Pairs of one image and one prefix, scored on one prefill."""

    image: Any
    prefix: str
    pairs: list[Pair]


@dataclass(slots=True)
class Batch:
    """One micro-batch: unshared pairs or shared groups (never both)."""

    flat: list[Pair] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)

    @property
    def n_pairs(self) -> int:
        """Pairs in the batch."""
        return len(self.flat) + sum(len(g.pairs) for g in self.groups)

    def halves(self) -> list[Batch] | None:
        """The batch split in two (None when it is a single pair)."""
        if len(self.flat) > 1:
            mid = len(self.flat) // 2
            return [Batch(flat=self.flat[:mid]), Batch(flat=self.flat[mid:])]
        if len(self.groups) > 1:
            mid = len(self.groups) // 2
            return [Batch(groups=self.groups[:mid]), Batch(groups=self.groups[mid:])]
        if self.groups and len(self.groups[0].pairs) > 1:
            g = self.groups[0]
            mid = len(g.pairs) // 2
            return [Batch(groups=[Group(g.image, g.prefix, g.pairs[:mid])]),
                    Batch(groups=[Group(g.image, g.prefix, g.pairs[mid:])])]
        return None


def _area(image: Any) -> tuple[int, int]:
    width, height = getattr(image, "size", (0, 0))
    return width * height, width


def plan(backend: Any, pairs: Sequence[Pair]) -> list[Batch]:
    """Group pairs by (image, prefix) where sharing applies; cut into micro-batches."""
    groups: dict[tuple[int, str], Group] = {}
    flat: list[Pair] = []
    for pair in pairs:
        split = backend.split_prefix(pair.text)
        if split is None:
            flat.append(pair)
            continue
        prefix, pair.suffix = split
        groups.setdefault((id(pair.image), prefix), Group(pair.image, prefix, [])).pairs.append(
            pair)
    shared = [g for g in groups.values() if len(g.pairs) > 1]
    flat += [g.pairs[0] for g in groups.values() if len(g.pairs) == 1]
    size = backend.batch_size
    flat.sort(key=lambda p: (_area(p.image), p.index))
    batches = [Batch(flat=flat[i:i + size]) for i in range(0, len(flat), size)]
    return batches + list(_pack(sorted(shared, key=lambda g: _area(g.image)), size))


def _pack(groups: list[Group], size: int) -> Iterator[Batch]:
    """Whole groups per batch, up to ``size`` pairs (a bigger group goes alone)."""
    batch = Batch()
    for group in groups:
        if batch.groups and batch.n_pairs + len(group.pairs) > size:
            yield batch
            batch = Batch()
        batch.groups.append(group)
    if batch.groups:
        yield batch


def prepare(backend: Any, batch: Batch) -> Any:
    """CPU inputs of a batch (runs on the worker thread)."""
    if batch.flat:
        return hf_flat.process(backend, [p.image for p in batch.flat],
                               [p.text for p in batch.flat])
    rows = [(g, p.suffix or [], p.answer) for g, group in enumerate(batch.groups)
            for p in group.pairs]
    return hf_prefix.prepare(backend, [g.image for g in batch.groups],
                             [g.prefix for g in batch.groups], rows)


def run(backend: Any, batches: list[Batch], processing: Processing) -> dict[int, Any]:
    """Run every batch, preparing the next ones on a worker thread; index → result."""
    results: dict[int, Any] = {}
    queue = deque(batches)
    ahead: deque[tuple[Batch, Future]] = deque()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="concord-prep") as pool:
        while queue or ahead:
            while queue and len(ahead) < backend.prefetch:
                batch = queue.popleft()
                ahead.append((batch, pool.submit(prepare, backend, batch)))
            batch, future = ahead.popleft()
            try:
                prepared = future.result()
            except Exception:  # the processor refused an input: find it, run the rest
                results.update(_isolate(backend, batch, processing))
                continue
            for part in _fit(batch, backend.batch_size):
                ready = prepared if part is batch else prepare(backend, part)
                results.update(_run_safely(backend, part, ready, processing))
    return results


def _isolate(backend: Any, batch: Batch, processing: Processing) -> dict[int, Any]:
    """A batch whose inputs the processor refused: each image's pairs are prepared alone;
    those it refuses get a :class:`PairError`, the others run together again (or alone,
    if only their combination is refused)."""
    results: dict[int, Any] = {}
    units = [Batch(flat=[p]) for p in batch.flat] + [Batch(groups=[g]) for g in batch.groups]
    ready: list[tuple[Batch, Any]] = []
    for unit in units:
        try:
            ready.append((unit, prepare(backend, unit)))
        except Exception as exc:
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            pairs = unit.flat or unit.groups[0].pairs
            results.update({p.index: PairError(reason) for p in pairs})
            backend.counters["refused_pairs"] += len(pairs)
    if not ready:
        return results
    rest = Batch(flat=[p for u, _ in ready for p in u.flat],
                 groups=[g for u, _ in ready for g in u.groups])
    try:
        runs = [(rest, prepare(backend, rest))] if len(ready) < len(units) else ready
    except Exception:
        runs = ready
    for part, prepared in runs:
        results.update(_run_safely(backend, part, prepared, processing))
    return results


def _fit(batch: Batch, size: int) -> list[Batch]:
    """After a halving, a batch planned for the old size is split before it runs."""
    if batch.n_pairs <= size or (batch.groups and len(batch.groups) == 1):
        return [batch]
    halves = batch.halves() or [batch]
    return [part for half in halves for part in _fit(half, size)]


def _run_safely(backend: Any, batch: Batch, prepared: Any,
                processing: Processing) -> dict[int, Any]:
    try:
        return _run(backend, batch, prepared, processing)
    except Exception as exc:
        if not hf_memory.is_oom(exc):
            raise
    hf_memory.release(backend.model.device)
    halves = batch.halves()
    if halves is None:
        raise OutOfMemory(f"out of memory with one (image, question) pair per forward on "
                          f"{backend.model.device}; use smaller images or --device-map auto")
    backend.batch_size = max(1, min(backend.batch_size, batch.n_pairs) // 2)
    backend.counters["oom_halvings"] += 1
    logger.warning("out of memory at %d pairs per forward; going on with %d",
                   batch.n_pairs, backend.batch_size)
    results: dict[int, Any] = {}
    for half in halves:
        results.update(_run_safely(backend, half, prepare(backend, half), processing))
    return results


def _run(backend: Any, batch: Batch, prepared: Any, processing: Processing) -> dict[int, Any]:
    if batch.flat:
        backend.counters["flat_pairs"] += len(batch.flat)
        return _flat(backend, batch.flat, prepared, processing)
    pairs = [p for g in batch.groups for p in g.pairs]
    try:
        out = hf_prefix.run(backend, prepared, processing)
    except hf_prefix.SharingUnsupported as exc:
        backend.disable_sharing(str(exc))
        return _run(backend, Batch(flat=pairs), prepare(backend, Batch(flat=pairs)),
                    processing)
    results = {p.index: r for p, r in zip(pairs, out, strict=True)}
    backend.counters["prefills"] += len(batch.groups)
    backend.counters["shared_pairs"] += len(pairs)
    if not backend.prefix_verified and not _self_check(backend, pairs[0], results, processing):
        return _run(backend, Batch(flat=pairs), prepare(backend, Batch(flat=pairs)),
                    processing)
    return results


def _flat(backend: Any, pairs: list[Pair], prepared: Any,
          processing: Processing) -> dict[int, Any]:
    if pairs[0].answer is None:
        out: Sequence[Any] = list(hf_flat.next_token(backend, prepared, processing))
    else:
        out = hf_flat.answers(backend, prepared, [p.answer or () for p in pairs], processing)
    return {p.index: r for p, r in zip(pairs, out, strict=True)}


def _self_check(backend: Any, pair: Pair, results: dict[int, Any],
                processing: Processing) -> bool:
    """On first use, one pair by both paths must agree (else sharing is switched off)."""
    flat = _flat(backend, [pair], prepare(backend, Batch(flat=[pair])), processing)
    a, b = results[pair.index], flat[pair.index]
    a, b = (torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64))
    diff = float((a.exp() - b.exp()).abs().max())
    tolerance = 1e-3 if backend.model.dtype == torch.float32 else 5e-2
    if diff <= tolerance:
        backend.prefix_verified = True
        return True
    backend.disable_sharing(f"self-check failed: shared and unshared probabilities differ "
                            f"by {diff:.2e} (> {tolerance:g})")
    return False
