"""The evaluator contract: requests in, results out.

An evaluator scores images against their prompt (and the prompt's questions). It never
touches the database: ``concord.services.metrics.scoring`` turns store rows into
:class:`ScoreRequest` objects and :class:`ScoreResult` objects back into rows. This module
imports neither torch nor transformers, so the app can list metrics without loading them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from PIL import Image


class EvaluatorError(Exception):
    """Base class of errors raised by evaluators."""


class ModelLoadError(EvaluatorError):
    """A judge model or OCR engine that cannot be loaded; the message is one line."""


@dataclass(frozen=True, slots=True)
class Question:
    """One question of a prompt (TIIF yes/no, GenEval 2 VQA, TIFA)."""

    id: str
    text: str
    answer: str | None = None
    skill: str | None = None


@dataclass(frozen=True, slots=True)
class ScoreRequest:
    """One image to score.

    Attributes:
        item_id: the caller's key (the store's image id), echoed in the result.
        image_path: the image file; None when the image has no file.
        prompt: the text prompt the image was generated from.
        questions: the prompt's questions, in benchmark order.
        extra: prompt metadata (``meta`` plus ``dimension``, ``variant``,
            ``paraphrase_group``, ``atom_count`` ...).
    """

    item_id: Any
    image_path: Path | None
    prompt: str
    questions: tuple[Question, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ScoreResult:
    """The scores of one image.

    Attributes:
        item_id: the request's ``item_id``.
        value: the image-level score; None when it could not be computed.
        question_values: question id → score (None for a failed question).
        question_details: question id → what was computed for it (JSON-able).
        details: image-level details (JSON-able).
        error: why the image could not be scored (``value`` is then None).
    """

    item_id: Any
    value: float | None
    question_values: dict[str, float | None] = field(default_factory=dict)
    question_details: dict[str, dict[str, Any]] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @classmethod
    def failed(cls, item_id: Any, error: str) -> ScoreResult:
        """A result that records why ``item_id`` could not be scored."""
        return cls(item_id=item_id, value=None, error=error)


@dataclass(frozen=True, slots=True)
class PairError:
    """In place of one (image, text) pair's result: why the judge's processor refused it
    (an image shape it cannot resize, ...). The pair's image fails; the rest is scored."""

    reason: str


@runtime_checkable
class Evaluator(Protocol):
    """What every metric implements.

    Class attributes:
        name: the registry name (kebab-case), also the stored ``metric``.
        higher_is_better: direction of ``value``.
        needs_judge: True when a VLM checkpoint (``model``) does the scoring.
        has_questions: True when it scores each of the prompt's questions.
        default_model: the judge used when none is given (None: one must be given).
    """

    name: ClassVar[str]
    higher_is_better: ClassVar[bool]
    needs_judge: ClassVar[bool]
    has_questions: ClassVar[bool]
    default_model: ClassVar[str | None]

    @property
    def judge(self) -> str:
        """The judge string stored with every score (model id or path, "" when none)."""
        ...

    def load(self) -> None:
        """Load weights or engines now (idempotent); raises :class:`ModelLoadError`."""
        ...

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        """Score a batch; one result per request, in order, errors inside the results."""
        ...


def open_image(path: Path | None) -> Image.Image:
    """Decode an image fully into RGB, so a corrupt file fails here and not mid-batch.

    Raises:
        OSError: the file is missing, cannot be decoded, or declares more pixels than
            Pillow decodes safely (the message names the path).
    """
    from PIL import Image, UnidentifiedImageError

    if path is None:
        raise OSError("the image has no file")
    try:
        with Image.open(path) as im:
            im.load()
            return im.convert("RGB")
    except Image.DecompressionBombError as exc:
        # not an OSError: uncaught, it would fail the whole step instead of this image
        raise OSError(f"image {str(path)!r} is too large to decode safely: {exc}") from exc
    except (UnidentifiedImageError, ValueError, SyntaxError) as exc:
        # PIL signals truncated or garbled data with several exception types
        raise OSError(f"cannot decode image {str(path)!r}: {exc}") from exc


def load_images(
    requests: Sequence[ScoreRequest],
) -> tuple[dict[int, Image.Image], dict[int, ScoreResult]]:
    """Open every request's image: (index → image, index → failed result).

    Images are decoded on a few threads (PIL releases the GIL while decoding), so a step of
    large PNGs does not wait on one core.
    """
    from concurrent.futures import ThreadPoolExecutor

    def opened(req: ScoreRequest) -> Image.Image | str:
        try:
            return open_image(req.image_path)
        except OSError as exc:
            return f"unreadable image: {exc}"

    with ThreadPoolExecutor(max_workers=min(4, max(1, len(requests))),
                            thread_name_prefix="concord-decode") as pool:
        decoded = list(pool.map(opened, requests))
    images: dict[int, Image.Image] = {}
    failed: dict[int, ScoreResult] = {}
    for i, (req, got) in enumerate(zip(requests, decoded, strict=True)):
        if isinstance(got, str):
            failed[i] = ScoreResult.failed(req.item_id, got)
        else:
            images[i] = got
    return images, failed
