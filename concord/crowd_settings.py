"""A study's ``crowd`` settings: instructions, consent, practice block, item quota, pay.

Checked once when a manifest is imported (each problem names the key and the bad value)
and read back from the study settings by the services.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

KEYS = ("instructions", "consent", "practice", "items_per_rater", "hourly_rate", "currency",
        "idle_cap_seconds")
PRACTICE_KEYS = ("items", "pass_threshold")
MAX_TEXT = 64 * 1024
MAX_PRACTICE = 100
MAX_ITEMS = 1_000_000
DEFAULT_IDLE_CAP = 300.0


@dataclass(frozen=True, slots=True)
class CrowdSettings:
    """What raters go through before and after the items, and how their time is paid.

    Attributes:
        instructions: Markdown shown before the first item (empty: none).
        consent: Text the rater must accept before the first item (empty: none).
        practice_items: How many scoring gold images form the practice block (0: none).
        pass_threshold: Share of practice items that must be right to go on (0 to 1).
        items_per_rater: Done items after which a rater is finished (None: all they get).
        hourly_rate: Pay per hour of active time (None: no pay column).
        currency: Shown with the pay (free text, e.g. ``GBP``).
        idle_cap_seconds: Longest time one item counts toward active time.
    """

    instructions: str = ""
    consent: str = ""
    practice_items: int = 0
    pass_threshold: float = 0.0
    items_per_rater: int | None = None
    hourly_rate: float | None = None
    currency: str = ""
    idle_cap_seconds: float = DEFAULT_IDLE_CAP

    @property
    def needs_consent(self) -> bool:
        """Whether raters see the instructions / consent page before the first item."""
        return bool(self.instructions.strip() or self.consent.strip())

    @classmethod
    def of(cls, settings: Mapping[str, Any] | None) -> CrowdSettings:
        """From a study's stored settings (its ``crowd`` entry), already validated."""
        stored = dict((settings or {}).get("crowd") or {})
        return cls(**stored) if stored else cls()

    def stored(self) -> dict[str, Any]:
        """What the study settings keep (only what differs from the defaults)."""
        default = asdict(CrowdSettings())
        return {k: v for k, v in asdict(self).items() if v != default[k]}


def parse(value: Any) -> tuple[CrowdSettings, list[tuple[str, str]]]:
    """The manifest's ``crowd`` mapping checked; problems are ``(key, message)`` pairs."""
    if value is None:
        return CrowdSettings(), []
    if not isinstance(value, dict):
        return CrowdSettings(), [("crowd", f"expected a mapping, got {value!r}")]
    problems: list[tuple[str, str]] = []
    for key in sorted(set(value) - set(KEYS), key=str):
        problems.append((f"crowd.{key}", f"unknown key (known: {', '.join(KEYS)})"))
    out: dict[str, Any] = {
        "instructions": _text(value, "instructions", problems),
        "consent": _text(value, "consent", problems),
        "currency": _text(value, "currency", problems, limit=20),
        "items_per_rater": _whole(value, "items_per_rater", MAX_ITEMS, problems),
        "hourly_rate": _number(value, "hourly_rate", problems, low=0.0),
        "idle_cap_seconds": _number(value, "idle_cap_seconds", problems, low=0.0,
                                    strict=True) or DEFAULT_IDLE_CAP,
    }
    out.update(_practice(value.get("practice"), problems))
    return CrowdSettings(**{k: v for k, v in out.items() if v is not None}), problems


def _text(d: dict, key: str, problems: list, *, limit: int = MAX_TEXT) -> str | None:
    val = d.get(key)
    if val is None:
        return None
    if not isinstance(val, str):
        problems.append((f"crowd.{key}", f"expected text, got {val!r}"))
        return None
    if len(val) > limit:
        problems.append((f"crowd.{key}", f"at most {limit} characters, got {len(val)}"))
        return None
    return val


def _whole(d: dict, key: str, high: int, problems: list, at: str = "crowd.") -> int | None:
    val = d.get(key)
    if val is None:
        return None
    if isinstance(val, bool) or not isinstance(val, int) or not 1 <= val <= high:
        problems.append((at + key, f"expected a whole number from 1 to {high}, got {val!r}"))
        return None
    return val


def _number(d: dict, key: str, problems: list, *, low: float, strict: bool = False,
            high: float = math.inf, at: str = "crowd.") -> float | None:
    val = d.get(key)
    if val is None:
        return None
    ok = (not isinstance(val, bool) and isinstance(val, int | float) and math.isfinite(val)
          and (val > low if strict else val >= low) and val <= high)
    if not ok:
        bound = f"more than {low:g}" if strict else f"at least {low:g}"
        upper = f" and at most {high:g}" if math.isfinite(high) else ""
        problems.append((at + key, f"expected a number {bound}{upper}, got {val!r}"))
        return None
    return float(val)


def _practice(value: Any, problems: list) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(("crowd.practice", f"expected a mapping, got {value!r}"))
        return {}
    for key in sorted(set(value) - set(PRACTICE_KEYS), key=str):
        problems.append((f"crowd.practice.{key}",
                         f"unknown key (known: {', '.join(PRACTICE_KEYS)})"))
    if "items" not in value:
        problems.append(("crowd.practice.items", "required: how many gold images to practise on"))
    items = _whole(value, "items", MAX_PRACTICE, problems, at="crowd.practice.")
    threshold = _number(value, "pass_threshold", problems, low=0.0, high=1.0,
                        at="crowd.practice.")
    return {"practice_items": items, "pass_threshold": threshold}
