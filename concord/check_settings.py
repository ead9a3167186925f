"""Attention checks while raters work: how often gold items come, and what failed checks
do (the study's ``quality`` keys ``gold_every``, ``warn_after``, ``block_after``).

The other ``quality`` keys are thresholds of the report's rater-quality flags
(:class:`concord.stats.thresholds.QualityThresholds`); these three act during the work,
so they are read apart. Free of pandas: the manifest importer checks them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KEYS = ("gold_every", "warn_after", "block_after")
DEFAULT_GOLD_EVERY = 10
MAX_EVERY = 1_000_000


@dataclass(frozen=True, slots=True)
class CheckSettings:
    """Gold rate and the consequences of failed checks.

    Attributes:
        gold_every: One gold item (when the study has gold of that screen) at a random
            position of every block of this many items a rater is served.
        warn_after: Warn the rater after this many failed checks (None: never).
        block_after: End the rater's session with the screen-out code after this many
            failed checks (None: never).
    """

    gold_every: int = DEFAULT_GOLD_EVERY
    warn_after: int | None = None
    block_after: int | None = None

    @classmethod
    def of(cls, settings: Mapping[str, Any] | None) -> CheckSettings:
        """From a study's stored settings (its ``quality`` entry), already validated."""
        quality = (settings or {}).get("quality") or {}
        return cls(**{k: quality[k] for k in KEYS if k in quality})


def split(quality: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``quality`` as (report thresholds, attention-check keys)."""
    return ({k: v for k, v in quality.items() if k not in KEYS},
            {k: v for k, v in quality.items() if k in KEYS})


def problems(checks: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What is wrong with the attention-check keys, as ``(key, message)`` pairs."""
    out = []
    for key in KEYS:
        val = checks.get(key)
        if val is not None and (isinstance(val, bool) or not isinstance(val, int)
                                or not 1 <= val <= MAX_EVERY):
            out.append((f"quality.{key}",
                        f"expected a whole number from 1 to {MAX_EVERY}, got {val!r}"))
    warn, block = checks.get("warn_after"), checks.get("block_after")
    if not out and warn is not None and block is not None and warn > block:
        out.append(("quality.warn_after",
                    f"the warning ({warn}) must come before the block ({block})"))
    return out
