"""From a manifest to a validated :class:`StudyPlan` (nothing is written here)."""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from concord.errors import InputError, Problem
from concord.importers import benchmarks, folders, study_checks
from concord.importers.images import verify_many
from concord.importers.manifest import Manifest, read_manifest, readable
from concord.importers.pair_manifest import PAIR_GOLD, add_gold_pair, check_pairs
from concord.importers.rubric_files import resolve as resolve_rubric_files
from concord.importers.safe_load import MAX_SAMPLE, finite_number, shown, whole_number
from concord.importers.tables import TableError, read_records
from concord.plan import GoldPairSpec, GoldSpec, ImageSpec, PromptSpec, StudyPlan
from concord.rubrics import copies, list_rubrics, load_rubric_by_id

# The manifest layouts: one reader each (the manifest checks `layout:` against these keys).
READERS: dict[str, Callable[[Manifest], folders.Layout]] = {
    "folder": folders.read_folder,
    "imagenhub": folders.read_imagenhub,
    "paircomp": benchmarks.read_paircomp,
    "geneval2": benchmarks.read_geneval2,
    "tiif": benchmarks.read_tiif,
    "paraphrase": folders.read_paraphrase,
}
MIN_RANK_SET, MAX_RANK_SET = 2, 16


def plan_from_manifest(path: Path, *, progress: Any = None) -> StudyPlan:
    """Read and check everything a manifest names; InputError lists every problem.

    Args:
        path: the manifest (YAML or JSON).
        progress: optional factory ``(total, desc) -> bar`` with ``update(n)`` and ``close()``.
    """
    m, problems = read_manifest(path, READERS)
    rubric_files, file_problems = resolve_rubric_files(m)
    problems += file_problems + _check_rubric(m, rubric_files)
    if not readable(problems):  # every problem that can be found without the files
        raise InputError(problems)
    try:
        layout = READERS[m.layout](m)
    except InputError as exc:
        raise InputError(problems + exc.problems, total=len(problems) + exc.total) from exc
    for p in layout.prompts:  # the manifest's benchmark labels prompts that have none
        p.benchmark = p.benchmark or m.benchmark
    problems += layout.problems
    problems += _check_dimension_rubrics(m, layout.prompts, rubric_files)
    paths = [f for *_, f in layout.files]
    bar = progress(len(paths), "checking images") if progress and paths else None
    infos, bad = verify_many(m.root, paths, max_pixels=m.max_pixels, progress=bar)
    if bar is not None:
        bar.close()
    problems += bad
    problems += _check_sources(m, layout.prompts)
    images = [
        ImageSpec(key, model, sample, i.rel_path, i.sha256, i.bytes, i.width, i.height)
        for key, model, sample, f in layout.files
        if (i := infos.get(f)) is not None
    ]
    models = m.models or layout.models
    problems += _select_rank_set(m, layout.prompts, models)
    problems += check_pairs(m.pairs, list(models), str(m.path))
    gold_pairs: list[GoldPairSpec] = []
    gold = _read_gold(m, layout.prompts, models, problems, gold_pairs)
    problems += study_checks.check_practice(m, gold) + study_checks.check_quotas(m)
    if not layout.prompts and not problems:
        problems.append(Problem(str(m.path), "the study has no prompts", field="prompts"))
    if problems:
        raise InputError(problems)
    shown, warnings, looks = study_checks.study_display(m, layout.files, infos)
    settings = m.settings() | ({"display": shown.stored()} if shown else {}) | (
        {"rubric_files": rubric_files} if rubric_files else {})
    return StudyPlan(name=m.name, protocol=m.protocol, rubric=m.rubric, root=str(m.root),
                     settings=settings, models=list(models), prompts=layout.prompts,
                     images=images, gold=gold, gold_pairs=gold_pairs,
                     warnings=warnings + study_checks.gold_warnings(m, gold, len(gold_pairs)),
                     appearance=looks)


def _check_sources(m: Manifest, prompts: list[PromptSpec]) -> list[Problem]:
    """Source images of editing tasks are shown to raters: they must be real images too."""
    paths = sorted({m.root / p.source_image for p in prompts if p.source_image})
    _, bad = verify_many(m.root, paths, max_pixels=m.max_pixels)
    return [Problem(b.file, b.message, field="source_image") for b in bad]


def _check_rubric(m: Manifest, files: dict[str, str]) -> list[Problem]:
    if m.rubric is not None and m.rubric not in files and m.rubric not in list_rubrics():
        return [Problem(str(m.path), unknown_rubric(m.rubric), field="rubric")]
    return []


def unknown_rubric(rubric: str) -> str:
    """The message for a rubric id that no file has, with the nearest one when it looks
    like a misspelling."""
    known = list_rubrics()
    close = difflib.get_close_matches(rubric, known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown rubric {rubric!r} ({hint}rubrics: {', '.join(known)})"


def _check_dimension_rubrics(m: Manifest, prompts: list[PromptSpec],
                             files: dict[str, str]) -> list[Problem]:
    """Each ``rubrics:`` entry names a dimension the study has and a rubric with a scale."""
    known, dims = list_rubrics(), {p.dimension for p in prompts}
    problems = []
    for dimension, rubric in m.rubrics.items():
        where = f"rubrics.{dimension}"
        if rubric not in known and rubric not in files:
            problems.append(Problem(str(m.path), unknown_rubric(rubric), field=where))
        elif (copies.from_text(files[rubric], rubric) if rubric in files
              else load_rubric_by_id(rubric)).is_ranking:
            problems.append(Problem(str(m.path), f"{rubric!r} is a ranking rubric; a dimension"
                                                 " needs one with a scale", field=where))
        if dimension not in dims:
            shown = ", ".join(sorted(d for d in dims if d)) or "none"
            problems.append(Problem(str(m.path), f"no prompt has the dimension {dimension!r}"
                                                 f" (dimensions: {shown})", field=where))
    return problems


def _select_rank_set(m: Manifest, prompts: list[PromptSpec], models: list[str]) -> list[Problem]:
    """Mark which prompts a ranking study shows; sampling is seeded and recorded."""
    r = m.ranking
    if m.protocol in ("score", "pair"):
        return []
    problems: list[Problem] = []
    if not MIN_RANK_SET <= len(models) <= MAX_RANK_SET:
        problems.append(Problem(str(m.path), f"ranking needs {MIN_RANK_SET} to {MAX_RANK_SET}"
                                             f" models per prompt, the study has {len(models)}",
                                field="models"))
    keys = [p.key for p in prompts]
    if r.prompts is not None:
        unknown = sorted(set(r.prompts) - set(keys))
        if unknown:
            problems.append(Problem(str(m.path), f"unknown prompt id(s) {unknown}",
                                    field="ranking.prompts"))
        chosen = set(r.prompts)
    elif r.prompts_per_dimension is not None:
        chosen = _sample_per_dimension(prompts, r.prompts_per_dimension, r.seed)
    else:
        chosen = set(keys)
    for p in prompts:
        p.rank_set = p.key in chosen
    return problems


def _sample_per_dimension(prompts: list[PromptSpec], k: int, seed: int) -> set[str]:
    by_dim: dict[str, list[str]] = {}
    for p in prompts:
        by_dim.setdefault(p.dimension or "", []).append(p.key)
    rng = random.Random(seed)
    chosen: set[str] = set()
    for dim in sorted(by_dim):
        keys = sorted(by_dim[dim])
        chosen.update(rng.sample(keys, min(k, len(keys))))
    return chosen


# In a gold file, this criterion marks a ranking gold: the image must get rank `expected`.
RANK_GOLD = "rank"


def _read_gold(m: Manifest, prompts: list[PromptSpec], models: list[str],
               problems: list[Problem], gold_pairs: list[GoldPairSpec]) -> list[GoldSpec]:
    """Gold rows: an expected score of one image, (criterion ``rank``) the rank an image
    must get in its prompt's ranking set (1 = a known best image), or (criterion ``pair``,
    added to ``gold_pairs``) a pair whose better image is known."""
    if m.gold is None:
        return []
    try:
        rows = read_records(m.gold, {"prompt_id", "model", "criterion", "expected"})
    except TableError as exc:
        problems.extend(exc.problems)
        return []
    by_key = {p.key: p for p in prompts}
    out: list[GoldSpec] = []
    ranked: set[tuple[str, float]] = set()
    for line, row in rows:
        before = len(problems)

        def bad(fld: str, msg: str, line: int = line) -> None:
            problems.append(Problem(str(m.gold), msg, row=line, field=fld))
        if str(row["prompt_id"]) not in by_key:
            bad("prompt_id", f"unknown prompt id {shown(row['prompt_id'])}")
        if row["model"] not in models:
            bad("model", f"unknown model {shown(row['model'])}")
        if str(row["criterion"]) == PAIR_GOLD:
            if len(problems) == before:
                add_gold_pair(row, models, m.pairs, bad, gold_pairs)
            continue
        sample, expected, tolerance = _gold_numbers(row, bad)
        if len(problems) > before:
            continue
        spec = _gold_spec(row, (sample, expected, tolerance), bad, m.protocol, len(models))
        if spec is not None and _new_rank(spec, ranked, by_key, bad):
            out.append(spec)
    return out


def _new_rank(spec: GoldSpec, ranked: set[tuple[str, float]], by_key: dict[str, PromptSpec],
              bad: Callable[[str, str], None]) -> bool:
    """A ranking gold's prompt becomes a ranking set; one gold image per rank and prompt."""
    if spec.unit != "prompt":
        return True
    if (spec.prompt_key, spec.expected) in ranked:
        bad("expected", f"prompt {spec.prompt_key!r} already has a gold image for rank "
                        f"{spec.expected:g}")
        return False
    ranked.add((spec.prompt_key, spec.expected))
    by_key[spec.prompt_key].rank_set = True  # every rater must meet it
    return True


def _gold_numbers(row: dict[str, Any], bad: Callable[[str, str], None]) -> tuple[int, float, float]:
    """(sample, expected, tolerance) of a gold row; each bad field is reported."""
    sample, expected, tolerance = 0, 0.0, 0.0
    try:
        sample = whole_number(row.get("sample") or "0", 0, MAX_SAMPLE)
    except ValueError as exc:
        bad("sample", str(exc))
    try:
        expected = finite_number(row["expected"])
    except ValueError as exc:
        bad("expected", str(exc))
    try:
        tolerance = finite_number(row.get("tolerance") or "0")
    except ValueError as exc:
        bad("tolerance", str(exc))
    if tolerance < 0:
        bad("tolerance", f"expected a number ≥ 0, got {tolerance:g}")
    return sample, expected, tolerance


def _gold_spec(row: dict[str, Any], numbers: tuple[int, float, float],
               bad: Callable[[str, str], None], protocol: str, n_models: int) -> GoldSpec | None:
    """A scoring gold, or (criterion ``rank``) a ranking gold after its own checks."""
    sample, expected, tolerance = numbers
    ranking = str(row["criterion"]) == RANK_GOLD
    if ranking and protocol not in ("rank", "both"):
        bad("criterion", "a ranking gold ('rank') needs protocol rank or both")
        return None
    if ranking and not (float(expected).is_integer() and 1 <= expected <= n_models):
        bad("expected", f"a rank from 1 to {n_models}, got {row['expected']!r}")
        return None
    # "overall" is the criterion every ranking is stored under (concord.services.labelling.ranking).
    return GoldSpec(str(row["prompt_id"]), str(row["model"]), sample,
                    "overall" if ranking else str(row["criterion"]), expected, tolerance,
                    unit="prompt" if ranking else "image")
