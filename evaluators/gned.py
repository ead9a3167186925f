"""GNED: TIIF-Bench's matching-based normalised edit distance between OCR'd and expected text.

Definitions (TIIF-Bench ``cal_gned_and_recall_models``), lower is better, in [0, 1]:

* ``NED(a, b) = Levenshtein(a, b) / max(|a|, |b|)`` (0 when both are empty).
* OCR tokens: every detection's text split on single spaces (``"a  b"`` → a, "", b); an
  image with no detection gives one empty token ``[""]``. Text is lower-cased per image.
* ``GNED = (Σ NED over a Hungarian matching of OCR tokens to GT words + |m − n|) / max(m, n)``
  (m OCR tokens, n GT words; 0 when both are 0).
* recall: in GT order, the first unused OCR token with NED ≤ 0.3 is a hit; hits / n.

Concord's choice for an **empty GT list** (the reference divides by zero in recall): the
empty tokens are dropped, so GNED is 0.0 when no text is read and 1.0 when any is (all of it
is unasked-for); recall is None. The GT words come from the prompt's TIIF questions
``Is the text '<word>' in the image?``, else from the prompt meta ``text`` (a list); a text
of several words counts as those words, split on whitespace like the OCR text.
OCR is RapidOCR (offline, injectable); detections with no letter or digit, and single
characters below 0.9 confidence, are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from evaluators.base import ScoreRequest, ScoreResult, open_image
from evaluators.ocr import MIN_SINGLE_CHAR_SCORE, OCREngine, RapidOCREngine, filter_detections

TEXT_QUESTION = re.compile(r"^Is the text '(.*)' in the image\?\s*$")
RECALL_NED = 0.3


def normalized_edit_distance(a: str, b: str) -> float:
    """Levenshtein distance (unit costs, characters) divided by the longer length."""
    # Imported here: the class (and its direction) must load where only the app is installed.
    from rapidfuzz.distance import Levenshtein

    longest = max(len(a), len(b))
    return Levenshtein.distance(a, b) / longest if longest else 0.0


def split_tokens(texts: Sequence[str]) -> list[str]:
    """Every text split on single spaces, concatenated (empty strings kept)."""
    return [token for text in texts for token in text.split(" ")]


def gned(gt: Sequence[str], ocr_texts: Sequence[str]) -> float:
    """GNED of GT words against OCR texts (split here; no case folding here)."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    tokens = split_tokens(ocr_texts)
    m, n = len(tokens), len(gt)
    if m == 0 and n == 0:
        return 0.0
    matched = 0.0
    if m and n:
        cost = np.array([[normalized_edit_distance(t, g) for g in gt] for t in tokens])
        rows, cols = linear_sum_assignment(cost)
        matched = float(cost[rows, cols].sum())
    return (matched + abs(m - n)) / max(m, n)


def ocr_recall(gt: Sequence[str], ocr_texts: Sequence[str],
               threshold: float = RECALL_NED) -> float:
    """Share of GT words matched greedily (GT order) to an unused token within NED ≤ 0.3.

    Raises:
        ValueError: ``gt`` is empty (recall is undefined).
    """
    if not gt:
        raise ValueError("recall is undefined for an empty ground-truth list")
    tokens, used, hits = split_tokens(ocr_texts), set(), 0
    for word in gt:
        for j, token in enumerate(tokens):
            if j not in used and normalized_edit_distance(token, word) <= threshold:
                used.add(j)
                hits += 1
                break
    return hits / len(gt)


def image_scores(gt_words: Sequence[str], ocr_texts: Sequence[str],
                 threshold: float = RECALL_NED) -> tuple[float, float | None]:
    """(GNED, recall) of one image: lower-cased, no detection → [""], empty GT → see module."""
    gt = [w.lower() for w in gt_words]
    texts = [t.lower() for t in ocr_texts] or [""]
    if not gt:
        return gned([], [t for t in split_tokens(texts) if t]), None
    return gned(gt, texts), ocr_recall(gt, texts, threshold)


def summarise_ocr_file(records: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Mean GNED and recall over TIIF OCR records (short and long images), as the reference.

    Each record has ``text`` (GT words) and ``short_image_ocr_results`` /
    ``long_image_ocr_results`` in PaddleOCR form ``[[box, [text, confidence]], ...]``.
    """
    out: dict[str, float] = {}
    for length in ("short", "long"):
        scores = [image_scores(r["text"], [d[1][0] for d in r.get(
            f"{length}_image_ocr_results") or []]) for r in records]
        out[f"GNED_score_{length}"] = sum(s[0] for s in scores) / len(scores)
        out[f"Recall_score_{length}"] = sum(s[1] or 0.0 for s in scores) / len(scores)
    return out


def ground_truth(request: ScoreRequest) -> tuple[list[str], str]:
    """(GT words, where they came from): TIIF text questions, else meta ``text``.

    Each expected text is split into words on whitespace, as the OCR text is split into
    tokens: ``'COFFEE SHOP'`` is two words, so a perfect rendering scores 0 (kept whole
    it was one word against two OCR tokens: 0.727, recall 0). TIIF-Bench's own texts are
    single words, where this changes nothing.
    """
    texts = [m.group(1) for q in request.questions if (m := TEXT_QUESTION.match(q.text))]
    source = "questions"
    if not texts:
        meta = request.extra.get("text")
        texts = [meta] if isinstance(meta, str) else \
            [str(w) for w in meta] if isinstance(meta, list | tuple) else []
        source = "meta" if texts else "none"
    return gt_words(texts), source


def gt_words(texts: Sequence[str]) -> list[str]:
    """Expected texts as words: split on whitespace, the way OCR texts become tokens (no
    empty words: an expected text has no OCR noise)."""
    return [word for text in texts for word in text.split()]


class GNED:
    """OCR the image and compare it with the prompt's expected words (lower is better).

    Args:
        ocr: an OCR engine (default: RapidOCR on onnxruntime).
        min_single_char_score: confidence a single-character detection needs.
        recall_threshold: NED up to which an OCR token counts as a hit for recall.
    """

    name: ClassVar[str] = "gned"
    higher_is_better: ClassVar[bool] = False
    needs_judge: ClassVar[bool] = False
    has_questions: ClassVar[bool] = False
    default_model: ClassVar[str | None] = None

    def __init__(self, ocr: OCREngine | None = None, *,
                 min_single_char_score: float = MIN_SINGLE_CHAR_SCORE,
                 recall_threshold: float = RECALL_NED) -> None:
        self.ocr: OCREngine = ocr if ocr is not None else RapidOCREngine()
        self.min_single_char_score = min_single_char_score
        self.recall_threshold = recall_threshold

    @property
    def judge(self) -> str:
        """OCR-only metric: no VLM judge."""
        return ""

    def load(self) -> None:
        """Create the OCR engine now (if it has a ``load``)."""
        load = getattr(self.ocr, "load", None)
        if callable(load):
            load()

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        """One GNED value per image; details hold recall, GT and what OCR read."""
        return [self._score_one(req) for req in requests]

    def _score_one(self, request: ScoreRequest) -> ScoreResult:
        try:
            image = open_image(request.image_path)
        except OSError as exc:
            return ScoreResult.failed(request.item_id, f"unreadable image: {exc}")
        detections = self.ocr(image)
        texts = filter_detections(detections, self.min_single_char_score)
        gt, source = ground_truth(request)
        value, recall = image_scores(gt, texts, self.recall_threshold)
        details = {"recall": recall, "gt": gt, "gt_source": source, "ocr": texts,
                   "detections": [[t, round(s, 4)] for t, s in detections]}
        return ScoreResult(request.item_id, value, details=details)
