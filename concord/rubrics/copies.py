"""Rubrics given as a file (``import-ratings --rubric path/to/rubric.yaml``, a
manifest's ``rubric: path/to/rubric.yaml``), kept with the study as text so that a moved
or edited file cannot change the study later.

The file is checked exactly like the packaged rubrics (bounded YAML, every rule of
:func:`concord.rubrics.checks.check`; its ``id`` is its file name). The study keeps the
file's text (``settings.rubric_files``: id -> text); the study's pages, imports and
statistics read the rubric from that copy.
"""

from __future__ import annotations

import functools
from pathlib import Path

from concord.rubrics.checks import RubricError, RubricProblem, check
from concord.rubrics.model import Rubric, _build

SUFFIXES = (".yaml", ".yml")


def is_path(text: str) -> bool:
    """Whether a ``--rubric`` value names a file rather than a rubric id."""
    return "/" in text or "\\" in text or text.lower().endswith(SUFFIXES)


def read_file(path: Path) -> tuple[Rubric, str]:
    """The rubric of a file and the text to keep, checked like a packaged rubric.

    Raises:
        FileNotFoundError: No such file.
        RubricError: Anything wrong with it (not a regular file, too large, bad YAML, a
            rule broken), every problem named with the file and the key.
    """
    from concord.importers.safe_load import MAX_DOCUMENT_BYTES
    from concord.importers.tables import TableError, read_text, regular_file_problem

    missing = regular_file_problem(path)
    if missing is not None and missing.message == "file not found":
        raise FileNotFoundError(f"rubric file not found: {path.absolute()}")
    try:
        text = read_text(path, MAX_DOCUMENT_BYTES)
    except TableError as e:  # not a regular file, too large, not UTF-8
        raise RubricError([RubricProblem(path, "", p.message) for p in e.problems]) from e
    return from_text(text, path.stem, label=path), text


def clashes(rubric_id: str, text: str) -> bool:
    """Whether a rubric file takes the id of a packaged rubric (``rubrics/``) with other
    contents (the study could not tell the two apart)."""
    from concord.rubrics.model import DEFAULT_RUBRICS_DIR

    packaged = DEFAULT_RUBRICS_DIR / f"{rubric_id}.yaml"
    return packaged.is_file() and packaged.read_text(encoding="utf-8") != text


def from_text(text: str, rubric_id: str, *, label: Path | None = None) -> Rubric:
    """A rubric from the text of its file (``rubric_id``: the file's stem).

    Raises:
        RubricError: Bad YAML or a broken rule.
    """
    return _parsed(text, rubric_id, str(label or Path(f"{rubric_id}.yaml")))


@functools.lru_cache(maxsize=32)
def _parsed(text: str, rubric_id: str, label: str) -> Rubric:
    from concord.importers.safe_load import LoadError, load_yaml

    path = Path(label)
    if path.stem != rubric_id:  # check() compares the id with the file's stem
        path = Path(f"{rubric_id}.yaml")
    try:
        data = load_yaml(text)
    except LoadError as e:
        where = f" (line {e.line})" if e.line else ""
        raise RubricError([RubricProblem(path, "", f"invalid YAML: "
                                         f"{e.message.removeprefix('malformed YAML: ')}"
                                         f"{where}")]) from e
    if not isinstance(data, dict):
        raise RubricError([RubricProblem(path, "", "the root must be a mapping")])
    problems = check(data, path)
    if problems:
        raise RubricError(problems)
    return _build(data)
