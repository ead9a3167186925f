"""The study manifest: one YAML or JSON file that describes a study."""

from __future__ import annotations

import difflib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concord import check_settings, crowd_settings, devices, display
from concord import questionnaire as questions
from concord.crowd_settings import CrowdSettings
from concord.errors import InputError, Problem
from concord.importers.images import DEFAULT_MAX_PIXELS
from concord.importers.pair_manifest import PairSettings, parse_pairs
from concord.importers.safe_load import (
    INT64_MAX,
    INT64_MIN,
    MAX_DOCUMENT_BYTES,
    MAX_RATERS_PER_ITEM,
    MAX_SAMPLE,
    LoadError,
    load_json,
    load_yaml,
    whole_number_problem,
)
from concord.importers.tables import TableError, read_text
from concord.names import name_problem
from concord.plan import DEFAULT_LEASE_MINUTES, STUDY_PROTOCOLS
from concord.stats.thresholds import QualityThresholds

KNOWN_KEYS = {
    "name", "description", "protocol", "rubric", "layout", "root", "prompts", "questions",
    "models", "raters_per_item", "ranking", "gold", "max_pixels", "tasks", "variants",
    "benchmark", "seed", "lease_minutes", "quality", "pairs", "rubrics", "crowd", "checklist",
    "display", "comments", "devices", "questionnaire",
}
COMMENT_MODES = ("off", "optional", "required")  # concord.services.labelling.comments
MAX_LEASE_MINUTES = 7 * 24 * 60
RANKING_KEYS = {"prompts_per_dimension", "prompts", "seed", "ties", "sample", "criteria"}


@dataclass(slots=True)
class Ranking:
    """How a ranking study picks its sets."""

    prompts_per_dimension: int | None = None
    prompts: list[str] | None = None
    seed: int = 0
    ties: bool = False
    sample: int = 0


@dataclass(slots=True)
class Manifest:
    """A parsed, validated manifest; paths are absolute."""

    path: Path
    name: str
    protocol: str
    rubric: str | None
    layout: str
    root: Path
    prompts: Path | None = None
    questions: Path | None = None
    models: list[str] | None = None
    model_files: dict[str, Path] = field(default_factory=dict)
    raters_per_item: int = 3
    ranking: Ranking = field(default_factory=Ranking)
    gold: Path | None = None
    max_pixels: int = DEFAULT_MAX_PIXELS
    tasks: list[str] | None = None
    variants: list[str] | None = None
    description: str = ""
    seed: int = 0
    benchmark: str | None = None
    lease_minutes: float = DEFAULT_LEASE_MINUTES
    quality: dict[str, Any] = field(default_factory=dict)
    pairs: PairSettings = field(default_factory=PairSettings)
    rubrics: dict[str, str] = field(default_factory=dict)  # dimension -> its own rubric id
    crowd: CrowdSettings = field(default_factory=CrowdSettings)
    checklist: bool = False  # raters tick the rubric's conditions (docs/rubrics.md)
    comments: str = "off"  # a free-text comment per item: off, optional or required
    # ``display``: None (decided at import: on when the models' images differ), False (off)
    # or {size?, format} (concord.display); the import resolves it into the settings.
    display: dict[str, Any] | bool | None = None
    devices: devices.Devices | None = None  # screens the study needs (concord.devices)
    questionnaire: questions.Questionnaire | None = None  # before / after the items

    def settings(self) -> dict[str, Any]:
        """Study settings stored in the database."""
        r, pairs = self.ranking, self.pairs.settings(self.raters_per_item)
        per_dimension = {"rubrics": dict(self.rubrics)} if self.rubrics else {}
        return {
            **per_dimension,
            "raters_per_item": self.raters_per_item,
            "layout": self.layout,
            "description": self.description,
            "seed": self.seed,
            "benchmark": self.benchmark,
            "lease_minutes": self.lease_minutes,
            **({"quality": self.quality} if self.quality else {}),
            **({"pairs": pairs} if pairs else {}),
            **({"pair_scores": self.pairs.scores} if self.pairs.scores else {}),
            **({"crowd": self.crowd.stored()} if self.crowd.stored() else {}),
            **({"checklist": True} if self.checklist else {}),
            **({"comments": self.comments} if self.comments != "off" else {}),
            **({"devices": self.devices.stored()} if self.devices else {}),
            **({"questionnaire": self.questionnaire.stored()} if self.questionnaire else {}),
            "ranking": {"ties": r.ties, "sample": r.sample, "seed": r.seed,
                        "prompts_per_dimension": r.prompts_per_dimension},
        }


# Keys whose problems leave nothing to read: the layout's reader needs them sound.
READ_KEYS = ("layout", "root", "prompts", "questions", "models")


def load_manifest(path: Path, layouts: Collection[str]) -> Manifest:
    """Parse and validate a manifest; InputError lists every problem (file and key).

    ``layouts`` are the layout names there are readers for (``build.READERS``, which
    imports this module, so it passes them in).
    """
    m, problems = read_manifest(path, layouts)
    if problems:
        raise InputError(problems)
    return m


def read_manifest(path: Path, layouts: Collection[str]) -> tuple[Manifest, list[Problem]]:
    """The manifest as far as it can be read, and every problem of its keys: an import
    goes on to check the files it names (when :func:`readable`), so that one run reports
    everything. InputError only when the file is not a mapping of keys at all."""
    try:
        text = read_text(path, MAX_DOCUMENT_BYTES)
    except TableError as exc:
        raise InputError(exc.problems) from exc
    data = _parse(path, text)
    problems: list[Problem] = []
    return _build(path, data, problems, layouts), problems


def readable(problems: list[Problem]) -> bool:
    """Whether the layout's files can be read despite these manifest problems."""
    return not any((p.field or "").split(".")[0] in READ_KEYS for p in problems)


def _parse(path: Path, text: str) -> dict[str, Any]:
    label = str(path)
    try:
        data = load_json(text) if path.suffix.lower() == ".json" else load_yaml(text)
    except LoadError as exc:
        raise InputError([Problem(label, exc.message, row=exc.line)]) from exc
    if not isinstance(data, dict):
        raise InputError([Problem(label, f"the manifest must be a mapping, got "
                                         f"{type(data).__name__}")])
    return data


def _build(path: Path, d: dict[str, Any], problems: list[Problem],
           layouts: Collection[str]) -> Manifest:
    label = str(path)

    def bad(key: str, msg: str) -> None:
        problems.append(Problem(label, msg, field=key))

    for key in sorted(set(d) - KNOWN_KEYS, key=str):
        close = difflib.get_close_matches(str(key), KNOWN_KEYS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        bad(str(key), f"unknown key ({hint}known keys: {', '.join(sorted(KNOWN_KEYS))})")
    name = d.get("name")
    if (problem := name_problem(name, "study")) is not None:
        bad("name", problem)
    protocol = d.get("protocol", "score")
    if protocol not in STUDY_PROTOCOLS:
        bad("protocol", f"{protocol!r} is not one of {', '.join(STUDY_PROTOCOLS)}")
    layout = d.get("layout")
    if layout not in layouts:
        bad("layout", f"unknown layout {layout!r}; use one of {', '.join(layouts)}")
    base = path.resolve().parent
    root = _path(base, d.get("root", "."), "root", bad, must_be_dir=True)
    m = Manifest(path=path.resolve(), name=str(name or "").strip(), protocol=str(protocol),
                 rubric=_rubric(d, protocol, bad), layout=str(layout), root=root or base,
                 description=str(d.get("description", "")))
    m.rubrics = _rubrics(d.get("rubrics"), bad)
    m.comments = d.get("comments", "off")
    if m.comments not in COMMENT_MODES:
        bad("comments", f"expected one of {', '.join(COMMENT_MODES)}, got {m.comments!r}")
        m.comments = "off"
    m.checklist = d.get("checklist", False)
    if not isinstance(m.checklist, bool):
        bad("checklist", f"expected true or false, got {m.checklist!r}")
    _fill_files(m, d, base, bad)
    _fill_numbers(m, d, bad)
    m.ranking = _ranking(d.get("ranking"), bad)
    m.pairs = parse_pairs(d.get("pairs"), protocol, bad)
    return m


def _rubric(d: dict[str, Any], protocol: Any, bad: Any) -> str | None:
    rubric = d.get("rubric")
    if rubric is None:
        # A pair is judged on the ranking study's criteria (prompt following, quality).
        return "tiif-ranking" if protocol in ("rank", "pair") else "imagenhub-text-to-image"
    if not isinstance(rubric, str) or not rubric:
        bad("rubric", f"expected a rubric id, got {rubric!r}")
        return None
    return rubric


def _rubrics(value: Any, bad: Any) -> dict[str, str]:
    """``rubrics:``: a mapping of dimension (ImagenHub task, category, ...) to rubric id."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and k.strip() and isinstance(v, str) and v.strip()
            for k, v in value.items()):
        bad("rubrics", f"expected a mapping of dimension to rubric id, got {value!r}")
        return {}
    return dict(value)


def _path(base: Path, value: Any, key: str, bad: Any, *, must_be_dir: bool = False) -> Path | None:
    if not isinstance(value, str) or not value:
        bad(key, f"expected a path, got {value!r}")
        return None
    try:
        p = (base / value).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL in the path
        bad(key, f"path cannot be resolved: {value!r} ({exc})")
        return None
    if must_be_dir and not p.is_dir():
        bad(key, f"directory not found: {p}")
        return None
    if not must_be_dir and not p.exists():
        bad(key, f"not found: {p}")
        return None
    return p


def _fill_files(m: Manifest, d: dict[str, Any], base: Path, bad: Any) -> None:
    for key in ("prompts", "questions", "gold"):
        if key in d:
            setattr(m, key, _path(base, d[key], key, bad))
    models = d.get("models")
    if isinstance(models, dict):
        # geneval2: model name → JSON file mapping prompt → image path
        m.models = [str(k) for k in models]
        for k, v in models.items():
            p = _path(base, v, f"models.{k}", bad)
            if p is not None:
                m.model_files[str(k)] = p
    elif isinstance(models, list) and all(isinstance(x, str) and x for x in models):
        if len(set(models)) != len(models):
            bad("models", "duplicate model names")
        m.models = list(models)
    elif models is not None:
        bad("models", f"expected a list of model names, got {models!r}")
    for key in ("tasks", "variants"):
        val = d.get(key)
        if val is not None and not (isinstance(val, list) and all(isinstance(x, str) for x in val)):
            bad(key, f"expected a list of names, got {val!r}")
        elif val is not None:
            setattr(m, key, list(val))


def _whole(d: dict[str, Any], key: str, default: int, bad: Any, *, low: int = 1,
           high: int = INT64_MAX, at: str = "") -> int:
    """``d[key]`` as a whole number in [low, high] (SQLite stores 64-bit integers at most)."""
    val = d.get(key, default)
    problem = whole_number_problem(val, low, high)
    if problem is not None:
        bad(at + key, problem)
        return default
    return val


def _fill_numbers(m: Manifest, d: dict[str, Any], bad: Any) -> None:
    m.raters_per_item = _whole(d, "raters_per_item", 3, bad, high=MAX_RATERS_PER_ITEM)
    m.max_pixels = _whole(d, "max_pixels", DEFAULT_MAX_PIXELS, bad)
    m.seed = _whole(d, "seed", 0, bad, low=INT64_MIN)
    lease = d.get("lease_minutes", DEFAULT_LEASE_MINUTES)
    if isinstance(lease, bool) or not isinstance(lease, int | float) or not (
            0 < lease <= MAX_LEASE_MINUTES):
        bad("lease_minutes", f"expected minutes more than 0 and at most {MAX_LEASE_MINUTES}"
                             f" (a week), got {lease!r}")
    else:
        m.lease_minutes = float(lease)
    m.quality = _quality(d.get("quality"), bad)
    m.crowd, crowd_problems = crowd_settings.parse(d.get("crowd"))
    m.display, display_problems = display.parse(d.get("display"))
    m.devices, device_problems = devices.parse(d.get("devices"))
    m.questionnaire, question_problems = questions.parse(d.get("questionnaire"))
    for key, message in crowd_problems + display_problems + device_problems + question_problems:
        bad(key, message)
    benchmark = d.get("benchmark")
    if benchmark is not None and not isinstance(benchmark, str):
        bad("benchmark", f"expected a name, got {benchmark!r}")
    else:
        m.benchmark = benchmark


def _quality(value: Any, bad: Any) -> dict[str, Any]:
    """Flag thresholds of the rater-quality checks (docs/stats.md) and the attention-check
    keys (concord.check_settings), checked here so a typo is refused at import rather
    than at the first report."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        bad("quality", f"expected a mapping of thresholds, got {value!r}")
        return {}
    thresholds, checks = check_settings.split(value)
    for key, message in check_settings.problems(checks):
        bad(key, message)
    try:
        QualityThresholds.from_settings(thresholds)
    except ValueError as exc:
        bad("quality", str(exc))
        return {}
    return dict(value)


def _ranking(r: Any, bad: Any) -> Ranking:
    out = Ranking()
    if r is None:
        return out
    if not isinstance(r, dict):
        bad("ranking", f"expected a mapping, got {r!r}")
        return out
    for key in sorted(set(r) - RANKING_KEYS):
        bad(f"ranking.{key}", f"unknown key (known: {', '.join(sorted(RANKING_KEYS))})")
    if "prompts_per_dimension" in r:
        out.prompts_per_dimension = _whole(r, "prompts_per_dimension", 3, bad, at="ranking.")
    if "prompts" in r:
        if isinstance(r["prompts"], list) and all(isinstance(x, str) for x in r["prompts"]):
            out.prompts = list(r["prompts"])
        else:
            bad("ranking.prompts", f"expected a list of prompt ids, got {r['prompts']!r}")
    out.seed = _whole(r, "seed", 0, bad, low=INT64_MIN, at="ranking.")
    out.sample = _whole(r, "sample", 0, bad, low=0, high=MAX_SAMPLE, at="ranking.")
    if not isinstance(r.get("ties", False), bool):
        bad("ranking.ties", f"expected true or false, got {r.get('ties')!r}")
    else:
        out.ties = bool(r.get("ties", False))
    return out
