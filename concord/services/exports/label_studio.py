"""Label Studio JSON export (``export --format label-studio``) and its labeling config.

One task per image: ``data`` holds ``image`` (the image's path under the study root,
after ``image_root``), ``prompt``, and ``prompt_id``, ``model``, ``sample``,
``dimension`` (what the import maps back). One annotation per rater who rated the image,
``completed_by: {"id": n, "email": rater}``, ``lead_time`` = the rating's seconds, and one
``result`` per criterion (``from_name`` = the criterion, ``to_name`` = ``image``): a
``rating`` control (``{"rating": n}``) for a scale of the whole numbers 1..N (N ≤ 10),
otherwise ``choices`` (``{"choices": ["0.5"]}``), the choice values being the scale's
numbers. The import side is :mod:`concord.importers.label_studio`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import pandas as pd
from sqlite_utils import Database

from concord import atomic
from concord.errors import ConcordError
from concord.rubrics import Criterion, Rubric
from concord.services import rubric_choice
from concord.services.exports import labels
from concord.store import frames
from concord.store import studies as study_store

MAX_STARS = 10


def is_stars(criterion: Criterion) -> bool:
    """A scale of the whole numbers 1..N (N ≤ 10) is a Label Studio ``Rating``."""
    values = list(criterion.values)
    return 2 <= len(values) <= MAX_STARS and values == list(range(1, len(values) + 1))


def tasks(db: Database, study_name: str, *, image_root: str = "",
          include_excluded: bool = False) -> list[dict]:
    """The study's images as Label Studio tasks with the current ratings as annotations."""
    study = study_store.get_study(db, study_name)
    info = frames.images_frame(db, study.id)
    ratings = labels.ratings(db, study_name, include_excluded=include_excluded)
    by_image = dict(list(ratings.groupby("image_id", sort=False)))
    raters = {name: i + 1 for i, name in enumerate(sorted(set(ratings["rater"])))}
    rubrics = rubric_choice.study_rubrics(study)
    out: list[dict[str, Any]] = []
    for n, img in enumerate(info.itertuples()):
        dimension = img.dimension if isinstance(img.dimension, str) else None
        rubric = rubrics.for_dimension(dimension)
        data = {"image": f"{image_root}{img.path}" if isinstance(img.path, str) else "",
                "prompt": img.prompt, "prompt_id": img.prompt_id, "model": img.model,
                "sample": int(img.sample)}
        if dimension is not None:
            data["dimension"] = dimension
        rated = by_image.get(img.image_id)
        annotations = [] if rated is None else _annotations(rated, rubric, raters, n + 1)
        out.append({"id": n + 1, "data": data, "annotations": annotations})
    for number, ann in enumerate((a for t in out for a in t["annotations"]), start=1):
        ann["id"] = number  # unique over the file, however many raters
    return out


def _annotations(rated: pd.DataFrame, rubric: Rubric | None, raters: dict[str, int],
                 task_id: int) -> list[dict]:
    out = []
    for rater, part in rated.groupby("rater", sort=True):
        seconds = part["seconds"].dropna()
        result = [_result(c, float(v), rubric) for c, v in zip(
            part["criterion"], part["value"], strict=True)]
        out.append({"id": 0, "task": task_id,
                    "completed_by": {"id": raters[rater], "email": rater},
                    "was_cancelled": False, "ground_truth": False,
                    "lead_time": float(seconds.iloc[0]) if len(seconds) else None,
                    "created_at": str(part["created_at"].max()), "result": result})
    return out


def _result(criterion: str, value: float, rubric: Rubric | None) -> dict:
    found = next((c for c in rubric.criteria if c.key == criterion), None) if rubric else None
    base = {"from_name": criterion, "to_name": "image"}
    if found is not None and found.continuous is not None:
        return {**base, "type": "number", "value": {"number": value}}
    if found is not None and is_stars(found):
        return {**base, "type": "rating", "value": {"rating": int(value)}}
    return {**base, "type": "choices", "value": {"choices": [f"{value:g}"]}}


def export_bytes(db: Database, study_name: str, *, image_root: str = "",
                 include_excluded: bool = False) -> tuple[bytes, int]:
    """The tasks as one JSON document (UTF-8) and how many there are."""
    found = tasks(db, study_name, image_root=image_root, include_excluded=include_excluded)
    text = json.dumps(found, ensure_ascii=False, indent=1)
    return (text + "\n").encode("utf-8"), len(found)


def export_file(db: Database, study_name: str, path: Path, *, image_root: str = "",
                include_excluded: bool = False) -> int:
    """Write the tasks as one JSON file (atomically); returns how many."""
    data, n = export_bytes(db, study_name, image_root=image_root,
                           include_excluded=include_excluded)
    atomic.write_bytes(Path(path), data)
    return n


def labeling_config(rubric: Rubric) -> str:
    """The Label Studio labeling config (XML) that matches the export of a rubric: the
    image, the prompt, and one control per criterion named by its key."""
    lines = ["<View>", '  <Image name="image" value="$image"/>',
             '  <Text name="prompt" value="$prompt"/>']
    for c in rubric.criteria:
        lines.append(f"  <Header value={quoteattr(f'{c.key}: {c.name}')}/>")
        if c.continuous is not None:
            step = "" if c.continuous.step is None else f' step="{c.continuous.step:g}"'
            lines.append(f'  <Number name={quoteattr(c.key)} toName="image" '
                         f'min="{c.continuous.low:g}" max="{c.continuous.high:g}"{step} '
                         'required="true"/>')
            continue
        if is_stars(c):
            lines.append(f'  <Rating name={quoteattr(c.key)} toName="image" '
                         f'maxRating="{len(c.values)}" required="true"/>')
            continue
        lines.append(f'  <Choices name={quoteattr(c.key)} toName="image" choice="single" '
                     'showInline="true" required="true">')
        lines += [f"    <Choice value={quoteattr(f'{lv.value:g}')} "
                  f"hint={quoteattr(lv.label)}/>" for lv in c.levels]
        lines.append("  </Choices>")
    return "\n".join([*lines, "</View>"]) + "\n"


def study_config(db: Database, study_name: str) -> str:
    """:func:`labeling_config` of the study's default rubric."""
    rubrics = rubric_choice.study_rubrics(study_store.get_study(db, study_name))
    if rubrics.default is None:
        raise ConcordError(f"study {study_name!r} has no default rubric to write a config for")
    return labeling_config(rubrics.default)
