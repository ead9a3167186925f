"""Reader for ImagenHub human-rating TSVs (``<Task>/<Task>_rater{N}.tsv``).

Each file: a header ``uid<TAB><model>...``, then one row per image with a cell
``[SC, PQ]`` per model (values in {0, 0.5, 1, 2}). Files are read line by line (memory
does not grow with their size), and every bad cell is reported (file, line, column)
instead of stopping at the first.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from concord.errors import InputError, Problem, ProblemLog
from concord.importers.tables import regular_file_problem

if TYPE_CHECKING:  # pandas loads in the readers, so a bad path fails fast
    import pandas as pd

ALLOWED = frozenset({0.0, 0.5, 1.0, 2.0})
# The criteria of the frames read_imagenhub_tsv/_dir return: Concord's keys (the second is
# PQ in the files). import-ratings keeps the files' names (FILE_CRITERIA, below) and lets
# the study's rubric map the alias.
CRITERIA = ("SC", "PR")
COLUMNS = ["task", "prompt_id", "model", "rater", "criterion", "value", "row", "raw"]
_NUMBER = r"\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*"
_CELL = re.compile(rf"^\s*\[{_NUMBER},{_NUMBER}\]\s*$")
_NAME = re.compile(r"^(?P<task>.+)_(?P<rater>rater\d+)$")


class TsvError(InputError, ValueError):
    """One or more problems in ImagenHub TSV files; ``problems`` lists them (the first 50)."""


# ImagenHub task (folder) name -> the rubric written for that task (rubrics/).
TASK_RUBRICS = {
    "Text-To-Image": "imagenhub-text-to-image",
    "Text-Guided_IE": "imagenhub-text-guided-editing",
    "Mask-Guided_IE": "imagenhub-mask-guided-editing",
    "Subject-Driven_IE": "imagenhub-subject-driven-editing",
    "Multi-Subject_IG": "imagenhub-multi-subject-generation",
    "Control-Guided_IG": "imagenhub-control-guided-generation",
    "Style-Guided_IG": "imagenhub-style-guided-generation",
    "Subject-Driven_IG": "imagenhub-subject-driven-generation",
}
# The files' own names for the two numbers of a cell; the ImagenHub rubrics declare PQ as
# an alias of their criterion PR, so an import stores PR.
FILE_CRITERIA = ("SC", "PQ")
MAX_LINE_BYTES = 1 << 20
CHUNK_ROWS = 20_000

# (line, uid, model, SC, PQ, cell text as in the file)
Cell = tuple[int, str, str, float, float, str]


def _names(path: Path, task: str | None, rater: str | None) -> tuple[str, str]:
    match = _NAME.match(path.stem)
    default_task = match["task"] if match else path.parent.name
    default_rater = match["rater"] if match else path.stem
    return task or default_task, rater or default_rater


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


def iter_cells(path: Path, log: ProblemLog) -> Iterator[Cell]:
    """Every valid cell of one rating TSV, read line by line; problems go to ``log``.

    Reported (file, line number, column): not a regular file, empty file, not UTF-8, no
    ``uid`` column, duplicate or empty header names, ragged rows, blank lines inside the
    table, duplicate or empty uids, malformed cells, values outside {0, 0.5, 1, 2}.
    """
    problem = regular_file_problem(path)
    if problem is not None:
        log.add(problem)
        return
    state = _State(str(path), log)
    with path.open("rb") as f:
        for number, raw in enumerate(iter(functools.partial(f.readline, MAX_LINE_BYTES), b""),
                                     start=1):
            text = state.decode(number, raw)
            if text is not None:
                yield from state.line(number, text)
    if state.header is None and not state.stopped:
        log.add(Problem(str(path), "empty file: expected a header 'uid<TAB>model...'", row=1))


class _State:
    """What reading one file has seen so far."""

    def __init__(self, file: str, log: ProblemLog) -> None:
        self.file, self.log = file, log
        self.header: list[str] | None = None
        self.stopped = False
        self.blank: list[int] = []
        self.seen: dict[str, int] = {}

    def decode(self, number: int, raw: bytes) -> str | None:
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            column = raw[: exc.start].count(b"\t")
            self.log.add(Problem(self.file, f"not UTF-8 text (byte {raw[exc.start]:#04x} at "
                                            f"offset {exc.start} of the line)", row=number,
                                 field=f"column {column + 1}"))
            self.stopped = True
        else:
            # After a problem that stops reading, only the encoding is still checked.
            return None if self.stopped else text.removesuffix("\n").removesuffix("\r")
        return None

    def line(self, number: int, text: str) -> Iterator[Cell]:
        if not text.strip():
            self.blank.append(number)
            return
        for gap in self.blank if self.header is not None else ():
            self.log.add(Problem(self.file, "blank line inside the table", row=gap))
        self.blank = []
        if self.header is None:  # the header is line 1, even when that line is blank
            self.header = text.split("\t") if number == 1 else [""]
            if not _check_header(Path(self.file), self.header, self.log):
                self.stopped = True  # rows cannot be read without a header
            return
        yield from _read_row(self.file, self.header, number, text, self.seen, self.log)


def _check_header(path: Path, header: list[str], log: ProblemLog) -> bool:
    before = log.count
    if header[0].strip() != "uid":
        where = "uid" if "uid" not in header else header[0]
        log.add(Problem(str(path), f"the first column must be 'uid', found {header[0]!r}",
                        row=1, field=where))
    first: dict[str, int] = {}  # header.index() per column was quadratic in the models
    for k, name in enumerate(header[1:], start=2):
        if not name.strip():
            log.add(Problem(str(path), "empty model name in the header", row=1,
                            field=f"column {k}"))
        elif first.setdefault(name, k) != k:
            log.add(Problem(str(path), f"model {name!r} appears twice in the header", row=1,
                            field=name))
    if len(header) < 2:
        log.add(Problem(str(path), "no model columns after 'uid'", row=1, field="uid"))
    return log.count == before


def _read_row(file: str, header: list[str], number: int, line: str, seen: dict[str, int],
              log: ProblemLog) -> Iterator[Cell]:
    cells = line.split("\t")
    if len(cells) != len(header):
        missing = header[len(cells)] if len(cells) < len(header) else "(extra cells)"
        log.add(Problem(file, f"{len(cells)} cells, the header has {len(header)}",
                        row=number, field=missing))
    uid = _unneutralised(cells[0].strip())
    if not uid:
        log.add(Problem(file, "empty uid", row=number, field="uid"))
    elif uid in seen:
        log.add(Problem(file, f"duplicate uid {uid!r} (first on line {seen[uid]})",
                        row=number, field="uid"))
    else:
        seen[uid] = number
    for model, text in zip(header[1:], cells[1:], strict=False):
        parsed = _parse_cell(text)
        if isinstance(parsed, str):
            log.add(Problem(file, parsed, row=number, field=model))
        else:
            yield number, uid, _unneutralised(model), parsed[0], parsed[1], text


def _unneutralised(text: str) -> str:
    """A cell as it was before Concord's export guarded it against spreadsheet formulas."""
    if text.startswith("'"):
        from concord.export import unneutralise  # loads pandas; rarely needed

        return unneutralise(text)
    return text


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
        Columns ``task, prompt_id (uid), model, rater, criterion ("SC"/"PR": Concord's
        keys; the files call the second number PQ), value, row (1-based data row), raw (the
        cell text exactly as in the file)``; two rows per cell.

    Raises:
        TsvError: Listing the problems (see :func:`iter_cells`).
    """
    path = Path(path)
    log = ProblemLog()
    frame = _frame(path, *_names(path, task, rater), log)
    if log:
        raise TsvError(log.shown, total=log.count)
    return frame


def _frame(path: Path, task: str, rater: str, log: ProblemLog) -> pd.DataFrame:
    import pandas as pd

    records = [(uid, model, criterion, value, number - 1, text)
               for number, uid, model, sc, pq, text in iter_cells(path, log)
               for criterion, value in zip(CRITERIA, (sc, pq), strict=True)]
    out = pd.DataFrame(records, columns=["prompt_id", "model", "criterion", "value", "row", "raw"])
    out.insert(0, "task", task)
    out.insert(3, "rater", rater)
    return out.astype({"value": float, "row": int})


def rating_files(root: Path) -> list[Path]:
    """The ``<root>/<Task>/<Task>_rater{N}.tsv`` files under a folder, sorted.

    Raises:
        TsvError: there is none.
    """
    paths = sorted(p for p in Path(root).glob("*/*.tsv") if _NAME.match(p.stem))
    if not paths:
        raise TsvError([Problem(str(root), "no <Task>/<Task>_rater<N>.tsv files found")])
    return paths


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
    import pandas as pd

    log = ProblemLog()
    frames = [_frame(p, *_names(p, None, None), log) for p in rating_files(root)]
    if log:
        raise TsvError(log.shown, total=log.count)
    return pd.concat(frames, ignore_index=True)


def read_rating_chunks(path: Path, log: ProblemLog,
                       rows: int = CHUNK_ROWS) -> Iterator[tuple[list, ...]]:
    """Rows of one TSV for ``import-ratings``, as the columns of
    :data:`concord.importers.ratings_csv.Columns`: prompt ``<Task>/<uid>``, sample 0, rater
    ``rater<N>``, criteria as in the file (``SC``, ``PQ``), dimension the task."""
    task, rater = _names(path, None, None)
    out: list[tuple] = []
    for number, uid, model, sc, pq, _ in iter_cells(path, log):
        key = f"{task}/{uid}"
        out.append((number, key, model, 0, rater, FILE_CRITERIA[0], sc, None, task))
        out.append((number, key, model, 0, rater, FILE_CRITERIA[1], pq, None, task))
        if len(out) >= rows:
            yield tuple(map(list, zip(*out, strict=True)))
            out = []
    if out:
        yield tuple(map(list, zip(*out, strict=True)))
