"""Reader of pairwise votes collected elsewhere (``import-pairs``; docs/cli.md).

Two layouts, by the columns (or a JSON line's fields):

- **arena style**: ``model_a``, ``model_b``, ``outcome`` (or ``winner``) with ``a``/``b``
  (also ``model_a``/``model_b``, as arena logs write them), ``tie`` or ``both_bad`` (also
  ``both bad``, ``bothbad``, ``tie (bothbad)``); ``shown_left`` says which model was on
  the left (``a``, ``b`` or the model's name; default ``a``, as arena screens show it);
- **Concord's export**: ``left_model``, ``right_model``, ``outcome`` with ``left``,
  ``right``, ``tie`` or ``both_bad`` (rows whose ``kind`` is not ``pair`` are skipped);
  GenAI-Arena's and GenAI-Bench's votes are this layout with ``vote_type`` in
  ``leftvote``, ``rightvote``, ``tievote`` or ``bothbad_vote``.

Optional: ``prompt_id`` (without it each vote is its own item), ``prompt`` (its text),
``rater`` (or ``judge``; default ``anonymous``), ``criterion`` (default ``overall``),
``sample``, ``seconds``, ``time`` (or ``tstamp``/``timestamp``: ISO 8601 or Unix
seconds), ``dimension``, ``vote_id`` (or ``question_id``). Outcomes are read without
regard to case or surrounding spaces.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from concord.errors import Problem, ProblemLog
from concord.importers import label_fields as fields
from concord.importers.records import Record, read_records

CHUNK_ROWS = 5_000
DEFAULT_RATER = "anonymous"
DEFAULT_CRITERION = "overall"
OUTCOMES = {"a": "a", "model_a": "a", "b": "b", "model_b": "b", "tie": "tie",
            "both_bad": "both_bad", "both bad": "both_bad", "bothbad": "both_bad",
            "tie (bothbad)": "both_bad", "left": "left", "right": "right",
            # FastChat's vote types, as GenAI-Arena logs them and GenAI-Bench publishes
            # them (``vote_type`` beside ``left_model``/``right_model``): screen sides.
            "leftvote": "left", "rightvote": "right", "tievote": "tie",
            "bothbad_vote": "both_bad", "bothbadvote": "both_bad"}
ALIASES = {"outcome": ("outcome", "winner", "vote_type"), "rater": ("rater", "judge"),
           "time": ("time", "tstamp", "timestamp"), "vote_id": ("vote_id", "question_id")}
# (line, prompt_id, prompt, model_a, model_b, outcome, left, rater, criterion, sample,
#  seconds, time, dimension, vote_id): outcome is a/b/tie/both_bad, left is a or b.
Vote = tuple[int, str | None, str | None, str, str, str, str, str, str, int, float | None,
             str | None, str | None, str | None]


def header_problem(header: list[str]) -> str | None:
    """What a CSV header of votes lacks, or None."""
    have = set(header)
    models = {"model_a", "model_b"} <= have or {"left_model", "right_model"} <= have
    outcome = any(a in have for a in ALIASES["outcome"])
    if models and outcome:
        return None
    return ("missing columns: expected model_a, model_b and outcome (or winner), or "
            "left_model, right_model and outcome (or vote_type)")


def read_chunks(path: Path, log: ProblemLog, skipped: Counter[str], *, header: bool = True,
                rows: int = CHUNK_ROWS) -> Iterator[list[Vote]]:
    """The valid votes of ``path``, a chunk at a time; problems go to ``log`` and rows of
    another ``kind`` (Concord's export) are counted in ``skipped``. ``header=False``: the
    file's columns are not checked up front (a file of several kinds of labels may have no
    pair row), only those of each pair row."""
    chunk: list[Vote] = []
    for line, record in read_records(path, log, header_problem if header else any_header):
        kind = record.get("kind")
        if not fields.blank(kind) and kind != "pair":
            skipped[str(kind)[:40]] += 1
            continue
        vote = parse(str(path), line, record, log)
        if vote is not None:
            chunk.append(vote)
            if len(chunk) >= rows:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def any_header(header: list[str]) -> None:
    """Accept every header (the columns are checked row by row)."""
    return None


def _get(record: Record, key: str) -> Any:
    for name in ALIASES.get(key, (key,)):
        value = record.get(name)
        if not fields.blank(value):
            return value
    return None


def _column(record: Record, key: str) -> str:
    """The column a field was read from (``winner`` or ``vote_type`` for ``outcome``)."""
    names = ALIASES.get(key, (key,))
    return next((n for n in names if not fields.blank(record.get(n))), names[0])


def parse(file: str, line: int, record: Record, log: ProblemLog) -> Vote | None:
    """One vote, or None after logging every problem of its fields."""
    before = log.count

    def get(key: str, parse_field: Any, **kw: Any) -> Any:
        try:
            return parse_field(_get(record, key), **kw)
        except fields.FieldError as exc:
            log.add(Problem(file, str(exc), row=line, field=_column(record, key)))
            return None

    screen = not fields.blank(record.get("left_model"))
    a_key, b_key = ("left_model", "right_model") if screen else ("model_a", "model_b")
    model_a, model_b = get(a_key, fields.name), get(b_key, fields.name)
    outcome = get("outcome", _outcome)
    left = "a" if screen else get("shown_left", _side, models=(model_a, model_b))
    out = (line, get("prompt_id", fields.name, required=False),
           get("prompt", fields.name, required=False, limit=fields.MAX_TEXT, multiline=True),
           model_a, model_b, outcome, left,
           get("rater", fields.name, required=False) or DEFAULT_RATER,
           get("criterion", fields.name, required=False) or DEFAULT_CRITERION,
           get("sample", fields.sample), get("seconds", fields.optional_number, minimum=0),
           get("time", fields.time), get("dimension", fields.name, required=False),
           get("vote_id", fields.name, required=False))
    if log.count > before:
        return None
    if model_a == model_b:
        log.add(Problem(file, f"a model judged against itself ({model_a!r}): a vote needs "
                              "two different models", row=line, field=b_key))
        return None
    if outcome in ("left", "right"):  # a screen side: the model that was shown there
        shown = "a" if (outcome == "left") == (left == "a") else "b"
        out = (*out[:5], shown, *out[6:])
    return out


def _outcome(value: Any) -> str:
    if fields.blank(value):
        raise fields.FieldError("empty value")
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text not in OUTCOMES:
        raise fields.FieldError(f"{fields.shown(value)} is not an outcome: use a, b, tie or "
                                "both_bad (model_a, model_b and 'tie (bothbad)' of arena logs,"
                                " left and right, and leftvote, rightvote, tievote and "
                                "bothbad_vote are read too)")
    return OUTCOMES[text]


def _side(value: Any, *, models: tuple[str | None, str | None]) -> str:
    """Which of the two was shown on the left: ``a``/``b`` or one of the model names."""
    if fields.blank(value):
        return "a"
    text = value.strip() if isinstance(value, str) else None
    if text is not None and text.lower() in ("a", "b"):
        return text.lower()
    if text is not None and text in models:
        return "a" if text == models[0] else "b"
    raise fields.FieldError(f"{fields.shown(value)} is neither a nor b nor one of the two "
                            "models")
