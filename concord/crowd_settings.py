"""A study's ``crowd`` settings: instructions, consent, practice block, item quota, skips,
sign-up limits, pay.

Checked once when a manifest is imported (each problem names the key and the bad value)
and read back from the study settings by the services.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

KEYS = ("instructions", "consent", "practice", "items_per_rater", "max_skips", "on_max_skips",
        "max_participants", "joins_per_minute", "joins_per_client_per_minute",
        "flag_ids_per_client", "hourly_rate", "currency", "idle_cap_seconds")
PRACTICE_KEYS = ("items", "pass_threshold", "pool")
# ``items_per_rater`` as a mapping: a quota per screen. The unit of work of each screen is
# one scored image (score), one ranked prompt (rank), one judged pair (pair).
QUOTA_KEYS = {"score": "image", "rank": "prompt", "pair": "pair"}
ON_MAX_SKIPS = ("screenout", "continue")
MAX_TEXT = 64 * 1024
MAX_PRACTICE = 100
MAX_ITEMS = 1_000_000
MAX_JOINS_PER_MINUTE = 100_000
DEFAULT_IDLE_CAP = 300.0
DEFAULT_JOINS_PER_MINUTE = 60
DEFAULT_JOINS_PER_CLIENT = 5
DEFAULT_FLAG_IDS_PER_CLIENT = 3


def study_units(protocol: str, pairs: bool) -> tuple[str, ...]:
    """The units a study's raters work on: ``image`` (scored), ``prompt`` (ranked),
    ``pair`` (judged), from its protocol and whether it asks pairs."""
    base = {"score": ("image",), "rank": ("prompt",), "both": ("image", "prompt"),
            "pair": ()}.get(protocol, ())
    return (*base, "pair") if pairs or protocol == "pair" else base


@dataclass(frozen=True, slots=True)
class CrowdSettings:
    """What raters go through before and after the items, and how their time is paid.

    Attributes:
        instructions: Markdown shown before the first item (empty: none).
        consent: Text the rater must accept before the first item (empty: none).
        practice_items: How many scoring gold images form the practice block (0: none).
        pass_threshold: Share of practice items that must be right to go on (0 to 1).
        practice_pool: How many scoring gold images each rater's practice block is drawn
            from, in the rater's own order (0: ``practice_items``).
        items_per_rater: Done items after which a rater is finished: one number for every
            screen of the study, or a quota per screen (``score``, ``rank``, ``pair``);
            None: all they get.
        max_skips: Skips allowed in the study (None: the quota, summed over the screens;
            no limit without a quota).
        on_max_skips: ``screenout`` (one skip more ends the session with the screen-out
            code) or ``continue`` (more items are served; the quota still counts).
        max_participants: Participants a study link accepts in all (None: no limit).
        joins_per_minute: New participants accepted per minute (the rest wait a minute).
        joins_per_client_per_minute: New participants accepted per minute from one client
            (address), so one client cannot use up the study's joins.
        flag_ids_per_client: This many participant ids from one client are flagged.
        hourly_rate: Pay per hour of active time (None: no pay column).
        currency: Shown with the pay (free text, e.g. ``GBP``).
        idle_cap_seconds: Longest time one item counts toward active time.
    """

    instructions: str = ""
    consent: str = ""
    practice_items: int = 0
    pass_threshold: float = 0.0
    practice_pool: int = 0
    items_per_rater: int | dict[str, int] | None = None
    max_skips: int | None = None
    on_max_skips: str = "screenout"
    max_participants: int | None = None
    joins_per_minute: int = DEFAULT_JOINS_PER_MINUTE
    joins_per_client_per_minute: int = DEFAULT_JOINS_PER_CLIENT
    flag_ids_per_client: int = DEFAULT_FLAG_IDS_PER_CLIENT
    hourly_rate: float | None = None
    currency: str = ""
    idle_cap_seconds: float = DEFAULT_IDLE_CAP

    @property
    def needs_consent(self) -> bool:
        """Whether raters see the instructions / consent page before the first item."""
        return bool(self.instructions.strip() or self.consent.strip())

    @property
    def pool(self) -> int:
        """How many scoring gold images the practice block is drawn from."""
        return max(self.practice_pool, self.practice_items)

    def quota(self, unit: str) -> int | None:
        """The quota of one unit (``image``, ``prompt``, ``pair``); None: no quota."""
        per = self.items_per_rater
        if isinstance(per, dict):
            return next((n for key, n in per.items() if QUOTA_KEYS.get(key) == unit), None)
        return per

    def skip_limit(self, units: tuple[str, ...]) -> int | None:
        """Skips allowed over the study's units: ``max_skips``, else the quotas summed
        (None: no limit)."""
        if self.max_skips is not None:
            return self.max_skips
        quotas = [self.quota(u) for u in units]
        return None if any(q is None for q in quotas) or not quotas else sum(
            q for q in quotas if q is not None)

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
        "items_per_rater": _quota(value.get("items_per_rater"), problems),
        "max_skips": _whole(value, "max_skips", MAX_ITEMS, problems, low=0),
        "on_max_skips": _choice(value, "on_max_skips", ON_MAX_SKIPS, problems),
        "max_participants": _whole(value, "max_participants", MAX_ITEMS, problems),
        "joins_per_minute": _whole(value, "joins_per_minute", MAX_JOINS_PER_MINUTE, problems),
        "joins_per_client_per_minute": _whole(value, "joins_per_client_per_minute",
                                              MAX_JOINS_PER_MINUTE, problems),
        "flag_ids_per_client": _whole(value, "flag_ids_per_client", MAX_ITEMS, problems,
                                      low=2),
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


def _whole(d: dict, key: str, high: int, problems: list, at: str = "crowd.", *,
           low: int = 1) -> int | None:
    val = d.get(key)
    if val is None:
        return None
    if isinstance(val, bool) or not isinstance(val, int) or not low <= val <= high:
        problems.append((at + key,
                         f"expected a whole number from {low} to {high}, got {val!r}"))
        return None
    return val


def _choice(d: dict, key: str, known: tuple[str, ...], problems: list) -> str | None:
    val = d.get(key)
    if val is None or val in known:
        return val
    problems.append((f"crowd.{key}", f"expected one of {', '.join(known)}, got {val!r}"))
    return None


def _quota(value: Any, problems: list) -> int | dict[str, int] | None:
    """``items_per_rater``: a whole number, or a quota per screen (``score``, ``rank``,
    ``pair``)."""
    if not isinstance(value, dict):
        return _whole({"items_per_rater": value}, "items_per_rater", MAX_ITEMS, problems)
    out: dict[str, int] = {}
    for key in sorted(value, key=str):
        if key not in QUOTA_KEYS:
            problems.append((f"crowd.items_per_rater.{key}",
                             f"unknown screen (known: {', '.join(QUOTA_KEYS)})"))
            continue
        found = _whole(value, key, MAX_ITEMS, problems, at="crowd.items_per_rater.")
        if found is not None:
            out[key] = found
    if not value:
        problems.append(("crowd.items_per_rater", "an empty mapping: give a quota per screen"))
    return out or None


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
    pool = _whole(value, "pool", MAX_PRACTICE, problems, at="crowd.practice.")
    if pool is not None and items is not None and pool < items:
        problems.append(("crowd.practice.pool", f"the pool ({pool}) must hold at least the "
                                                f"practice items ({items})"))
        pool = None
    threshold = _number(value, "pass_threshold", problems, low=0.0, high=1.0,
                        at="crowd.practice.")
    return {"practice_items": items, "pass_threshold": threshold, "practice_pool": pool}
