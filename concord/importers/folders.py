"""Layouts on plain folders: ``folder``, ``paraphrase`` and ``imagenhub``.

``folder``: ``<root>/<model>/<prompt_id>[_<sample>].<ext>`` plus a prompts CSV/JSONL.
``paraphrase``: the same folders, prompts from a CSV of (group_id, category, prompt).
``imagenhub``: ``<root>/<task>/<model>/<uid>``; ``input/`` and ``mask/`` hold sources.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concord.errors import Problem
from concord.importers.images import EXTENSIONS, safe_relative
from concord.importers.manifest import Manifest
from concord.importers.safe_load import INT64_MAX, MAX_SAMPLE, shown, whole_number
from concord.importers.tables import TableError, read_records
from concord.plan import PromptSpec

PROMPT_COLUMNS = {
    "prompt_id", "prompt", "benchmark", "dimension", "category", "skills", "atom_count",
    "variant", "paraphrase_group", "source_image", "instruction",
}
# Folders inside an ImagenHub task that hold inputs, not model outputs.
IMAGENHUB_INPUT_DIRS = {"input", "mask", "source", "inputs", "masks", "token"}
_SAMPLE = re.compile(r"^(?P<key>.+)_(?P<sample>\d+)$")


@dataclass(slots=True)
class Layout:
    """What a layout reader found: prompts, image files and problems."""

    prompts: list[PromptSpec] = field(default_factory=list)
    files: list[tuple[str, str, int, Path]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    models: list[str] = field(default_factory=list)


def read_prompt_table(path: Path, layout: Layout, *, root: Path) -> None:
    """Prompts from a CSV/JSONL with ``prompt_id`` and ``prompt`` columns (+ metadata)."""
    try:
        rows = read_records(path, {"prompt_id", "prompt"})
    except TableError as exc:
        layout.problems.extend(exc.problems)
        return
    seen: dict[str, int] = {}
    for line, row in rows:
        spec = _prompt_from_row(path, line, row, layout.problems, root)
        if spec is None:
            continue
        if spec.key in seen:
            layout.problems.append(Problem(str(path), f"duplicate prompt id {spec.key!r} (first "
                                                      f"on row {seen[spec.key]})", row=line,
                                           field="prompt_id"))
            continue
        seen[spec.key] = line
        layout.prompts.append(spec)


def _prompt_from_row(
    path: Path, line: int, row: dict[str, Any], problems: list[Problem], root: Path
) -> PromptSpec | None:
    def bad(fld: str, msg: str) -> None:
        problems.append(Problem(str(path), msg, row=line, field=fld))

    key = str(row.get("prompt_id") or "").strip()
    text = str(row.get("prompt") or "").strip()
    if not key:
        bad("prompt_id", "empty prompt id")
    if not text:
        bad("prompt", "empty prompt")
    if not key or not text:
        return None
    spec = PromptSpec(key=key, text=text, benchmark=_opt(row, "benchmark"),
                      dimension=_opt(row, "dimension") or _opt(row, "category"),
                      variant=_opt(row, "variant"), paraphrase_group=_opt(row, "paraphrase_group"),
                      instruction=_opt(row, "instruction"))
    spec.meta = {k: v for k, v in row.items() if k not in PROMPT_COLUMNS and v not in ("", None)}
    if _opt(row, "atom_count") is not None:
        try:
            spec.atom_count = whole_number(row["atom_count"], 0, INT64_MAX)
        except ValueError as exc:
            bad("atom_count", str(exc))
    if _opt(row, "skills") is not None:
        skills = row["skills"]
        spec.skills = skills if isinstance(skills, list) else [
            s.strip() for s in str(skills).split(";") if s.strip()]
    if _opt(row, "source_image") is not None:
        rel, problem = safe_relative(root, root / str(row["source_image"]), label=str(path))
        if problem is not None:
            bad("source_image", f"{problem.message} ({row['source_image']!r})")
        spec.source_image = rel
    return spec


def _opt(row: dict[str, Any], key: str) -> Any:
    val = row.get(key)
    if val is None or (isinstance(val, str) and not val.strip()):
        return None
    return val.strip() if isinstance(val, str) else val


def model_dirs(root: Path, declared: list[str] | None, layout: Layout,
               skip: set[str] = frozenset()) -> list[tuple[str, Path]]:
    """Model folders under ``root``; folders not in ``declared`` are problems."""
    found = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                   and p.name.lower() not in skip)
    names = [p.name for p in found]
    if declared is None:
        return [(p.name, p) for p in found]
    for p in found:
        if p.name not in declared:
            layout.problems.append(Problem(str(p), f"unknown model {p.name!r} (declared models: "
                                                   f"{', '.join(declared)})", field="models"))
    for name in declared:
        if name not in names:
            layout.problems.append(Problem(str(root / name), f"no folder for declared model "
                                                             f"{name!r}", field="models"))
    return [(p.name, p) for p in found if p.name in declared]


def scan_model_dir(model: str, folder: Path, keys: set[str], layout: Layout) -> None:
    """Match ``<prompt_id>[_<sample>].<ext>`` files of one model folder to prompts."""
    seen: dict[tuple[str, int], Path] = {}
    for f in sorted(folder.iterdir()):
        if f.name.startswith("."):
            continue
        if f.is_dir():
            layout.problems.append(Problem(str(f), "unexpected folder inside a model folder"))
            continue
        if f.suffix.lower() not in EXTENSIONS:
            layout.problems.append(Problem(str(f), f"not an image file name (expected "
                                                   f"{', '.join(sorted(EXTENSIONS))})"))
            continue
        key, sample = _split_stem(f.stem, keys)
        if key is None:
            layout.problems.append(Problem(str(f), f"file name matches no prompt id (expected "
                                                   f"<prompt_id>[_<sample>]{f.suffix})",
                                           field="prompt_id"))
            continue
        if sample > MAX_SAMPLE:
            layout.problems.append(Problem(str(f), f"sample number {shown(sample)} in the file "
                                                   f"name is above {MAX_SAMPLE:,}", field="sample"))
            continue
        if (key, sample) in seen:
            layout.problems.append(Problem(str(f), f"second image for prompt {key!r} sample "
                                                   f"{sample} (also {seen[key, sample].name})"))
            continue
        seen[key, sample] = f
        layout.files.append((key, model, sample, f))


def _split_stem(stem: str, keys: set[str]) -> tuple[str | None, int]:
    if stem in keys:
        return stem, 0
    m = _SAMPLE.match(stem)
    if m and m.group("key") in keys:
        return m.group("key"), int(m.group("sample"))
    return None, 0


def read_folder(m: Manifest) -> Layout:
    """The ``folder`` layout."""
    layout = Layout()
    if m.prompts is None:
        layout.problems.append(Problem(str(m.path), "the folder layout needs a prompts file",
                                       field="prompts"))
        return layout
    read_prompt_table(m.prompts, layout, root=m.root)
    _scan_models(m, layout)
    return layout


def _prompts_unreadable(layout: Layout) -> bool:
    # Without any prompt every image would also be reported as matching none.
    return not layout.prompts and bool(layout.problems)


def _scan_models(m: Manifest, layout: Layout) -> None:
    if _prompts_unreadable(layout):
        return
    keys = {p.key for p in layout.prompts}
    for model, folder in model_dirs(m.root, m.models, layout):
        layout.models.append(model)
        scan_model_dir(model, folder, keys, layout)


def read_paraphrase(m: Manifest) -> Layout:
    """The ``paraphrase`` layout: prompts grouped by paraphrase group and category."""
    layout = Layout()
    if m.prompts is None:
        layout.problems.append(Problem(str(m.path), "the paraphrase layout needs a CSV of "
                                                    "group_id, category, prompt", field="prompts"))
        return layout
    try:
        rows = read_records(m.prompts, {"group_id", "category", "prompt"})
    except TableError as exc:
        layout.problems.extend(exc.problems)
        return layout
    counts: dict[str, int] = {}
    for line, row in rows:
        group, cat = str(row["group_id"]).strip(), str(row["category"]).strip().lower()
        text = str(row["prompt"]).strip()
        if cat not in {"abstract", "realistic"}:
            layout.problems.append(Problem(str(m.prompts), f"category must be abstract or "
                                                           f"realistic, got {cat!r}", row=line,
                                           field="category"))
        if not group or not text:
            layout.problems.append(Problem(str(m.prompts), "empty group_id or prompt", row=line,
                                           field="prompt" if group else "group_id"))
            continue
        counts[group] = counts.get(group, 0) + 1
        key = str(row.get("prompt_id") or f"{group}-{counts[group]}").strip()
        layout.prompts.append(PromptSpec(key=key, text=text, benchmark="paraphrase",
                                         dimension=cat, paraphrase_group=group))
    _check_unique(m.prompts, layout)
    _scan_models(m, layout)
    return layout


def _check_unique(path: Path, layout: Layout) -> None:
    seen: set[str] = set()
    for p in layout.prompts:
        if p.key in seen:
            layout.problems.append(Problem(str(path), f"duplicate prompt id {p.key!r}",
                                           field="prompt_id"))
        seen.add(p.key)


def read_imagenhub(m: Manifest) -> Layout:
    """The ``imagenhub`` layout: ``<root>/<task>/<model>/<uid>``."""
    layout = Layout()
    texts: dict[str, PromptSpec] = {}
    if m.prompts is not None:
        read_prompt_table(m.prompts, layout, root=m.root)
        texts = {p.key: p for p in layout.prompts}
        layout.prompts = []
    tasks = sorted(p for p in m.root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if m.tasks is not None:
        tasks = [t for t in tasks if t.name in m.tasks]
    models: list[str] = []
    for task in tasks:
        _read_task(m, task, texts, layout, models)
    layout.models = models
    return layout


def _read_task(m: Manifest, task: Path, texts: dict[str, PromptSpec], layout: Layout,
               models: list[str]) -> None:
    prompts: dict[str, PromptSpec] = {}
    for model, folder in model_dirs(task, m.models, layout, skip=IMAGENHUB_INPUT_DIRS):
        if model not in models:
            models.append(model)
        for f in sorted(folder.iterdir()):
            if f.name.startswith(".") or f.suffix.lower() not in EXTENSIONS:
                continue
            key = f"{task.name}/{f.name}"
            if key not in prompts:
                prompts[key] = _imagenhub_prompt(m, task, f.name, texts.get(key), layout)
            layout.files.append((key, model, 0, f))
    layout.prompts.extend(prompts[k] for k in sorted(prompts))


def _imagenhub_prompt(m: Manifest, task: Path, uid: str, given: PromptSpec | None,
                      layout: Layout) -> PromptSpec:
    spec = given or PromptSpec(key=f"{task.name}/{uid}", text="")
    spec.benchmark, spec.dimension = "imagenhub", task.name
    spec.meta = {**spec.meta, "uid": uid}
    src = task / "input" / uid
    # lexists, not is_file: a pipe, a link loop or a folder there is reported, not skipped
    if spec.source_image is None and os.path.lexists(src):
        spec.source_image, problem = safe_relative(m.root, src, label=str(src))
        if problem is not None:
            layout.problems.append(Problem(str(src), problem.message, field="source_image"))
    return spec

