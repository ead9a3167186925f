"""What makes two scoring runs "the same": the metric, the judge and the score-changing options.

A score is resumed (skipped) only when it was computed by the same metric, the same judge
and the same options that change scores. The judge is normalised so that spellings of one
checkpoint agree (``/ckpt/qwen/`` = ``/ckpt/qwen`` = ``./qwen`` from ``/ckpt``); the
options are hashed (:func:`options_key`). Options that do not change scores (batch size,
device, sharing the image prefix, progress bars) are not part of the key.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def normalise_judge(model: str | None) -> str | None:
    """A local checkpoint as its resolved absolute path; a hub id stripped of spaces and
    trailing slashes. None stays None (the metric's default judge)."""
    if model is None:
        return None
    text = model.strip()
    path = Path(text).expanduser()
    if text and path.exists():
        return str(path.resolve())
    return text.rstrip("/") or text


def options_key(metric_options: dict[str, Any], dtype: str | None) -> str:
    """A short hash of the options that change scores: the metric's own options (as given
    with ``--option``) and, for VLM judges, the weight dtype."""
    blob = json.dumps({"options": metric_options, "dtype": dtype}, sort_keys=True,
                      separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
