"""Which rubric judges a rating: the study's rubric (a file or an inline scale), per
dimension where the study says so; at import, chosen, declared or inferred from the rows.

The rating screen asks :func:`rubric_for` (or :func:`rubric_for_image`); imports check
every row against the same answer.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from concord.errors import ConcordError, RatingError
from concord.rubrics import Rubric, RubricError, copies, list_rubrics
from concord.rubrics.inline import (
    describe,
    from_settings,
    inline_rubric,
    parse_criteria,
    to_settings,
)
from concord.services.labelling import common
from concord.store import items
from concord.store.studies import Study


@dataclass(frozen=True)
class StudyRubrics:
    """A study's default rubric and the rubrics of dimensions that have their own."""

    default: Rubric | None
    by_dimension: Mapping[str, Rubric] = field(default_factory=dict)

    def for_dimension(self, dimension: str | None) -> Rubric | None:
        """The rubric of ``dimension`` (the default when it has none of its own)."""
        if dimension is not None and dimension in self.by_dimension:
            return self.by_dimension[dimension]
        return self.default


@dataclass(frozen=True)
class Choice:
    """The rubric(s) an import uses and how the study records them."""

    rubrics: StudyRubrics
    rubric_id: str | None  # ``studies.rubric`` (None for an inline scale)
    settings: dict[str, Any]  # ``criteria`` (inline scale) and ``rubrics`` (per dimension)
    note: str = ""

    def same_as(self, study: Study) -> bool:
        """Whether the study already records exactly this choice."""
        mine = {k: v for k, v in self.settings.items() if v}
        theirs = {k: study.settings[k] for k in ("criteria", "rubrics") if study.settings.get(k)}
        return self.rubric_id == study.rubric and mine == theirs


def study_rubrics(study: Study) -> StudyRubrics:
    """The rubrics recorded for a study (``rubric``, ``settings.criteria``, ``.rubrics``)."""
    settings = study.settings
    default = None
    if settings.get("criteria"):
        default = inline_rubric(from_settings(settings["criteria"]))
    elif study.rubric:
        default = common.study_rubric(study, study.rubric)
    per = {str(d): common.study_rubric(study, str(r))
           for d, r in (settings.get("rubrics") or {}).items()}
    if not settings.get("checklist"):
        # The checklist is the study's choice (manifest ``checklist: true``): a study
        # replicating ImagenHub's direct SC/PR scores rates the same rubric without it.
        default = default and default.without_checklists()
        per = {d: r.without_checklists() for d, r in per.items()}
    return StudyRubrics(default, per)


def rubric_for(study: Study, dimension: str | None = None) -> Rubric:
    """The rubric an image of ``dimension`` is rated on in this study.

    Raises:
        RatingError: the study has no rubric (a scores-only study before any ratings).
    """
    rubric = study_rubrics(study).for_dimension(dimension)
    if rubric is None:
        raise RatingError(f"study {study.name!r} has no rubric")
    return rubric


def rubric_for_image(db: Database, study: Study, image_id: int) -> Rubric:
    """The rubric of one image (by its prompt's dimension)."""
    return rubric_for(study, items.image(db, image_id).dimension)


def explicit(rubric_args: Iterable[str], criteria_args: Iterable[str]) -> Choice | None:
    """The choice given by ``--rubric ID`` / ``--rubric DIMENSION=ID`` and ``--criteria``;
    an ID may be the path of a rubric file, whose text the study keeps
    (``settings.rubric_files``).

    Raises:
        ConcordError: an unknown or ranking rubric, a bad rubric file, two defaults, a
            dimension twice, or a bad inline scale (one line each).
    """
    rubric_args, criteria_args = list(rubric_args), list(criteria_args)
    if not rubric_args and not criteria_args:
        return None
    default: Rubric | None = None
    per: dict[str, Rubric] = {}
    files: dict[str, str] = {}  # rubric id -> text of a rubric given as a file
    for arg in rubric_args:
        dimension, _, rid = arg.rpartition("=")
        if dimension in per or (not dimension and (default or criteria_args)):
            twice = f"dimension {dimension!r}" if dimension else "the default rubric"
            raise ConcordError(f"--rubric {arg!r}: {twice} is given twice (by --rubric or "
                               "--criteria)")
        chosen = load_score_rubric(rid, files)
        if dimension:
            per[dimension] = chosen
        else:
            default = chosen
    settings: dict[str, Any] = {"rubrics": {d: r.id for d, r in per.items()},
                                "rubric_files": files}
    note = f"rubric {default.id}" if default else "no default rubric"
    if criteria_args:
        scale = parse_criteria(criteria_args)
        default, settings["criteria"] = inline_rubric(scale), to_settings(scale)
        note = f"inline scale {describe(scale)}"
    rubric_id = None if criteria_args or default is None else default.id
    return Choice(StudyRubrics(default, per), rubric_id, settings, note=f"{note} (given)")


def load_score_rubric(rubric_id: str, files: dict[str, str] | None = None) -> Rubric:
    """A rubric that rates on a scale, by id, or by the path of a rubric file (its text
    goes into ``files``); one clear line when there is none."""
    known = list_rubrics()
    if copies.is_path(rubric_id):
        rubric = _file_rubric(Path(rubric_id), known, files)
    elif rubric_id not in known:
        close = difflib.get_close_matches(rubric_id, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConcordError(f"unknown rubric {rubric_id!r} ({hint}rubrics: {', '.join(known)};"
                           " or give the path of a rubric file)")
    else:
        rubric = common.rubric(rubric_id)
    if rubric.is_ranking:
        raise ConcordError(f"rubric {rubric_id!r} is for rankings; ratings need a rubric with"
                           " a scale")
    return rubric


def _file_rubric(path: Path, known: list[str], files: dict[str, str] | None) -> Rubric:
    """A rubric file given by path, checked like the packaged ones; its id (the file's
    name) may not be a packaged rubric's unless the texts are the same."""
    try:
        rubric, text = copies.read_file(path)
    except FileNotFoundError as exc:
        raise ConcordError(str(exc)) from None
    except RubricError as exc:
        first = exc.problems[0]
        more = f" (and {len(exc.problems) - 1} more problem(s))" if len(exc.problems) > 1 else ""
        raise ConcordError(f"rubric file {path}: {first.key or 'file'}: {first.message}{more};"
                           " check it with `validate-rubrics --dir` on its folder") from None
    if rubric.id in known and copies.clashes(rubric.id, text):
        raise ConcordError(f"rubric file {path} has the id {rubric.id!r} of a packaged rubric "
                           "but other contents; rename the file (its id is its name)")
    if files is not None:
        files[rubric.id] = text
    return rubric


def score_rubrics() -> list[Rubric]:
    """Every valid rubric with a scale in ``rubrics/`` (invalid files are skipped: see
    ``validate-rubrics``)."""
    out = []
    for rid in list_rubrics():
        try:
            rubric = common.rubric(rid)
        except (ConcordError, OSError):
            continue
        if not rubric.is_ranking:
            out.append(rubric)
    return out
