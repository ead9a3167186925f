"""A manifest's rubric given as a file: ``rubric: my-scale.yaml`` or ``rubrics: {dimension:
path}`` (a value with a ``/`` or ending in ``.yaml``/``.yml``), read relative to the
manifest.

Each file is checked like the packaged rubrics (:func:`concord.rubrics.copies.read_file`)
and its text goes into the study (``settings.rubric_files``), so the study keeps rating on
the rubric it was imported with after the file moves or changes; the manifest then names
the rubric by its id (the file's name).
"""

from __future__ import annotations

from pathlib import Path

from concord.errors import Problem
from concord.importers.manifest import Manifest
from concord.rubrics import RubricError, copies


def resolve(m: Manifest) -> tuple[dict[str, str], list[Problem]]:
    """Read the rubric files the manifest names and put their ids in their place.

    Returns the texts to keep (rubric id -> text) and a problem per unusable file.
    """
    files: dict[str, str] = {}
    problems: list[Problem] = []
    if m.rubric is not None and copies.is_path(m.rubric):
        m.rubric = _read(m, m.rubric, "rubric", files, problems)
    for dimension, value in list(m.rubrics.items()):
        if copies.is_path(value):
            rubric_id = _read(m, value, f"rubrics.{dimension}", files, problems)
            if rubric_id is None:
                del m.rubrics[dimension]  # its problem is reported; nothing else to check
            else:
                m.rubrics[dimension] = rubric_id
    return files, problems


def _read(m: Manifest, value: str, where: str, files: dict[str, str],
          problems: list[Problem]) -> str | None:
    """The id of the rubric file ``value`` (its text added to ``files``), or None with the
    problem recorded."""
    path = Path(value) if Path(value).is_absolute() else m.path.parent / value
    try:
        rubric, text = copies.read_file(path)
    except FileNotFoundError as exc:
        problems.append(Problem(str(m.path), str(exc), field=where))
        return None
    except RubricError as exc:
        first = exc.problems[0]
        more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        problems.append(Problem(str(m.path), f"rubric file {path}: {first.key or 'file'}: "
                                f"{first.message}{more}", field=where))
        return None
    if copies.clashes(rubric.id, text):
        problems.append(Problem(str(m.path), f"rubric file {path} has the id {rubric.id!r} "
                                "of a packaged rubric but other contents; rename the file "
                                "(its id is its name)", field=where))
        return None
    if files.get(rubric.id, text) != text:
        problems.append(Problem(str(m.path), f"two different rubric files are named "
                                f"{rubric.id!r}; rename one (a rubric's id is its file name)",
                                field=where))
        return None
    files[rubric.id] = text
    return rubric.id
