"""Thresholds of the rater-quality flags (study setting ``quality``).

Free of pandas and numpy: the manifest importer checks a study's thresholds with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class QualityThresholds:
    """When a rater's behaviour becomes a flag (per study: settings ``quality``).

    Attributes:
        min_seconds_rating: A rated image done in fewer seconds is "too fast".
        min_seconds_ranking: A ranking done in fewer seconds is "too fast".
        max_fast_share: Flag ``too_fast`` when a larger share of a rater's items is.
        max_modal_share: Flag ``straight_lining`` when at least this share of a rater's
            ratings of one criterion share one value (or of their rankings follow the
            display order).
        min_gold_accuracy: Flag ``gold_failures`` below this gold accuracy.
        min_items: Time and straight-lining flags need at least this many items.
    """

    min_seconds_rating: float = 2.0
    min_seconds_ranking: float = 5.0
    max_fast_share: float = 0.25
    max_modal_share: float = 0.9
    min_gold_accuracy: float = 0.75
    min_items: int = 10

    @classmethod
    def from_settings(cls, settings: Mapping[str, object] | None) -> QualityThresholds:
        """Defaults overridden by a study's ``quality`` settings.

        Raises:
            ValueError: An unknown key, or a value of the wrong type or range (named).
        """
        settings = dict(settings or {})
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(settings) - set(known))
        if unknown:
            raise ValueError(f"quality settings: unknown key(s) {unknown} "
                             f"(known: {sorted(known)})")
        for key, value in settings.items():
            _check(key, value)
        return cls(**settings)

    def as_dict(self) -> dict[str, float]:
        """The thresholds as a plain dict (for ``meta``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _check(key: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"quality settings: {key} must be a number, got {value!r}")
    if key == "min_items" and (not float(value).is_integer() or value < 1):
        raise ValueError(f"quality settings: min_items must be a whole number >= 1, "
                         f"got {value!r}")
    if key.startswith(("max_", "min_gold")) and not 0 <= value <= 1:
        raise ValueError(f"quality settings: {key} must be a share in [0, 1], got {value!r}")
    if key.startswith("min_seconds") and value < 0:
        raise ValueError(f"quality settings: {key} must be >= 0, got {value!r}")
