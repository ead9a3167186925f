"""The study manifest: one YAML or JSON file that describes a study."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from concord.errors import InputError, Problem
from concord.importers.images import DEFAULT_MAX_PIXELS
from concord.importers.tables import TableError, read_text
from concord.plan import PROTOCOLS

LAYOUTS = ("folder", "imagenhub", "paircomp", "geneval2", "tiif", "paraphrase")
KNOWN_KEYS = {
    "name", "description", "protocol", "rubric", "layout", "root", "prompts", "questions",
    "models", "raters_per_item", "ranking", "gold", "max_pixels", "tasks", "variants",
    "benchmark", "seed", "rubrics",
}
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
    rubrics: dict[str, str] = field(default_factory=dict)  # dimension -> its own rubric id

    def settings(self) -> dict[str, Any]:
        """Study settings stored in the database."""
        r = self.ranking
        per_dimension = {"rubrics": dict(self.rubrics)} if self.rubrics else {}
        return {
            **per_dimension,
            "raters_per_item": self.raters_per_item,
            "layout": self.layout,
            "description": self.description,
            "seed": self.seed,
            "benchmark": self.benchmark,
            "ranking": {"ties": r.ties, "sample": r.sample, "seed": r.seed,
                        "prompts_per_dimension": r.prompts_per_dimension},
        }


def load_manifest(path: Path) -> Manifest:
    """Parse and validate a manifest; InputError lists every problem (file and key)."""
    label = str(path)
    try:
        text = read_text(path)
    except TableError as exc:
        raise InputError(exc.problems) from exc
    data = _parse(path, text)
    problems: list[Problem] = []
    m = _build(path, data, problems)
    if problems or m is None:
        raise InputError(problems or [Problem(label, "invalid manifest")])
    return m


def _parse(path: Path, text: str) -> dict[str, Any]:
    label = str(path)
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise InputError([Problem(label, f"malformed JSON: {exc.msg}", row=exc.lineno)]) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        row = mark.line + 1 if mark is not None else None
        raise InputError([Problem(label, f"malformed YAML: {exc}".splitlines()[0], row=row)]) \
            from exc
    if not isinstance(data, dict):
        raise InputError([Problem(label, f"the manifest must be a mapping, got "
                                         f"{type(data).__name__}")])
    return data


def _build(path: Path, d: dict[str, Any], problems: list[Problem]) -> Manifest | None:
    label = str(path)

    def bad(key: str, msg: str) -> None:
        problems.append(Problem(label, msg, field=key))

    for key in sorted(set(d) - KNOWN_KEYS):
        bad(key, f"unknown key (known keys: {', '.join(sorted(KNOWN_KEYS))})")
    name = d.get("name")
    if not isinstance(name, str) or not name.strip():
        bad("name", "a non-empty study name is required")
    protocol = d.get("protocol", "score")
    if protocol not in PROTOCOLS:
        bad("protocol", f"{protocol!r} is not one of {', '.join(PROTOCOLS)}")
    layout = d.get("layout")
    if layout not in LAYOUTS:
        bad("layout", f"unknown layout {layout!r}; use one of {', '.join(LAYOUTS)}")
    base = path.resolve().parent
    root = _path(base, d.get("root", "."), "root", bad, must_be_dir=True)
    m = Manifest(path=path.resolve(), name=str(name or "").strip(), protocol=str(protocol),
                 rubric=_rubric(d, protocol, bad), layout=str(layout), root=root or base,
                 description=str(d.get("description", "")))
    m.rubrics = _rubrics(d.get("rubrics"), bad)
    _fill_files(m, d, base, bad)
    _fill_numbers(m, d, bad)
    m.ranking = _ranking(d.get("ranking"), bad)
    return m


def _rubric(d: dict[str, Any], protocol: Any, bad: Any) -> str | None:
    rubric = d.get("rubric")
    if rubric is None:
        return "tiif-ranking" if protocol == "rank" else "imagenhub-text-to-image"
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
    p = (base / value).resolve()
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


def _positive_int(d: dict[str, Any], key: str, default: int, bad: Any) -> int:
    val = d.get(key, default)
    if isinstance(val, bool) or not isinstance(val, int) or val < 1:
        bad(key, f"expected a positive whole number, got {val!r}")
        return default
    return val


def _fill_numbers(m: Manifest, d: dict[str, Any], bad: Any) -> None:
    m.raters_per_item = _positive_int(d, "raters_per_item", 3, bad)
    m.max_pixels = _positive_int(d, "max_pixels", DEFAULT_MAX_PIXELS, bad)
    seed = d.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        bad("seed", f"expected a whole number, got {seed!r}")
    else:
        m.seed = seed
    benchmark = d.get("benchmark")
    if benchmark is not None and not isinstance(benchmark, str):
        bad("benchmark", f"expected a name, got {benchmark!r}")
    else:
        m.benchmark = benchmark


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
        out.prompts_per_dimension = _positive_int(r, "prompts_per_dimension", 3, bad)
    if "prompts" in r:
        if isinstance(r["prompts"], list) and all(isinstance(x, str) for x in r["prompts"]):
            out.prompts = list(r["prompts"])
        else:
            bad("ranking.prompts", f"expected a list of prompt ids, got {r['prompts']!r}")
    seed, sample = r.get("seed", 0), r.get("sample", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        bad("ranking.seed", f"expected a whole number, got {seed!r}")
    else:
        out.seed = seed
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        bad("ranking.sample", f"expected a sample index ≥ 0, got {sample!r}")
    else:
        out.sample = sample
    if not isinstance(r.get("ties", False), bool):
        bad("ranking.ties", f"expected true or false, got {r.get('ties')!r}")
    else:
        out.ties = bool(r.get("ties", False))
    return out
