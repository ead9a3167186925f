"""Reader for ImagenHub human-rating TSVs (``<Task>/<Task>_rater{N}.tsv``).

Each file: a header ``uid<TAB><model>...``, then one row per image with a cell
``[SC, PR]`` per model (values in {0, 0.5, 1, 2}). The reader returns a tidy frame and
reports EVERY bad cell at once (file, line, column) instead of stopping at the first.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from concord.errors import InputError, Problem

ALLOWED = frozenset({0.0, 0.5, 1.0, 2.0})
CRITERIA = ("SC", "PR")
COLUMNS = ["task", "prompt_id", "model", "rater", "criterion", "value", "row", "raw"]
_NUMBER = r"\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*"
_CELL = re.compile(rf"^\s*\[{_NUMBER},{_NUMBER}\]\s*$")
_NAME = re.compile(r"^(?P<task>.+)_(?P<rater>rater\d+)$")


class TsvError(InputError, ValueError):
    """One or more problems in ImagenHub TSV files; ``problems`` lists them all."""


def _names(path: Path, task: str | None, rater: str | None) -> tuple[str, str]:
    match = _NAME.match(path.stem)
    default_task = match["task"] if match else path.parent.name
    default_rater = match["rater"] if match else path.stem
    return task or default_task, rater or default_rater


def _decode(path: Path, data: bytes, problems: list[Problem]) -> list[str] | None:
    """Split into lines and decode each as UTF-8, reporting every undecodable line."""
    raw_lines = data.split(b"\n")
    lines: list[str] = []
    before = len(problems)
    for number, raw in enumerate(raw_lines, start=1):
        try:
            lines.append(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
        except UnicodeDecodeError as exc:
            column = raw[: exc.start].count(b"\t")
            problems.append(Problem(str(path), f"not UTF-8 text (byte {raw[exc.start]:#04x} at "
                                    f"offset {exc.start} of the line)", row=number,
                                    field=f"column {column + 1}"))
            lines.append("")
    return None if len(problems) > before else [ln.removesuffix("\r") for ln in lines]


def _parse_cell(text: str) -> tuple[float, float] | str:
    """The two values of a cell, or a message saying what is wrong."""
    match = _CELL.match(text)
    if not match:
        what = f"malformed cell {text!r}" if text.strip() else "empty cell"
        return f"{what}: expected '[SC, PR]', e.g. '[0.5, 1]'"
    values = (float(match[1]), float(match[2]))
    bad = [v for v in values if v not in ALLOWED]
    if bad:
        return f"value {bad[0]:g} in {text!r} is not one of 0, 0.5, 1, 2"
    return values


def read_imagenhub_tsv(
    path: Path, *, task: str | None = None, rater: str | None = None
) -> pd.DataFrame:
    """Read one ImagenHub rating TSV into a tidy frame.

    Args:
        path: The ``.tsv`` file.
        task: Task name; default the part of the file name before ``_rater{N}``, else the
            parent directory's name.
        rater: Rater name; default ``rater{N}`` from the file name, else the file stem.

    Returns:
        Columns ``task, prompt_id (uid), model, rater, criterion ("SC"/"PR"), value,
        row (1-based data row), raw (the cell text exactly as in the file)``; two rows
        per cell.

    Raises:
        TsvError: Listing every problem (file, line number, column): empty file, not
            UTF-8, no ``uid`` column, duplicate or empty header names, ragged rows,
            duplicate or empty uids, malformed cells, values outside {0, 0.5, 1, 2}.
        FileNotFoundError: ``path`` does not exist.
    """
    path = Path(path)
    problems: list[Problem] = []
    frame = _read(path, *_names(path, task, rater), problems)
    if problems:
        raise TsvError(problems)
    return frame


def _read(path: Path, task: str, rater: str, problems: list[Problem]) -> pd.DataFrame:
    lines = _decode(path, path.read_bytes(), problems)
    if lines is None:
        return pd.DataFrame(columns=COLUMNS)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        problems.append(Problem(str(path), "empty file: expected a header 'uid<TAB>model...'",
                                row=1))
        return pd.DataFrame(columns=COLUMNS)
    header = lines[0].split("\t")
    if not _check_header(path, header, problems):
        return pd.DataFrame(columns=COLUMNS)
    records: list[tuple] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines[1:], start=2):
        records.extend(_read_row(path, header, number, line, seen, problems))
    out = pd.DataFrame(records, columns=["prompt_id", "model", "criterion", "value", "row", "raw"])
    out.insert(0, "task", task)
    out.insert(3, "rater", rater)
    return out.astype({"value": float, "row": int})


def _check_header(path: Path, header: list[str], problems: list[Problem]) -> bool:
    before = len(problems)
    if header[0].strip() != "uid":
        where = "uid" if "uid" not in header else header[0]
        problems.append(Problem(str(path), f"the first column must be 'uid', found "
                                f"{header[0]!r}", row=1, field=where))
    for k, name in enumerate(header[1:], start=2):
        if not name.strip():
            problems.append(Problem(str(path), "empty model name in the header", row=1,
                                    field=f"column {k}"))
        elif header.index(name) != k - 1:
            problems.append(Problem(str(path), f"model {name!r} appears twice in the header",
                                    row=1, field=name))
    if len(header) < 2:
        problems.append(Problem(str(path), "no model columns after 'uid'", row=1, field="uid"))
    return len(problems) == before


def _read_row(path: Path, header: list[str], number: int, line: str,
              seen: dict[str, int], problems: list[Problem]) -> list[tuple]:
    file = str(path)
    if not line.strip():
        problems.append(Problem(file, "blank line inside the table", row=number))
        return []
    cells = line.split("\t")
    if len(cells) != len(header):
        missing = header[len(cells)] if len(cells) < len(header) else "(extra cells)"
        problems.append(Problem(file, f"{len(cells)} cells, the header has {len(header)}",
                                row=number, field=missing))
    uid = cells[0].strip()
    if not uid:
        problems.append(Problem(file, "empty uid", row=number, field="uid"))
    elif uid in seen:
        problems.append(Problem(file, f"duplicate uid {uid!r} (first on line {seen[uid]})",
                                row=number, field="uid"))
    else:
        seen[uid] = number
    out = []
    for model, text in zip(header[1:], cells[1:], strict=False):
        parsed = _parse_cell(text)
        if isinstance(parsed, str):
            problems.append(Problem(file, parsed, row=number, field=model))
            continue
        for criterion, value in zip(CRITERIA, parsed, strict=True):
            out.append((uid, model, criterion, value, number - 1, text))
    return out


def read_imagenhub_dir(root: Path) -> pd.DataFrame:
    """Read every ``<root>/<Task>/<Task>_rater{N}.tsv`` into one tidy frame.

    Returns:
        The concatenation of :func:`read_imagenhub_tsv` over the files, sorted by path.

    Raises:
        TsvError: Problems of ALL files together, or no rating file under ``root``.
        FileNotFoundError: ``root`` is not a directory.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"not a directory: {root}")
    paths = sorted(p for p in root.glob("*/*.tsv") if _NAME.match(p.stem))
    if not paths:
        raise TsvError([Problem(str(root), "no <Task>/<Task>_rater<N>.tsv files found")])
    problems: list[Problem] = []
    frames = [_read(p, *_names(p, None, None), problems) for p in paths]
    if problems:
        raise TsvError(problems)
    return pd.concat(frames, ignore_index=True)
