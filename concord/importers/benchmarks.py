"""Layouts of the benchmarks Concord speaks natively: PairComp, GenEval 2, TIIF-Bench.

``paircomp``: ``PairComp.json`` (a list of {category, caption1, caption2}) and
``<root>/<model>/X_Y_Z.png`` (pair X, caption Y ∈ {0, 1}, sample Z).
``geneval2``: ``geneval2_data.jsonl`` and, per model, a JSON mapping prompt → image path.
``tiif``: ``<dim>_prompts.jsonl`` + line-aligned ``<dim>_eval_prompts.jsonl`` files, images at
``<root>/<model>/<dim>/<short|long>/<idx>.<ext>`` (the layout of TIIF-Bench's result tree).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from concord.errors import Problem
from concord.importers.folders import Layout, model_dirs
from concord.importers.images import EXTENSIONS, safe_relative
from concord.importers.manifest import Manifest
from concord.importers.safe_load import (
    INT64_MAX,
    MAX_SAMPLE,
    whole_number,
    whole_number_problem,
)
from concord.importers.tables import TableError, read_json, read_jsonl
from concord.plan import PromptSpec, Question

_PAIRCOMP_FILE = re.compile(r"^(\d+)_([01])_(\d+)$")
TIIF_VARIANTS = ("short", "long")


def read_paircomp(m: Manifest) -> Layout:
    """PairComp: 2 prompts per pair, images X_Y_Z.png (PNG only, as the reference requires)."""
    layout = Layout()
    if m.prompts is None:
        layout.problems.append(Problem(str(m.path), "the paircomp layout needs PairComp.json",
                                       field="prompts"))
        return layout
    try:
        pairs = read_json(m.prompts)
    except TableError as exc:
        layout.problems.extend(exc.problems)
        return layout
    if not isinstance(pairs, list):
        layout.problems.append(Problem(str(m.prompts), "expected a JSON list of pairs"))
        return layout
    for x, pair in enumerate(pairs):
        _paircomp_pair(m.prompts, x, pair, layout)
    keys = {p.key for p in layout.prompts}
    for model, folder in model_dirs(m.root, m.models, layout):
        layout.models.append(model)
        _paircomp_images(model, folder, keys, layout)
    return layout


def _paircomp_pair(path: Path, x: int, pair: Any, layout: Layout) -> None:
    fields = ("category", "caption1", "caption2")
    if not isinstance(pair, dict) or any(not str(pair.get(f) or "").strip() for f in fields):
        missing = [f for f in fields if not isinstance(pair, dict) or not pair.get(f)]
        layout.problems.append(Problem(str(path), f"pair {x} lacks {missing}", row=x + 1,
                                       field=",".join(missing)))
        return
    for y in (0, 1):
        layout.prompts.append(PromptSpec(
            key=f"{x}_{y}", text=str(pair[f"caption{y + 1}"]).strip(), benchmark="paircomp",
            dimension=str(pair["category"]), meta={"pair": x, "caption": y}))


def _paircomp_images(model: str, folder: Path, keys: set[str], layout: Layout) -> None:
    for f in sorted(folder.iterdir()):
        if f.name.startswith(".") or f.is_dir():
            continue
        match = _PAIRCOMP_FILE.match(f.stem)
        if f.suffix.lower() != ".png" or match is None:
            layout.problems.append(Problem(str(f), "expected X_Y_Z.png (pair, caption 0/1, "
                                                   "sample)", field="path"))
            continue
        key = f"{match.group(1)}_{match.group(2)}"
        if key not in keys:
            layout.problems.append(Problem(str(f), f"pair {match.group(1)} is not in "
                                                   "PairComp.json", field="path"))
            continue
        try:
            sample = whole_number(match.group(3), 0, MAX_SAMPLE)
        except ValueError as exc:
            layout.problems.append(Problem(str(f), f"sample: {exc}", field="path"))
            continue
        layout.files.append((key, model, sample, f))


def read_geneval2(m: Manifest) -> Layout:
    """GenEval 2: prompts with atoms, skills and VQA questions; a mapping file per model."""
    layout = Layout()
    if m.prompts is None or not m.model_files:
        layout.problems.append(Problem(str(m.path), "geneval2 needs prompts: geneval2_data.jsonl"
                                                    " and models: {name: mapping.json}",
                                       field="prompts" if m.prompts is None else "models"))
        return layout
    try:
        rows = read_jsonl(m.prompts)
    except TableError as exc:
        layout.problems.extend(exc.problems)
        return layout
    by_text: dict[str, str] = {}
    for n, (line, row) in enumerate(rows):
        spec = _geneval2_prompt(m.prompts, line, n, row, layout)
        if spec is not None:
            by_text.setdefault(spec.text, spec.key)
            layout.prompts.append(spec)
    for model, mapping in m.model_files.items():
        layout.models.append(model)
        _geneval2_mapping(m, model, mapping, by_text, layout)
    return layout


def _geneval2_prompt(path: Path, line: int, n: int, row: dict[str, Any],
                     layout: Layout) -> PromptSpec | None:
    def bad(fld: str, msg: str) -> None:
        layout.problems.append(Problem(str(path), msg, row=line, field=fld))

    text, vqa, skills = row.get("prompt"), row.get("vqa_list"), row.get("skills")
    if not isinstance(text, str) or not text.strip():
        bad("prompt", "empty prompt")
        return None
    if not isinstance(vqa, list) or not all(isinstance(q, list) and len(q) == 2 for q in vqa):
        bad("vqa_list", "expected a list of [question, answer] pairs")
        return None
    if not isinstance(skills, list) or len(skills) != len(vqa):
        bad("skills", f"expected one skill per question ({len(vqa)}), got {skills!r}")
        return None
    if (j := _blank_question([q for q, _ in vqa])) is not None:
        bad("vqa_list", f"question {j} has no text (got {vqa[j][0]!r})")
        return None
    atoms = row.get("atom_count")
    problem = whole_number_problem(atoms, 0, INT64_MAX)
    if problem is not None:
        bad("atom_count", problem)
        return None
    questions = [Question(str(j), str(q), str(a), str(s))
                 for j, ((q, a), s) in enumerate(zip(vqa, skills, strict=True))]
    return PromptSpec(key=str(n), text=text, benchmark="geneval2", atom_count=atoms,
                      skills=[str(s) for s in skills], dimension=f"{atoms} atoms",
                      questions=questions)


def _geneval2_mapping(m: Manifest, model: str, path: Path, by_text: dict[str, str],
                      layout: Layout) -> None:
    try:
        mapping = read_json(path)
    except TableError as exc:
        layout.problems.extend(exc.problems)
        return
    if not isinstance(mapping, dict):
        layout.problems.append(Problem(str(path), "expected a JSON object prompt → image path"))
        return
    for text, rel in mapping.items():
        if text not in by_text:
            layout.problems.append(Problem(str(path), f"prompt not in the benchmark: {text!r}",
                                           field=text[:40]))
            continue
        image = m.root / str(rel)
        _, problem = safe_relative(m.root, image, label=str(path))
        if problem is not None:
            layout.problems.append(Problem(str(path), f"{problem.message} ({rel!r})",
                                           field=text[:40]))
            continue
        layout.files.append((by_text[text], model, 0, image))


def _blank_question(questions: list[Any]) -> int | None:
    """The index of the first question that is not a non-blank text (None: all are): an
    empty question would be scored as the bare answer-format suffix."""
    return next((j for j, q in enumerate(questions)
                 if not isinstance(q, str) or not q.strip()), None)


def read_tiif(m: Manifest) -> Layout:
    """TIIF-Bench: prompt and eval-question JSONL folders, result-tree images."""
    layout = Layout()
    if m.prompts is None or m.questions is None:
        layout.problems.append(Problem(str(m.path), "tiif needs prompts: <dir of *_prompts.jsonl>"
                                                    " and questions: <dir of *_eval_prompts.jsonl>",
                                       field="prompts" if m.prompts is None else "questions"))
        return layout
    variants = m.variants or list(TIIF_VARIANTS)
    for v in variants:
        if v not in TIIF_VARIANTS:
            layout.problems.append(Problem(str(m.path), f"unknown variant {v!r}",
                                           field="variants"))
    for pfile in sorted(m.prompts.glob("*_prompts.jsonl")):
        dim = pfile.name[: -len("_prompts.jsonl")]
        _tiif_dimension(dim, pfile, m.questions / f"{dim}_eval_prompts.jsonl", variants, layout)
    if not layout.prompts and not layout.problems:
        layout.problems.append(Problem(str(m.prompts), "no *_prompts.jsonl files found"))
    keys = {p.key for p in layout.prompts}
    for model, folder in model_dirs(m.root, m.models, layout):
        layout.models.append(model)
        _tiif_images(model, folder, keys, layout)
    return layout


def _tiif_dimension(dim: str, pfile: Path, qfile: Path, variants: list[str],
                    layout: Layout) -> None:
    try:
        prompts, questions = read_jsonl(pfile), read_jsonl(qfile)
    except TableError as exc:
        layout.problems.extend(exc.problems)
        return
    if len(prompts) != len(questions):
        layout.problems.append(Problem(str(qfile), f"{len(questions)} question lines for "
                                                   f"{len(prompts)} prompts (files must be "
                                                   "line-aligned)"))
        return
    for idx, ((line, p), (qline, q)) in enumerate(zip(prompts, questions, strict=True)):
        qs, ans = q.get("yn_question_list"), q.get("yn_answer_list")
        if not isinstance(qs, list) or not isinstance(ans, list) or len(qs) != len(ans):
            layout.problems.append(Problem(str(qfile), "yn_question_list and yn_answer_list must"
                                                       " be lists of equal length", row=qline,
                                           field="yn_answer_list"))
            continue
        if (j := _blank_question(qs)) is not None:
            layout.problems.append(Problem(str(qfile), f"question {j} has no text (got "
                                                       f"{qs[j]!r})", row=qline,
                                           field="yn_question_list"))
            continue
        specs = [Question(str(j), str(qq), str(a)) for j, (qq, a)
                 in enumerate(zip(qs, ans, strict=True))]
        for v in variants:
            text = p.get(f"{v}_description")
            if not isinstance(text, str) or not text.strip():
                layout.problems.append(Problem(str(pfile), "empty prompt", row=line,
                                               field=f"{v}_description"))
                continue
            layout.prompts.append(PromptSpec(
                key=f"{dim}/{idx}/{v}", text=text.strip(), benchmark="tiif", dimension=dim,
                variant=v, meta={"index": idx}, questions=specs))


def _tiif_images(model: str, folder: Path, keys: set[str], layout: Layout) -> None:
    for f in sorted(folder.glob("*/*/*")):
        # not is_file(): a pipe named like an image is verified (and refused), not skipped
        if f.name.startswith(".") or f.is_dir() or f.suffix.lower() not in EXTENSIONS:
            continue
        dim, variant = f.parent.parent.name, f.parent.name
        key = f"{dim}/{f.stem}/{variant}"
        if key not in keys:
            layout.problems.append(Problem(str(f), f"no TIIF prompt {key!r} for this image",
                                           field="path"))
            continue
        layout.files.append((key, model, 0, f))
