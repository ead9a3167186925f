"""Offline OCR for GNED: RapidOCR (PP-OCRv6 small det + rec, weights inside the wheel) on
onnxruntime, plus the detection filter that keeps clutter out of the word list.

An engine is any ``Callable[[PIL.Image.Image], list[tuple[str, float]]]`` returning
(text, confidence) detections in reading order; :class:`RapidOCREngine` is the default.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from evaluators.base import ModelLoadError

if TYPE_CHECKING:
    from PIL import Image

OCREngine = Callable[["Image.Image"], list[tuple[str, float]]]
# PP-OCR reads filled circles and specks as "O", "●" or "."; a lone character needs this
# confidence to count as text.
MIN_SINGLE_CHAR_SCORE = 0.9


def keep_detection(text: str, score: float, min_single: float = MIN_SINGLE_CHAR_SCORE) -> bool:
    """False for detections with no letter or digit, and for unsure single characters."""
    stripped = text.strip()
    if not any(ch.isalnum() for ch in stripped):
        return False
    return not (len(stripped) <= 1 and score < min_single)


def filter_detections(detections: Sequence[tuple[str, float]],
                      min_single: float = MIN_SINGLE_CHAR_SCORE) -> list[str]:
    """The texts of the detections :func:`keep_detection` keeps, in order."""
    return [text for text, score in detections if keep_detection(text, score, min_single)]


class RapidOCREngine:
    """RapidOCR 3.x on onnxruntime; created on first use (about 1 s), CPU only."""

    def __init__(self) -> None:
        self._engine: Any = None

    def load(self) -> None:
        """Create the engine (reads the ONNX models shipped in the rapidocr wheel)."""
        if self._engine is not None:
            return
        try:
            from rapidocr import RapidOCR
        except ImportError as exc:
            raise ModelLoadError(f"OCR needs rapidocr and onnxruntime ({exc}): "
                                 "pip install rapidocr onnxruntime") from exc
        # its INFO lines ("File exists and is valid ...") would drown the progress bar, and
        # "detection result is empty" is a normal outcome here, not a warning
        self._engine = RapidOCR(params={"Global.log_level": "error"})

    def __call__(self, image: Image.Image) -> list[tuple[str, float]]:
        """(text, confidence) per detected line, in RapidOCR's reading order."""
        import numpy as np

        self.load()
        # RapidOCR takes an ndarray as BGR (OpenCV order); an RGB array loses confidence
        bgr = np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])
        out = self._engine(bgr)
        texts, scores = out.txts or (), out.scores or ()
        return [(str(t), float(s)) for t, s in zip(texts, scores, strict=True)]
