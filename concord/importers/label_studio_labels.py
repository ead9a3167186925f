"""Pairwise and ranker results of a Label Studio export (``import-ratings --format
label-studio``, beside its ratings; docs/exports.md#label-studio).

- **Pairwise** (``<Pairwise name=… toName="left,right"/>``): a result of type
  ``pairwise`` whose ``value.selected`` is ``left`` or ``right``; the task's
  ``data.model_a`` and ``data.model_b`` (or ``left_model``/``right_model``) name the two
  models, the first shown on the left (Label Studio's first ``toName``). Optional
  ``data.prompt_id`` (without it each vote is its own item), ``data.prompt``,
  ``data.sample``, ``data.dimension``.
- **Ranker** (``<List name=… value="$items"/><Ranker name=… toName=…/>``): a result of
  type ``ranker`` whose ``value.ranker`` maps one name to the item ids best first, or
  several buckets to their items (each bucket one place, tied, in the order the buckets
  come); ``data.prompt_id`` names the prompt and ``data.items`` the items: each ``id``
  with the ``model`` it shows (default: the id itself).

The criterion is the control's ``from_name``; the rater, seconds and time come from the
annotation (``completed_by``, ``lead_time``, ``created_at``). The rows are those of
:mod:`concord.importers.votes` and :mod:`concord.importers.ranking_rows`, read a task at a
time like the ratings (:mod:`concord.importers.label_studio`); a problem names the task
and the field as a JSON path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from concord.errors import Problem, ProblemLog
from concord.importers import json_stream
from concord.importers import label_fields as fields
from concord.importers import label_studio as ls
from concord.importers.ranking_rows import MAX_RANKED, UNKNOWN_POSITION
from concord.importers.safe_load import LoadError

KINDS = {"pair": "pairwise", "ranking": "ranker"}
CHUNK = 5_000


def read_chunks(path: Path, kind: str, log: ProblemLog) -> Iterator[list[tuple]]:
    """Votes (``kind="pair"``) or ranked images (``"ranking"``) of the export, a chunk at
    a time; problems go to ``log``."""
    try:
        yield from _task_chunks(path, log, lambda index, task: _rows(index, task, KINDS[kind]))
    except LoadError as exc:
        log.add(Problem(str(path), exc.message, row=exc.line))
    except OSError as exc:
        log.add(Problem(str(path), f"cannot be read: {exc.strerror or exc}"))


def _task_chunks(path: Path, log: ProblemLog,
                 rows_of: Callable[[int, Any], list[tuple]]) -> Iterator[list[tuple]]:
    """``rows_of(index, task)`` of every task, a chunk at a time; a task's problem goes to
    ``log`` (the others are still read), a problem of the file is raised (LoadError,
    OSError) and what was read of it is not yielded (the import is refused anyway)."""
    chunk: list[tuple] = []
    for index, (_, task) in enumerate(json_stream.read_array(path, ls.MAX_BYTES, "task",
                                                             ls.EXPECTED)):
        try:
            chunk.extend(rows_of(index, task))
        except ls.TaskError as bad:
            log.add(Problem(str(path), f"task {index}{ls.task_id(task)}: {bad.message}",
                            field=f"[{index}]{bad.path}"))
        if len(chunk) >= CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _rows(index: int, task: Any, kind: str) -> list[tuple]:
    if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
        return []  # the ratings reader reports a malformed task
    out: list[tuple] = []
    for a, ann in enumerate(task.get("annotations") or []):
        if not isinstance(ann, dict) or ann.get("was_cancelled") is True:
            continue
        where = f".annotations[{a}]"
        results = [(r, item) for r, item in enumerate(ann.get("result") or [])
                   if isinstance(item, dict) and item.get("type") == kind]
        if not results:
            continue
        who = (ls.rater(ann.get("completed_by"), where + ".completed_by"),
               ls.seconds(ann.get("lead_time"), where + ".lead_time"),
               _get(fields.time, ann.get("created_at"), where + ".created_at"))
        for r, item in results:
            at = f"{where}.result[{r}]"
            criterion = _get(fields.name, item.get("from_name"), at + ".from_name")
            read = _vote if kind == "pairwise" else _ranked
            out.extend(read(index, task["data"], item, at, criterion, who))
    return out


def _get(parse: Any, value: Any, where: str, **kw: Any) -> Any:
    try:
        return parse(value, **kw)
    except fields.FieldError as exc:
        raise ls.TaskError(where, str(exc)) from None


def _item(data: dict, where: str) -> tuple:
    """(prompt id, prompt text, sample, dimension) of a task."""
    return (_get(fields.name, data.get("prompt_id"), ".data.prompt_id", required=False),
            _get(fields.name, data.get("prompt"), ".data.prompt", required=False,
                 limit=fields.MAX_TEXT, multiline=True),
            _get(fields.sample, data.get("sample"), ".data.sample"),
            _get(fields.name, data.get("dimension"), ".data.dimension", required=False))


def _vote(index: int, data: dict, item: dict, at: str, criterion: str,
          who: tuple) -> list[tuple]:
    keys = ("model_a", "model_b") if data.get("model_a") is not None else \
        ("left_model", "right_model")
    a, b = (_get(fields.name, data.get(k), f".data.{k}") for k in keys)
    if a == b:
        raise ls.TaskError(f".data.{keys[1]}", f"a model judged against itself ({a!r})")
    value = item.get("value")
    selected = value.get("selected") if isinstance(value, dict) else None
    if selected not in ("left", "right"):
        raise ls.TaskError(at + ".value.selected", f"expected 'left' or 'right', got "
                                                   f"{fields.shown(selected)}")
    prompt_id, prompt, sample, dimension = _item(data, at)
    rater, seconds, time = who
    return [(index, prompt_id, prompt, a, b, "a" if selected == "left" else "b", "a", rater,
             criterion, sample, seconds, time, dimension, f"ls-task-{index}")]


def _ranked(index: int, data: dict, item: dict, at: str, criterion: str,
            who: tuple) -> list[tuple]:
    prompt_id, prompt, sample, dimension = _item(data, at)
    if prompt_id is None:
        raise ls.TaskError(".data.prompt_id", "a ranking needs the prompt's id")
    models = _models(data.get("items"))
    value = item.get("value")
    ranker = value.get("ranker") if isinstance(value, dict) else None
    if not isinstance(ranker, dict) or not ranker:
        raise ls.TaskError(at + ".value.ranker", "expected a mapping of a name or buckets to "
                                                 "item ids")
    if ranker.get("_"):
        raise ls.TaskError(at + ".value.ranker._", "some items were left unranked (in no "
                                                   "bucket)")
    places: list[list[str]] = []
    for bucket, ids in ranker.items():
        if bucket == "_":
            continue
        if not isinstance(ids, list) or not all(i in models for i in ids):
            raise ls.TaskError(f"{at}.value.ranker.{bucket}", f"expected ids of data.items "
                                                              f"{sorted(models)[:10]}")
        places += [[models[i]] for i in ids] if len(ranker) == 1 else [[models[i]
                                                                        for i in ids]]
    return _rank_rows(index, (prompt_id, prompt, who[0], criterion), places, sample,
                      (who[1], who[2], dimension), at)


def _models(items: Any) -> dict[str, str]:
    """Item id -> model of ``data.items``."""
    if not isinstance(items, list) or not items:
        raise ls.TaskError(".data.items", "expected the ranked items: a list of objects with "
                                          "an 'id' (and the 'model' each shows)")
    out: dict[str, str] = {}
    for i, entry in enumerate(items):
        ident = entry.get("id") if isinstance(entry, dict) else None
        ident = _get(fields.name, ident, f".data.items[{i}].id")
        out[ident] = _get(fields.name, entry.get("model", ident), f".data.items[{i}].model")
    return out


def _rank_rows(index: int, head: tuple, places: list[list[str]], sample: int, tail: tuple,
               at: str) -> list[tuple]:
    places = [p for p in places if p]
    names = [m for p in places for m in p]
    if len(set(names)) != len(names) or not 2 <= len(names) <= MAX_RANKED:
        raise ls.TaskError(at + ".value.ranker", f"a ranking names 2 to {MAX_RANKED} models, "
                                                 f"each once; got {names[:10]}")
    prompt_id, prompt, rater, criterion = head
    rows, taken = [], 0
    for place in places:
        rank = taken + (len(place) + 1) / 2  # tied models share the mean of their places
        rows += [(index, prompt_id, prompt, rater, criterion, m, sample, rank,
                  UNKNOWN_POSITION, *tail) for m in place]
        taken += len(place)
    return rows


def read_comments(path: Path, log: ProblemLog) -> Iterator[list[tuple]]:
    """The free-text (``textarea``) results of the export, each a comment on what the same
    annotation labelled: ``(task, unit, prompt_id, model, sample, rater, criterion,
    text)``, unit ``image`` (its scores), ``pair`` (its Pairwise result, by criterion) or
    ``prompt`` (its Ranker result), or ``none`` (the annotation has no label: counted,
    never stored). Several text results of one annotation are joined by line breaks."""
    try:
        yield from _task_chunks(path, log, _comments)
    except (LoadError, OSError):
        return  # the ratings reader reports what is wrong with the file


def _comments(index: int, task: Any) -> list[tuple]:
    if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
        return []
    data, out = task["data"], []
    for a, ann in enumerate(task.get("annotations") or []):
        if not isinstance(ann, dict) or ann.get("was_cancelled") is True:
            continue
        results = [r for r in ann.get("result") or [] if isinstance(r, dict)]
        texts = [_text(r, f".annotations[{a}].result[{i}]") for i, r in enumerate(results)
                 if r.get("type") == ls.FREE_TEXT]
        text = "\n".join(t for t in texts if t)
        if not text:
            continue
        who = ls.rater(ann.get("completed_by"), f".annotations[{a}].completed_by")
        sample = _get(fields.sample, data.get("sample"), ".data.sample")
        prompt = data.get("prompt_id")
        kinds = {r.get("type"): r.get("from_name") for r in results}
        before = len(out)
        if set(kinds) & set(ls.VALUE_KEYS):
            out.append((index, "image", prompt, data.get("model"), sample, who, None, text))
        for kind, unit in (("pairwise", "pair"), ("ranker", "prompt")):
            if kind in kinds:
                out.append((index, unit, prompt, None, sample, who, kinds[kind], text))
        if len(out) == before:  # a comment on no label: read, counted, not kept
            out.append((index, "none", prompt, None, sample, who, None, text))
    return out


def _text(result: dict, where: str) -> str:
    value = result.get("value")
    text = value.get("text") if isinstance(value, dict) else None
    if isinstance(text, str):
        text = [text]
    if not isinstance(text, list) or not all(isinstance(t, str) for t in text):
        raise ls.TaskError(where + ".value.text", "expected a list of texts")
    return _get(fields.name, "\n".join(text), where + ".value.text", required=False,
                limit=fields.MAX_COMMENT, multiline=True) or ""
