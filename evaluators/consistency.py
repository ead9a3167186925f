"""Paraphrase consistency over any base metric.

Prompts of a paraphrase study share a ``paraphrase_group`` (the same scene in different
words) and a dimension (``abstract`` / ``realistic``). This evaluator scores every image with
the base metric and stores the image's base value, tagged with its group, dimension and
variant in the details. The statistics (per group and model: std, min, median of the base
values and the consistency-penalised S_final) are computed by the stats module from these
rows, since they need all paraphrases of a group at once.

The image value is the base metric's image value (for question metrics their image-level
aggregate: Soft-TIFA's mean, TIIF's accuracy); question rows are not repeated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from evaluators.base import Evaluator, ScoreRequest, ScoreResult
from evaluators.registry import create_evaluator, metric_info

_JUDGE_OPTIONS = ("device", "batch_size", "trust_remote_code", "loader", "system",
                  "share_prefix", "device_map", "max_memory", "dtype")


class Consistency:
    """Base-metric value per image, grouped by paraphrase group in the details.

    Args:
        model: the judge for a VLM base metric (None: the base metric's default).
        base: registry name of the base metric (default ``vqascore``).
        **options: passed to the base metric (device, batch_size, loader ...).
    """

    name: ClassVar[str] = "consistency"
    higher_is_better: ClassVar[bool] = True
    needs_judge: ClassVar[bool] = True
    has_questions: ClassVar[bool] = False
    default_model: ClassVar[str | None] = None

    def __init__(self, model: str | None = None, *, base: str = "vqascore",
                 **options: Any) -> None:
        if base == self.name:
            raise ValueError("consistency cannot wrap itself")
        self.base_name = base
        kwargs = dict(options)
        if metric_info(base).needs_judge:
            if model is not None:
                kwargs["model"] = model
        else:
            if model is not None:
                raise ValueError(f"base metric {base!r} uses no judge model, got {model!r}")
            # the CLI passes judge options to every judge metric; an OCR base takes none
            for key in _JUDGE_OPTIONS:
                kwargs.pop(key, None)
        self.base: Evaluator = create_evaluator(base, **kwargs)

    @property
    def judge(self) -> str:
        """The base metric's judge."""
        return self.base.judge

    def load(self) -> None:
        """Load the base metric."""
        self.base.load()

    def score(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        """The base metric's image values, tagged with paraphrase group and dimension."""
        out = []
        for req, res in zip(requests, self.base.score(requests), strict=True):
            value = res.value
            details = {
                "base": self.base_name,
                "paraphrase_group": req.extra.get("paraphrase_group"),
                "dimension": req.extra.get("dimension"),
                "variant": req.extra.get("variant"),
                "base_details": res.details,
            }
            error = res.error or (None if value is not None else "base metric gave no value")
            out.append(ScoreResult(req.item_id, value, details=details, error=error))
        return out
