"""One-off scales declared on the command line (``--criteria likert=1..5 q=0,0.5,1``,
``quality=0..100:0.1`` or ``realism=0..1:any`` for a continuous scale).

An inline definition is stored in the study's settings (``settings["criteria"]``) as a
list of ``{"key": ..., "scale": [...]}`` (levels) or ``{"key": ..., "min": ..., "max": ...,
"step": ...}`` (continuous; step null: any number) and rebuilt into a
:class:`~concord.rubrics.Rubric` whenever the study is shown or checked, so it behaves like
a rubric file with plain level texts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from concord.errors import ConcordError
from concord.rubrics.checks import MAX_STEPS, keys_of
from concord.rubrics.model import Continuous, Criterion, Level, Rubric

INLINE_ID = "inline"
MAX_LEVELS = 101  # 0..100 is the widest scale a rater can sensibly use
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
_INT = re.compile(r"^[+-]?\d{1,9}$")
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_HELP = ("expected KEY=LOW..HIGH, KEY=V1,V2,... or a continuous KEY=LOW..HIGH:STEP (e.g. "
         "likert=1..5, q=0,0.5,1, quality=0..100:0.1, realism=0..1:any)")

# ((criterion key, level values or a continuous scale), ...)
Scale = tuple[tuple[str, tuple[float, ...] | Continuous], ...]


class InlineScaleError(ConcordError, ValueError):
    """A ``--criteria`` definition that cannot be read."""


def is_key(name: str) -> bool:
    """Whether ``name`` can be a ``--criteria`` key (it ends up in widget keys and CSS)."""
    return bool(_KEY.match(name))


def parse_criteria(specs: Iterable[str]) -> Scale:
    """Read ``KEY=LOW..HIGH`` / ``KEY=V1,V2,...`` definitions (one criterion each).

    Raises:
        InlineScaleError: bad syntax, a bad number, fewer than 2 or more than
            :data:`MAX_LEVELS` levels, a value twice, or a criterion twice.
    """
    out: dict[str, tuple[float, ...]] = {}
    for spec in specs:
        key, sep, values = (part.strip() for part in spec.partition("="))
        if not sep or not _KEY.match(key):
            raise InlineScaleError(f"--criteria {spec!r}: {_HELP}; a key starts with a letter "
                                   "and has only letters, digits, '_', '.', '-'")
        if key in out:
            raise InlineScaleError(f"--criteria: criterion {key!r} is defined twice")
        out[key] = _values(spec, values)
    if not out:
        raise InlineScaleError(f"--criteria: no definition given; {_HELP}")
    return tuple(out.items())


def _values(spec: str, text: str) -> tuple[float, ...] | Continuous:
    if ":" in text:
        return _continuous(spec, text)
    low, dots, high = text.partition("..")
    if dots:
        if not (_INT.match(low.strip()) and _INT.match(high.strip())):
            raise InlineScaleError(f"--criteria {spec!r}: a range needs whole numbers, "
                                   f"like 1..5")
        first, last = int(low), int(high)
        if not first < last or last - first + 1 > MAX_LEVELS:
            raise InlineScaleError(f"--criteria {spec!r}: a range goes up, with 2 to "
                                   f"{MAX_LEVELS} levels")
        return tuple(float(v) for v in range(first, last + 1))
    parts = [p.strip() for p in text.split(",")]
    if not all(_NUMBER.match(p) for p in parts) or len(parts) < 2:
        raise InlineScaleError(f"--criteria {spec!r}: {_HELP}")
    values = [float(p) for p in parts]
    if not all(math.isfinite(v) for v in values) or len(values) > MAX_LEVELS:
        raise InlineScaleError(f"--criteria {spec!r}: finite numbers, at most {MAX_LEVELS}")
    if len(set(values)) != len(values):
        raise InlineScaleError(f"--criteria {spec!r}: a value is listed twice")
    return tuple(sorted(values))


def _continuous(spec: str, text: str) -> Continuous:
    """``LOW..HIGH:STEP`` (or ``:any``): finite numbers, LOW < HIGH, a step > 0 that cuts
    the range into at most :data:`MAX_STEPS` steps."""
    span, _, step_text = text.partition(":")
    low, dots, high = (p.strip() for p in span.partition(".."))
    step_text = step_text.strip()
    numbers = [low, high] + ([] if step_text == "any" else [step_text])
    if not dots or not all(_NUMBER.match(p) for p in numbers):
        raise InlineScaleError(f"--criteria {spec!r}: a continuous scale is LOW..HIGH:STEP or "
                               "LOW..HIGH:any, e.g. quality=0..100:0.1")
    first, last = float(low), float(high)
    step = None if step_text == "any" else float(step_text)
    if not (math.isfinite(first) and math.isfinite(last) and first < last):
        raise InlineScaleError(f"--criteria {spec!r}: LOW must be below HIGH, both finite")
    if step is not None and not (math.isfinite(step) and step > 0
                                 and (last - first) / step <= MAX_STEPS):
        raise InlineScaleError(f"--criteria {spec!r}: the step must be > 0 and cut the range "
                               f"into at most {MAX_STEPS:,} steps (or write :any)")
    return Continuous(first, last, step)


def describe(scale: Scale) -> str:
    """The definition as it would be typed: ``likert=1..5 q=0,0.5,1 quality=0..100:0.1``."""
    return " ".join(f"{key}={_text(values)}" for key, values in scale)


def _text(values: Sequence[float] | Continuous) -> str:
    if isinstance(values, Continuous):
        return values.text()
    ints = all(v.is_integer() for v in values)
    # strictly increasing whole numbers spanning len - 1 are consecutive
    if ints and len(values) > 2 and values[-1] - values[0] == len(values) - 1:
        return f"{values[0]:g}..{values[-1]:g}"
    return ",".join(f"{v:g}" for v in values)


def to_settings(scale: Scale) -> list[dict[str, Any]]:
    """JSON form for ``study.settings["criteria"]`` (whole numbers stay whole)."""
    def whole(v: float) -> float | int:
        return int(v) if v.is_integer() else v

    return [{"key": key, "min": whole(values.low), "max": whole(values.high),
             "step": None if values.step is None else whole(values.step)}
            if isinstance(values, Continuous) else
            {"key": key, "scale": [whole(v) for v in values]} for key, values in scale]


def from_settings(raw: Any) -> Scale:
    """Read ``study.settings["criteria"]`` back (as written by :func:`to_settings`)."""
    if not isinstance(raw, list) or not all(isinstance(c, Mapping) for c in raw):
        raise InlineScaleError(f"study settings 'criteria' is not a list of criteria: {raw!r}")
    return tuple((str(c["key"]), Continuous(float(c["min"]), float(c["max"]),
                                            None if c.get("step") is None else float(c["step"]))
                  if "min" in c else tuple(float(v) for v in c["scale"])) for c in raw)


def inline_rubric(scale: Scale) -> Rubric:
    """A rubric with one criterion per definition; level texts are the values."""
    criteria = []
    for i, (key, values) in enumerate(scale):
        if isinstance(values, Continuous):
            criteria.append(Criterion(key, key, f"Rate {key} from {values.low:g} to "
                                                f"{values.high:g}.", (), (), values))
            continue
        keys = keys_of({}, i, len(values)) or [None] * len(values)
        levels = tuple(Level(v, f"{v:g}", f"{v:g} on the {_text(values)} scale", k)
                       for v, k in zip(values, keys, strict=True))
        criteria.append(Criterion(key, key, f"Rate {key} on the scale {_text(values)}.",
                                  levels))
    scales = {values for _, values in scale if not isinstance(values, Continuous)}
    return Rubric(id=INLINE_ID, title=f"Inline scale ({describe(scale)})",
                  task="rating on a scale declared at import",
                  source={"title": "declared with --criteria when the ratings were imported"},
                  criteria=tuple(criteria), scale=scales.pop() if len(scales) == 1 else ())
