"""Reader of rankings collected elsewhere (``import-rankings``; docs/cli.md).

Two layouts, by the columns (or a JSON line's fields):

- **a rank per model**, one row per ranked image: ``prompt_id``, ``rater``, ``model``,
  ``rank`` (lower is better, 1 = best; equal ranks are ties), optionally ``position``
  (the 0-based slot it was shown in) and ``sample``. Concord's export is this layout
  (rows whose ``kind`` is not ``ranking`` are skipped).
- **an ordered list**, one row per ranking: ``prompt_id``, ``rater``, ``ranking``: best
  first, as text (``flux > sdxl = dalle3 > sd15``: ``>`` separates places, ``=`` joins
  ties) or, in JSON Lines, a list whose items are a model or a list of tied models
  (``["flux", ["sdxl", "dalle3"], "sd15"]``).

Both may have ``criterion`` (default ``overall``), ``seconds``, ``time`` (ISO 8601 or
Unix seconds), ``dimension`` and ``prompt`` (its text). Ranks are stored as Concord's
screens store them: tied images share the mean of the places they take (1, 2.5, 2.5, 4).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from concord.errors import Problem, ProblemLog
from concord.importers import label_fields as fields
from concord.importers.records import Record, read_records
from concord.importers.votes import ALIASES, DEFAULT_CRITERION, DEFAULT_RATER, any_header

CHUNK_ROWS = 5_000
MAX_RANKED = 64  # images in one ranking: screens show 2 to 16, published sets up to 9
UNKNOWN_POSITION = -1  # the slot an image was shown in is not known
# (line, prompt_id, prompt, rater, criterion, model, sample, rank, position, seconds, time,
#  dimension): one ranked image.
Ranked = tuple[int, str, str | None, str, str, str, int, float, int, float | None,
               str | None, str | None]


def header_problem(header: list[str]) -> str | None:
    """What a CSV header of rankings lacks, or None."""
    have = set(header)
    if "prompt_id" in have and ({"model", "rank"} <= have or "ranking" in have):
        return None
    return ("missing columns: expected prompt_id and either model and rank (a rank per "
            "model) or ranking (an ordered list)")


def read_chunks(path: Path, log: ProblemLog, skipped: Counter[str], *, header: bool = True,
                rows: int = CHUNK_ROWS) -> Iterator[list[Ranked]]:
    """The ranked images of ``path``, a chunk at a time; problems go to ``log`` and rows
    of another ``kind`` (Concord's export) are counted in ``skipped``. ``header=False``:
    only the columns of each ranking row are checked (as for votes)."""
    chunk: list[Ranked] = []
    for line, record in read_records(path, log, header_problem if header else any_header):
        kind = record.get("kind")
        if not fields.blank(kind) and kind != "ranking":
            skipped[str(kind)[:40]] += 1
            continue
        chunk.extend(parse(str(path), line, record, log))
        if len(chunk) >= rows:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def parse(file: str, line: int, record: Record, log: ProblemLog) -> list[Ranked]:
    """The ranked images of one row (one, or a whole list), or [] after logging every
    problem of its fields."""
    before = log.count

    def get(key: str, parse_field: Any, **kw: Any) -> Any:
        value = next((record[k] for k in ALIASES.get(key, (key,))
                      if not fields.blank(record.get(k))), None)
        try:
            return parse_field(value, **kw)
        except fields.FieldError as exc:
            log.add(Problem(file, str(exc), row=line, field=key))
            return None

    listed = fields.blank(record.get("model")) and not fields.blank(record.get("ranking"))
    head = (line, get("prompt_id", fields.name),
            get("prompt", fields.name, required=False, limit=fields.MAX_TEXT, multiline=True),
            get("rater", fields.name, required=False) or DEFAULT_RATER,
            get("criterion", fields.name, required=False) or DEFAULT_CRITERION)
    tail = (get("seconds", fields.optional_number, minimum=0), get("time", fields.time),
            get("dimension", fields.name, required=False))
    if listed:
        places = get("ranking", _places)
        sample = get("sample", fields.sample)
        if log.count > before:
            return []
        return [(*head, model, sample, rank, UNKNOWN_POSITION, *tail)
                for model, rank in _mean_places(places)]
    item = (get("model", fields.name), get("sample", fields.sample),
            get("rank", fields.number), get("position", _position))
    if log.count > before:
        return []
    return [(*head, *item, *tail)]


def _position(value: Any) -> int:
    """A 0-based display slot; blank or -1 (Concord's export of an unknown slot): unknown."""
    if fields.blank(value) or value in (-1, "-1"):
        return UNKNOWN_POSITION
    return fields.sample(value)  # a 0-based slot: the same bounds as a sample index


def _places(value: Any) -> list[list[str]]:
    """Models best first, each place a list of tied models."""
    if isinstance(value, str):
        places: list[Any] = [part.split("=") for part in value.split(">")]
    elif isinstance(value, list):
        places = [p if isinstance(p, list) else [p] for p in value]
    else:
        raise fields.FieldError(f"expected a ranking like 'a > b = c' or a list, got "
                                f"{fields.shown(value)}")
    out = [[fields.name(m) for m in place] for place in places]
    names = [m for place in out for m in place]
    twice = sorted(m for m, n in Counter(names).items() if n > 1)
    if twice:
        raise fields.FieldError(f"model(s) {twice} ranked twice")
    if not 2 <= len(names) <= MAX_RANKED:
        raise fields.FieldError(f"a ranking needs 2 to {MAX_RANKED} models, got {len(names)}")
    return out  # type: ignore[return-value]


def _mean_places(places: list[list[str]]) -> list[tuple[str, float]]:
    """(model, rank): tied models share the mean of the places they take."""
    out, taken = [], 0
    for place in places:
        rank = taken + (len(place) + 1) / 2
        out.extend((m, rank) for m in place)
        taken += len(place)
    return out
