"""Shared plumbing of the VLM metrics: one backend, (image, query) pairs, per-query reads.

A metric says which queries an image gets (:meth:`VLMMetric.queries`), how one query's
next-token log-probabilities become a value (:meth:`VLMMetric.read`) and how the values
become a :class:`ScoreResult` (:meth:`VLMMetric.combine`). Images are opened once (on a few
threads); the backend scores all queries of a batch of images together, sharing each image's
prefix between its questions where it can; an unreadable image fails alone. torch is
imported only when the backend is built.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from evaluators.base import PairError, ScoreRequest, ScoreResult, load_images

if TYPE_CHECKING:
    import torch

    from evaluators.hf_backend import HFVLMBackend
    from evaluators.token_probs import Processing


@dataclass(frozen=True, slots=True)
class Query:
    """One prompt to the VLM: ``key`` is "" for the image-level query, else a question id."""

    key: str
    text: str


@dataclass(slots=True)
class Read:
    """What one query produced: its value (None on failure) and JSON-able details."""

    value: float | None
    details: dict[str, Any]


# Backend options that place and size the judge without changing its scores.
PLACEMENT = ("share_prefix", "device_map", "max_memory", "dtype")


class VLMMetric:
    """Base class of the metrics that read a VLM's next-token probabilities.

    Args:
        model: hub id or local folder of the judge; ``default_model`` when None.
        device: ``auto``, ``cuda`` or ``cpu``.
        batch_size: (image, query) pairs per forward pass, or ``"auto"``.
        loader: injectable ``() -> (model, processor)`` (tests); default from_pretrained.
        trust_remote_code: allow checkpoints that run their own code.
        system: a system message for chat templates (None: the template's default).
        backend: a ready backend to share between metrics (overrides the above).
        **placement: ``share_prefix``, ``device_map``, ``max_memory``, ``dtype`` for the
            backend (see :class:`evaluators.hf_backend.HFVLMBackend`).
    """

    name: ClassVar[str] = ""
    higher_is_better: ClassVar[bool] = True
    needs_judge: ClassVar[bool] = True
    has_questions: ClassVar[bool] = False
    default_model: ClassVar[str | None] = None

    def __init__(self, model: str | None = None, *, device: str = "auto",
                 batch_size: int | str = 8,
                 loader: Callable[[], tuple[Any, Any]] | None = None,
                 trust_remote_code: bool = False, system: str | None = None,
                 backend: HFVLMBackend | None = None, **placement: Any) -> None:
        model = model or (backend.model_id if backend is not None else self.default_model)
        if not model:
            raise ValueError(f"metric {self.name!r} needs a judge model (--model ID_OR_PATH)")
        unknown = set(placement) - set(PLACEMENT)
        if unknown:
            raise TypeError(f"unexpected keyword argument {sorted(unknown)[0]!r}")
        self._model_id = model
        self.system = system
        self._backend = backend
        self._backend_args: dict[str, Any] = {
            "device": device, "batch_size": batch_size, "loader": loader,
            "trust_remote_code": trust_remote_code, **placement}

    @property
    def judge(self) -> str:
        """The judge string stored with the scores: the model id or path as given."""
        return self._model_id

    @property
    def backend(self) -> HFVLMBackend:
        """The VLM backend (created on first use; weights load in :meth:`load`)."""
        if self._backend is None:
            from evaluators.hf_backend import HFVLMBackend

            self._backend = HFVLMBackend(self._model_id, **self._backend_args)
        return self._backend

    def load(self) -> None:
        """Load the judge's weights and processor now."""
        self.backend.load()

    # ------------------------------------------------------------- metric hooks
    def queries(self, request: ScoreRequest) -> list[Query]:
        """The prompts one image gets (override)."""
        raise NotImplementedError

    def processing(self) -> Processing:
        """Where probabilities are read: default = the checkpoint's own generate() scores
        with greedy decoding (its ``generation_config.repetition_penalty``)."""
        from evaluators.token_probs import Processing

        return Processing(repetition_penalty=self.backend.generation_repetition_penalty())

    def read(self, logprobs: torch.Tensor, context: str, query: Query,
             request: ScoreRequest) -> Read:
        """Turn one query's next-token log-probs [V] into a value (override)."""
        raise NotImplementedError

    def combine(self, request: ScoreRequest, reads: dict[str, Read]) -> ScoreResult:
        """Default: the image-level query's value is the image's value."""
        read = reads[""]
        error = None if read.value is not None else read.details.get("error", "no value")
        return ScoreResult(request.item_id, read.value, details=read.details, error=error)

    # ------------------------------------------------------------- driver
    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        """Score a batch of images; an unreadable or unprocessable image, or a prompt
        without what the metric needs, fails alone; a question with no text fails alone."""
        images, failed = load_images(requests)
        plan, reads = self._plan(requests, failed)
        scored = self.read_all([images[i] for i, *_ in plan], plan, requests)
        for (i, query, _, _), read in zip(plan, scored, strict=True):
            reads.setdefault(i, {})[query.key] = read
            if read.details.get(UNPROCESSABLE):
                failed.setdefault(i, ScoreResult.failed(requests[i].item_id,
                                                        read.details["error"]))
        return [failed[i] if i in failed else self.combine(req, reads.get(i, {}))
                for i, req in enumerate(requests)]

    def _plan(self, requests: Sequence[ScoreRequest], failed: dict[int, ScoreResult],
              ) -> tuple[list[tuple[int, Query, str, str]], dict[int, dict[str, Read]]]:
        """(request index, query, text, context) of every pair to run, and the reads known
        without the judge (questions with an empty text)."""
        plan: list[tuple[int, Query, str, str]] = []
        known: dict[int, dict[str, Read]] = {}
        for i, req in enumerate(requests):
            if i in failed:
                continue
            try:
                queries = self.queries(req)
            except ValueError as exc:
                failed[i] = ScoreResult.failed(req.item_id, str(exc))
                continue
            blank = {q.id for q in req.questions if not q.text.strip()}
            for q in queries:
                if q.key and q.key in blank:  # the suffix alone is no question to ask
                    known.setdefault(i, {})[q.key] = Read(None, {"error": "empty question"})
                else:
                    plan.append((i, q, *self.backend.render(q.text, self.system)))
        return plan, known

    def read_all(self, images: list[Any], plan: list[tuple[int, Query, str, str]],
                 requests: Sequence[ScoreRequest]) -> list[Read]:
        """Run every planned pair through the VLM and :meth:`read` the results."""
        if not plan:
            return []
        results = self.backend.next_token_results(images, [p[2] for p in plan],
                                                  self.processing())
        return [unprocessable(r) if isinstance(r, PairError)
                else self.read(r, context, query, requests[i])
                for r, (i, query, _, context) in zip(results, plan, strict=True)]


UNPROCESSABLE = "unprocessable"


def unprocessable(error: PairError) -> Read:
    """The read of a pair whose image the judge's processor refused (fails the image)."""
    return Read(None, {"error": f"the judge's processor refused the image: {error.reason}",
                       UNPROCESSABLE: True})


def finite(value: float) -> float | None:
    """``value``, or None for NaN/inf (stored as NULL)."""
    return value if math.isfinite(value) else None
