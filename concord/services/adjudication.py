"""Adjudication: the items raters disagree on most, every answer side by side, and a
researcher's adjudicated value kept apart from the raw labels.

Adjudicated values never change a rating, ranking or pair judgment, nor the statistics
(``concord stats`` and the dashboard read the raw labels only); they are exported on
their own (``concord export --format adjudications``, and the Hugging Face export's
``adjudications`` configuration).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from sqlite_utils import Database

from concord.errors import ConcordError, NotFoundError
from concord.services import rubric_choice
from concord.services.exports import labels
from concord.services.report import study as report
from concord.stats import disagreement
from concord.store import adjudications as store
from concord.store import studies as study_store
from concord.store.db import audit, transaction

UNITS = {"score": "image", "rank": "prompt", "pair": "pair"}  # view → stored unit
PAIR_OUTCOMES = ("a", "b", "tie", "both_bad")


def queue(db: Database, study_name: str, view: str, *, criterion: str | None = None,
          limit: int = 50, min_raters: int = 2) -> list[dict]:
    """The most disagreed items of ``view`` (``score``, ``rank`` or ``pair``), each with
    its statistics, ``answers`` (one per rater, sorted by rater) and ``adjudicated`` (the
    current adjudicated value, or None). Excluded raters are left out.

    Raises:
        ConcordError: an unknown view or a limit below 1.
        NotFoundError: no such study.
    """
    if view not in UNITS:
        raise ConcordError(f"unknown view {view!r} (use score, rank or pair)")
    if limit < 1:
        raise ConcordError(f"limit must be at least 1, got {limit}")
    study = study_store.get_study(db, study_name)
    frame, table = _ranked(db, study_name, view, min_raters)
    if criterion is not None:
        table = table[table["criterion"] == criterion]
    table = table.head(limit)
    done = {(a["item_id"], a["criterion"]): a for a in store.current(db, study.id)
            if a["unit"] == UNITS[view]}
    return [_item(db, study, view, row, frame, done) for row in table.to_dict("records")]


def _ranked(db: Database, study: str, view: str, min_raters: int
            ) -> tuple[pd.DataFrame, pd.DataFrame]:
    if view == "score":
        frame = labels.ratings(db, study)
        return frame, disagreement.score_disagreement(frame, min_raters=min_raters)
    if view == "rank":
        frame = labels.rankings(db, study)
        return frame, disagreement.rank_disagreement(frame, min_raters=min_raters)
    frame = labels.pair_judgments(db, study)
    return frame, disagreement.pair_disagreement(frame, min_raters=min_raters)


def _item(db: Database, study: study_store.Study, view: str, row: dict, frame: pd.DataFrame,
          done: dict) -> dict:
    crit = row["criterion"]
    if view == "score":
        part = frame[(frame["image_id"] == row["image_id"]) & (frame["criterion"] == crit)]
        answers = [{"rater": r, "answer": f"{v:g}"} for r, v in zip(
            part["rater"], part["value"], strict=True)]
        paths = [_path(db, study, row["image_id"])]
        item_id = int(row["image_id"])
    elif view == "rank":
        part = frame[(frame["prompt_id"] == row["prompt_id"]) & (frame["criterion"] == crit)]
        answers = [{"rater": r, "answer": " > ".join(_order(g))}
                   for r, g in part.groupby("rater", sort=True)]
        prompt = store.find_prompt(db, study.id, row["prompt_id"])
        if prompt is None:  # the rankings name only the study's prompts
            raise NotFoundError(f"study {study.name!r} has no prompt {row['prompt_id']!r}")
        item_id = prompt
        paths = [_path(db, study, i) for i in dict.fromkeys(part["image_id"])]
    else:
        part = frame[(frame["pair_id"] == row["pair_id"]) & (frame["criterion"] == crit)]
        answers = [{"rater": r, "answer": c, "shown": f"{lm} | {rm}"} for r, c, lm, rm in zip(
            part["rater"], disagreement.chosen(part), part["left_model"], part["right_model"],
            strict=True)]
        item_id = int(row["pair_id"])
        paths = [_path(db, study, i) for i in store.pair_images(db, item_id)]
    first = part.iloc[0]
    return {**{k: _plain(v) for k, v in row.items()}, "view": view, "item_id": item_id,
            "prompt": first["prompt"], "answers": sorted(answers, key=lambda a: a["rater"]),
            "paths": paths, "adjudicated": done.get((item_id, crit), {}).get("value"),
            "options": _options(db, study, view, item_id, crit),
            "scale": _scale(db, study, view, item_id, crit)}


def _order(group: pd.DataFrame) -> list[str]:
    """A rater's ranking as model names, best first (ties shown as ``a = b``)."""
    out = []
    for _, tied in group.sort_values(["rank", "model"]).groupby("rank", sort=True):
        out.append(" = ".join(tied["model"]))
    return out


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    return None if isinstance(value, float) and math.isnan(value) else value


def _path(db: Database, study: study_store.Study, image_id: int) -> str | None:
    return report.image_file(study.root, store.image_path(db, image_id))


def _scale(db: Database, study: study_store.Study, view: str, item_id: int,
           criterion: str) -> dict[str, float | None] | None:
    """A continuous criterion's scale (``low``, ``high``, ``step``; None: any number) for
    the page's number field; None for levels, rankings and pairs."""
    if view != "score":
        return None
    found = rubric_choice.rubric_for_image(db, study, item_id).resolve(criterion)
    scale = found.continuous if found is not None else None
    return None if scale is None else {"low": scale.low, "high": scale.high, "step": scale.step}


def _options(db: Database, study: study_store.Study, view: str, item_id: int,
             criterion: str) -> list:
    """What an adjudicated value of the item may be: the criterion's scale, the set's
    models, or the pair outcomes."""
    if view == "score":
        rubric = rubric_choice.rubric_for_image(db, study, item_id)
        found = next((c for c in rubric.criteria if c.key == criterion), None)
        if found is not None and found.continuous is not None:
            return [found.continuous.low, found.continuous.high]  # a slider's ends
        return list(found.values) if found is not None else []
    if view == "rank":
        return store.models_of_prompt(db, item_id)
    return list(PAIR_OUTCOMES)


def set_value(db: Database, study_name: str, view: str, item_id: int, criterion: str,
              value: Any, *, note: str = "", actor: str = "researcher") -> Any:
    """Store an adjudicated value (a new revision; the raw labels are untouched).

    ``value``: a score on the criterion's scale (``score``), the set's models best first,
    each once (``rank``), or ``a``/``b``/``tie``/``both_bad`` or a model of the pair
    (``pair``). Returns the value as stored.

    Raises:
        NotFoundError: no such study or item of it.
        ConcordError: a view, criterion or value that does not fit the item.
    """
    study, unit = _target(db, study_name, view, item_id)
    clean = _checked(db, study, view, item_id, criterion, value)
    with transaction(db):
        store.record(db, study.id, unit, item_id, criterion, clean, note=note.strip(),
                     actor=actor)
        audit(db, actor, "adjudicate", study.name, unit=unit, item_id=item_id,
              criterion=criterion, value=clean, note=note.strip())
    return clean


def clear(db: Database, study_name: str, view: str, item_id: int, criterion: str, *,
          actor: str = "researcher") -> None:
    """Withdraw an item's adjudicated value (kept in the table's history)."""
    study, unit = _target(db, study_name, view, item_id)
    with transaction(db):
        store.record(db, study.id, unit, item_id, criterion, None, note="", actor=actor)
        audit(db, actor, "clear_adjudication", study.name, unit=unit, item_id=item_id,
              criterion=criterion)


def _target(db: Database, study_name: str, view: str, item_id: int
            ) -> tuple[study_store.Study, str]:
    if view not in UNITS:
        raise ConcordError(f"unknown view {view!r} (use score, rank or pair)")
    study = study_store.get_study(db, study_name)
    if not store.item_exists(db, study.id, UNITS[view], int(item_id)):
        raise NotFoundError(f"study {study.name!r} has no {UNITS[view]} with id {item_id}")
    return study, UNITS[view]


def _checked(db: Database, study: study_store.Study, view: str, item_id: int,
             criterion: str, value: Any) -> Any:
    options = _options(db, study, view, item_id, criterion)
    if view == "score":
        if not options:
            raise ConcordError(f"criterion {criterion!r} is not on this image's rubric")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ConcordError(f"adjudicated {criterion} must be a number, got {value!r}"
                               ) from None
        found = rubric_choice.rubric_for_image(db, study, item_id).resolve(criterion)
        if found is None or not found.accepts(number):
            scale = options if found is None else found.scale_text()
            raise ConcordError(f"{criterion} = {value!r} is not on the scale {scale}")
        return number
    if view == "rank":
        order = _ranking(value)
        if sorted(order) != sorted(options):
            raise ConcordError(f"an adjudicated ranking names each model of the set once, "
                               f"best first: {options}; got {order}")
        return order
    a, b = store.pair_images(db, item_id)
    names = {store.model_of_image(db, a): "a", store.model_of_image(db, b): "b"}
    choice = names.get(value, value)
    if choice not in PAIR_OUTCOMES:
        raise ConcordError(f"an adjudicated pair is one of {list(PAIR_OUTCOMES)} or a model "
                           f"of the pair {sorted(names)}; got {value!r}")
    return choice


def _ranking(value: Any) -> list[str]:
    """An adjudicated order, best first: a list, ``a > b > c`` (as ``list`` prints a
    rater's ranking) or ``a, b, c``. It is a strict order: ``=`` (a tie) is refused."""
    if not isinstance(value, str):
        return [str(v).strip() for v in value]
    parts = [v.strip() for v in value.split(">" if ">" in value else ",")]
    tied = next((p for p in parts if "=" in p), None)
    if tied is not None:
        raise ConcordError(f"an adjudicated ranking is a strict order, best first ('a > b > "
                           f"c'); {tied!r} ties models: choose their order")
    return parts


ADJUDICATION_COLUMNS = ["study", "unit", "prompt_id", "prompt", "model", "sample", "model_a",
                        "model_b", "criterion", "value", "ranking", "outcome", "note", "actor",
                        "time"]


def adjudications_frame(db: Database, study_name: str) -> pd.DataFrame:
    """The study's current adjudicated values (:data:`ADJUDICATION_COLUMNS`): ``value`` for
    an image score, ``ranking`` (models best first, ``" > "``-joined) for a ranking set,
    ``outcome`` (the chosen model, ``tie`` or ``both_bad``) for a pair."""
    study = study_store.get_study(db, study_name)
    rows = []
    for unit in store.UNITS:
        found = [a for a in store.current(db, study.id) if a["unit"] == unit]
        if not found:
            continue
        info = store.targets(db, study.id, unit).set_index("item_id")
        for a in found:
            if a["item_id"] not in info.index:  # an item no longer in the study
                continue
            t = info.loc[a["item_id"]]
            v = a["value"]
            pair = {"a": t["left_model"], "b": t["right_model"]}
            rows.append({
                "study": study.name, "unit": unit, "prompt_id": t["prompt_id"],
                "prompt": t["prompt"], "model": t["model"],
                "sample": None if pd.isna(t["sample"]) else int(t["sample"]),
                "model_a": t["left_model"], "model_b": t["right_model"],
                "criterion": a["criterion"], "value": v if unit == "image" else None,
                "ranking": " > ".join(v) if unit == "prompt" else None,
                "outcome": pair.get(v, v) if unit == "pair" else None,
                "note": a["note"], "actor": a["actor"], "time": a["created_at"]})
    out = pd.DataFrame(rows, columns=ADJUDICATION_COLUMNS)
    out["value"] = out["value"].astype(float)
    out["sample"] = out["sample"].astype("Int64")
    return out
