"""Rubric YAML files: criteria, scale, level texts and keys are data (see docs/rubrics.md)."""

from __future__ import annotations

import dataclasses
import math
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from concord.rubrics import checklist as checklists
from concord.rubrics.checklist import Checklist
from concord.rubrics.checks import RubricError, RubricProblem, check, keys_of, parse

DEFAULT_RUBRICS_DIR = Path(__file__).resolve().parents[2] / "rubrics"


@dataclass(frozen=True)
class Level:
    """One allowed value of a criterion, with its texts and keyboard key (None if none)."""

    value: float
    label: str
    description: str
    key: str | None = None


@dataclass(frozen=True)
class Continuous:
    """A continuous scale: any value from ``low`` to ``high``, on a grid of ``step`` (None:
    any real number), with optional texts for both ends (a slider's anchors)."""

    low: float
    high: float
    step: float | None = None
    low_label: str = ""
    high_label: str = ""

    def accepts(self, value: float) -> bool:
        """Whether ``value`` is on the scale (the step grid is checked to 1e-9 of a step,
        so 0.1 + 0.2 counts as 0.3)."""
        if not math.isfinite(value) or not self.low - _SLACK <= value <= self.high + _SLACK:
            return False
        if self.step is None:
            return True
        steps = (value - self.low) / self.step
        return abs(steps - round(steps)) <= 1e-9 * max(1.0, abs(steps))

    def text(self) -> str:
        """The scale as ``--criteria`` writes it: ``0..100:0.1`` or ``0..1:any``."""
        step = "any" if self.step is None else f"{self.step:g}"
        return f"{self.low:g}..{self.high:g}:{step}"


_SLACK = 1e-12  # float noise at the ends of a continuous scale


@dataclass(frozen=True)
class Criterion:
    """What is judged (e.g. SC or PR). The criteria of rank rubrics have no levels; a
    continuous criterion has none either (``continuous`` says what it accepts)."""

    key: str
    name: str
    definition: str
    levels: tuple[Level, ...] = ()
    aliases: tuple[str, ...] = ()  # other names in rating files (e.g. ImagenHub's PQ for PR)
    continuous: Continuous | None = None

    def accepts(self, value: float) -> bool:
        """Whether ``value`` is a rating of this criterion: a level, or a point of its
        continuous scale."""
        if self.continuous is not None:
            return self.continuous.accepts(value)
        return value in self.values

    def scale_text(self) -> str:
        """The values a rating may take, for messages: ``[0, 0.5, 1]`` or ``0..100:0.1``."""
        if self.continuous is not None:
            return self.continuous.text()
        return str([f"{v:g}" for v in self.values]).replace("'", "")

    @property
    def values(self) -> tuple[float, ...]:
        """The level values, in scale order."""
        return tuple(level.value for level in self.levels)

    def level(self, value: float) -> Level:
        """Return the level for ``value``; raise ``KeyError`` if it is not on the scale."""
        for level in self.levels:
            if level.value == value:
                return level
        raise KeyError(f"{value!r} is not a level of {self.key} (levels: {list(self.values)})")

    def descriptions(self) -> dict[float, str]:
        """Map each value to its level description, in scale order."""
        return {level.value: level.description for level in self.levels}


@dataclass(frozen=True)
class Combine:
    """How the criterion scores of one image become one overall score."""

    method: str
    criteria: tuple[str, ...]
    description: str = ""


@dataclass(frozen=True)
class Rubric:
    """A loaded, valid rubric. ``scale`` is empty and ``combine`` None for rank rubrics."""

    id: str
    title: str
    task: str
    source: Mapping[str, str]  # title, and optionally url, arxiv, lineage, notes
    criteria: tuple[Criterion, ...]
    scale: tuple[float, ...] = ()
    protocol: str = "score"
    inputs: tuple[str, ...] = ()
    guide: str = ""
    notes: str = ""
    combine: Combine | None = None
    variant_of: str | None = None  # same criteria and scale as this rubric, other texts
    checklists: tuple[Checklist, ...] = ()  # criteria whose value is derived from ticks

    def without_checklists(self) -> Rubric:
        """The same rubric rated directly (a study that does not turn the checklist on)."""
        return dataclasses.replace(self, checklists=()) if self.checklists else self

    def checklist(self, key: str) -> Checklist | None:
        """The checklist of criterion ``key``, or None when it is rated directly."""
        return next((c for c in self.checklists if c.criterion == key), None)

    def resolve(self, name: str) -> Criterion | None:
        """The criterion called ``name`` (its key or one of its aliases), or None."""
        for criterion in self.criteria:
            if name == criterion.key or name in criterion.aliases:
                return criterion
        return None

    @property
    def is_ranking(self) -> bool:
        """True for ``protocol: rank`` rubrics."""
        return self.protocol == "rank"

    def criterion(self, key: str) -> Criterion:
        """Return the criterion with ``key``; raise ``KeyError`` naming the known keys."""
        for criterion in self.criteria:
            if criterion.key == key:
                return criterion
        known = [criterion.key for criterion in self.criteria]
        raise KeyError(f"{self.id} has no criterion {key!r} (has: {known})")

    def level_for_key(self, key: str) -> tuple[Criterion, Level] | None:
        """Return (criterion, level) bound to keyboard ``key`` (case-insensitive), or None."""
        for criterion in self.criteria:
            for level in criterion.levels:
                if level.key is not None and level.key.casefold() == key.casefold():
                    return criterion, level
        return None

    def overall(self, scores: Mapping[str, float]) -> float | None:
        """Combine ``scores`` (criterion key -> value) by ``combine``; None without a rule.

        Raises:
            KeyError: A criterion named in ``combine.criteria`` has no score.
        """
        if self.combine is None:
            return None
        values = [float(scores[key]) for key in self.combine.criteria]
        if self.combine.method == "geometric_mean":
            return math.prod(values) ** (1 / len(values))
        return sum(values) / len(values)


def load_rubric(path: str | Path) -> Rubric:
    """Load and validate one rubric file.

    Args:
        path: The YAML file.

    Returns:
        The rubric.

    Raises:
        FileNotFoundError: The file does not exist (the message has the resolved path).
        RubricRootError: The YAML root is not a mapping (also a ``TypeError``).
        RubricError: Bad YAML (raised from the parser's error) or any content problem.
    """
    path = Path(path)
    data = parse(path)
    problems = check(data, path)
    if problems:
        raise RubricError(problems)
    return _build(data)


def load_rubric_by_id(rubric_id: str, rubrics_dir: str | Path | None = None) -> Rubric:
    """Load ``<rubrics_dir>/<rubric_id>.yaml``; the default dir is the repository's ``rubrics/``.

    Raises:
        FileNotFoundError: No such rubric; the message lists the ids that exist.
    """
    path = (DEFAULT_RUBRICS_DIR if rubrics_dir is None else Path(rubrics_dir)) / f"{rubric_id}.yaml"
    if not path.is_file():
        known = list_rubrics(rubrics_dir) if path.parent.is_dir() else []
        # absolute(), not resolve(): resolving a symlink loop raises instead of naming it.
        raise FileNotFoundError(f"no rubric {rubric_id!r} at {path.absolute()} (known: {known})")
    return load_rubric(path)


def list_rubrics(rubrics_dir: str | Path | None = None) -> list[str]:
    """Return the sorted ids (file stems) of the ``*.yaml`` files in ``rubrics_dir``."""
    return [path.stem for path in _files(rubrics_dir)]


def validate_rubrics(rubrics_dir: str | Path | None = None) -> list[RubricProblem]:
    """Check every ``*.yaml`` file in ``rubrics_dir`` and return all problems (empty: all good).

    Raises:
        FileNotFoundError: ``rubrics_dir`` is not a directory.
    """
    problems: list[RubricProblem] = []
    parsed: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in _files(rubrics_dir):
        try:
            data = parse(path)
        except RubricError as error:
            problems.extend(error.problems)
            continue
        found = check(data, path)
        problems.extend(found)
        if not found:
            parsed[path.stem] = (path, data)
    return problems + _variant_problems(parsed)


def _variant_problems(parsed: Mapping[str, tuple[Path, Mapping[str, Any]]]) -> list[RubricProblem]:
    """``variant_of`` names a valid rubric of the folder with the same criteria and scale."""
    out = []
    for path, data in parsed.values():
        base_id = data.get("variant_of")
        if base_id is None:
            continue
        base = parsed.get(base_id)
        if base is None:
            out.append(RubricProblem(path, "variant_of", f"no valid rubric {base_id!r} in "
                                                         f"{path.parent}"))
        elif _shape(base[1]) != _shape(data):
            out.append(RubricProblem(path, "variant_of", f"criteria keys and scale differ "
                                                         f"from {base_id!r}: {_shape(data)} vs "
                                                         f"{_shape(base[1])}"))
    return out


def _shape(data: Mapping[str, Any]) -> tuple[list[str], list[float]]:
    return [c["key"] for c in data["criteria"]], list(data.get("scale", []))


def _files(rubrics_dir: str | Path | None) -> list[Path]:
    folder = DEFAULT_RUBRICS_DIR if rubrics_dir is None else Path(rubrics_dir)
    try:  # absolute(), not resolve(): resolving a symlink loop raises instead of naming it
        if not stat.S_ISDIR(folder.stat().st_mode):
            raise FileNotFoundError(f"rubrics directory not found: {folder.absolute()} is "
                                    "not a folder")
    except FileNotFoundError as exc:
        if exc.filename is None:
            raise
        raise FileNotFoundError(f"rubrics directory not found: {folder.absolute()}") from exc
    except OSError as exc:  # ELOOP (a symlink loop), EACCES, ENAMETOOLONG...
        raise FileNotFoundError(f"rubrics directory {folder.absolute()} cannot be read: "
                                f"{exc.strerror or exc}") from exc
    return sorted(folder.glob("*.yaml"))


def _build(data: Mapping[str, Any]) -> Rubric:
    scale = tuple(data.get("scale", ()))
    criteria = []
    for i, raw in enumerate(data["criteria"]):
        by_value = {level["value"]: level for level in raw.get("levels", [])}
        keys = keys_of(raw, i, len(scale)) or [None] * len(scale)
        levels = () if "continuous" in raw else tuple(  # a slider has no levels
            Level(value, by_value[value]["label"], by_value[value]["description"], key)
            for value, key in zip(scale, keys, strict=True)
        )
        criteria.append(Criterion(raw["key"], raw["name"], raw["definition"], levels,
                                  tuple(raw.get("aliases", ())), _continuous(raw)))
    combine = data.get("combine")
    texts = {key: data[key] for key in ("id", "title", "task", "guide", "notes") if key in data}
    return Rubric(
        **texts,
        source=dict(data["source"]),
        criteria=tuple(criteria),
        scale=scale,
        protocol=data.get("protocol", "score"),
        inputs=tuple(data.get("inputs", ())),
        combine=combine
        and Combine(combine["method"], tuple(combine["criteria"]), combine.get("description", "")),
        variant_of=data.get("variant_of"),
        checklists=checklists.build(data),
    )


def _continuous(raw: Mapping[str, Any]) -> Continuous | None:
    spec = raw.get("continuous")
    if not isinstance(spec, Mapping):
        return None
    step = spec.get("step")
    return Continuous(float(spec["min"]), float(spec["max"]),
                      None if step in (None, "any") else float(step),
                      str(spec.get("min_label", "")), str(spec.get("max_label", "")))
