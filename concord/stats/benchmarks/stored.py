"""Benchmark summaries of a study's stored metric scores (the Metric scores frame).

Maps the rows each evaluator stores (``concord.store.frames.scores_frame``: image rows with
``question_id == ""`` and per-question rows, prompt metadata, JSON ``details``) to the
inputs of the benchmark functions, per metric and judge. A benchmark that cannot be
computed on the data (a PairComp pair with three images, a TIIF prompt without a
short/long variant) is reported in ``problems`` instead of failing the whole report.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pandas as pd

from concord.stats.benchmarks.consistency import KINDS, paraphrase_consistency
from concord.stats.benchmarks.geneval2 import (
    geneval2_by_atomicity,
    geneval2_by_skill,
    geneval2_totals,
)
from concord.stats.benchmarks.gned import gned_summary
from concord.stats.benchmarks.paircomp import paircomp_scores
from concord.stats.benchmarks.tiif import VARIANTS, tiif_accuracy, tiif_summary

# Metric name -> GenEval 2 methods it gives (soft-tifa values give both means).
# "tifa" is kept for scores imported under that name (0/1 per question, as GenEval 2's).
GENEVAL2 = {"soft-tifa": ("soft_tifa_am", "soft_tifa_gm"), "geneval2-tifa": ("tifa",),
            "tifa": ("tifa",), "geneval2-vqascore": ("vqascore",)}
TIIF = ("tiif-judge", "tiif")
SECTIONS = ("metric_means", "paircomp", "geneval2_totals", "geneval2_by_skill",
            "geneval2_by_atomicity", "tiif_accuracy", "tiif_summary", "gned", "consistency")
_IMAGE_KEYS = ("metric", "judge", "image_id")
_CARRY = ("study", "prompt_id", "model", "sample", "dimension", "variant",
          "paraphrase_group", "prompt_meta", "details")


def _question_ids(scores: pd.DataFrame) -> pd.Series:
    return scores["question_id"].fillna("").astype(str)


def image_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """One value per (metric, judge, image): its image row, else the mean of its questions.

    Evaluators with questions store both an image row (e.g. TIIF accuracy) and question
    rows (e.g. P(yes)); mixing them would be meaningless, so the image row wins. Imported
    judge outputs (``tiif-judge``) have question rows only: their mean is the accuracy.
    NaN values (evaluator errors) are skipped; an image with no value stays NaN.
    """
    if scores.empty:
        return scores.copy()
    is_image = (_question_ids(scores) == "").to_numpy()
    pair = pd.MultiIndex.from_frame(scores[["metric", "judge"]].astype(str))
    has_image_rows = pair.isin(pair[is_image])
    images = scores[is_image]
    questions = scores[~is_image & ~has_image_rows]
    if questions.empty:
        return images.reset_index(drop=True)
    carry = [c for c in _CARRY if c in questions.columns and c != "details"]
    means = questions.groupby(list(_IMAGE_KEYS), sort=False, dropna=False).agg(
        value=("value", "mean"), **{c: (c, "first") for c in carry}).reset_index()
    return pd.concat([images, means], ignore_index=True)


def _unit(df: pd.DataFrame) -> pd.Series:
    """Image id for the benchmark functions: the prompt, plus the sample when several."""
    prompt = df["prompt_id"].astype(str)
    sample = df["sample"].fillna(0).astype(int)
    return prompt if (sample == 0).all() else prompt + "#" + sample.astype(str)


def _parse(texts: pd.Series) -> list[dict]:
    """JSON objects of a text column, parsing each distinct text once."""
    cache: dict[object, dict] = {}
    out = []
    for text in texts:
        if text not in cache:
            value = json.loads(text) if isinstance(text, str) and text else {}
            cache[text] = value if isinstance(value, dict) else {}
        out.append(cache[text])
    return out


def _groups(df: pd.DataFrame, metrics) -> Iterator[tuple[str, str, pd.DataFrame]]:
    part = df[df["metric"].isin(list(metrics))]
    for (metric, judge), sub in part.groupby(["metric", "judge"], sort=True):
        yield str(metric), str(judge), sub


def metric_means(images: pd.DataFrame) -> pd.DataFrame:
    """Mean image value per metric, judge and model, with images and missing counts."""
    df = images.assign(missing=images["value"].isna())
    out = df.groupby(["metric", "judge", "model"], sort=True).agg(
        mean=("value", "mean"), n_images=("value", "size"), n_missing=("missing", "sum"))
    return out.reset_index()


def _paircomp(images: pd.DataFrame) -> pd.DataFrame:
    meta = _parse(images["prompt_meta"])
    df = pd.DataFrame({"model": images["model"].to_numpy(),
                       "pair": [m.get("pair") for m in meta],
                       "caption": [m.get("caption") for m in meta],
                       "sample": images["sample"].to_numpy(),
                       "category": images["dimension"].to_numpy(),
                       "value": images["value"].to_numpy()})
    missing = df[["pair", "caption", "category"]].isna().any(axis=1)
    if missing.any():
        raise ValueError(f"paircomp: {int(missing.sum())} image(s) lack pair/caption in the "
                         "prompt metadata or a category (the prompt dimension)")
    return paircomp_scores(df)


def _complete_images(questions: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Question rows of images whose every question has a value, and how many were dropped."""
    bad = questions.loc[questions["value"].isna(), "image_id"].unique()
    return questions[~questions["image_id"].isin(bad)], len(bad)


def _geneval2(rows: pd.DataFrame, methods: tuple[str, ...]) -> dict[str, pd.DataFrame]:
    df = rows.assign(prompt_id=_unit(rows), question_id=_question_ids(rows))
    out = {"geneval2_totals": pd.concat([geneval2_totals(df, method=m) for m in methods],
                                        ignore_index=True)}
    if "soft_tifa_am" in methods:
        if df["skill"].notna().all():
            out["geneval2_by_skill"] = geneval2_by_skill(df)
        if df["atom_count"].notna().all():
            out["geneval2_by_atomicity"] = geneval2_by_atomicity(df)
    return out


def _tiif(rows: pd.DataFrame, metric: str) -> dict[str, pd.DataFrame]:
    if metric == "tiif-judge":
        correct = rows["value"]
    else:  # Concord's own TIIF judge keeps the verdict in the question's details
        correct = pd.Series([d.get("correct") for d in _parse(rows["details"])],
                            index=rows.index, dtype=object)
    df = pd.DataFrame({"model": rows["model"], "dimension": rows["dimension"],
                       "variant": rows["variant"], "correct": correct})
    df = df[df["correct"].notna()]
    bad = df[~df["variant"].isin(VARIANTS) | df["dimension"].isna()]
    if not bad.empty:
        raise ValueError(f"tiif: {len(bad)} judged question(s) whose prompt has no "
                         f"dimension or no short/long variant, e.g. variant "
                         f"{bad['variant'].iloc[0]!r}")
    accuracy = tiif_accuracy(df.assign(correct=df["correct"].astype(bool)))
    return {"tiif_accuracy": accuracy, "tiif_summary": tiif_summary(accuracy)}


def _gned(images: pd.DataFrame) -> pd.DataFrame:
    recall = [d.get("recall") for d in _parse(images["details"])]
    if all(r is None for r in recall):
        raise ValueError("gned: no recall in the stored details (values imported without "
                         "it); the mean GNED is in metric_means")
    df = pd.DataFrame({"model": images["model"].to_numpy(),
                       "variant": images["variant"].fillna("").to_numpy(),
                       "prompt_id": _unit(images).to_numpy(),
                       "gned": images["value"].to_numpy(),
                       "recall": pd.to_numeric(pd.Series(recall, dtype=object)).to_numpy(
                           dtype=float)})
    return gned_summary(df)


def _consistency(images: pd.DataFrame) -> pd.DataFrame | None:
    df = images[images["paraphrase_group"].notna() & images["dimension"].isin(KINDS)
                & images["value"].notna()]
    if df.empty:
        return None
    return paraphrase_consistency(df, kind_column="dimension")


def benchmark_tables(scores: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every benchmark summary the stored scores allow, per metric and judge.

    Args:
        scores: Metric scores frame of ONE study, as ``scores_frame`` returns it.

    Returns:
        Frames keyed by :data:`SECTIONS` (only those with rows) plus ``problems``
        (``benchmark, metric, judge, message``); every row carries ``metric`` and ``judge``.
    """
    out: dict[str, list[pd.DataFrame]] = {}
    problems: list[dict] = []
    if scores.empty:
        return {}
    images = image_scores(scores)
    is_question = _question_ids(scores) != ""
    questions = scores[is_question.to_numpy()]

    def run(name: str, metric: str, judge: str, fn: Callable[[], object]) -> None:
        try:
            result = fn()
        except ValueError as exc:  # bad or partial data: report it, keep the rest
            problems.append({"benchmark": name, "metric": metric, "judge": judge,
                             "message": str(exc)})
            return
        tables = result if isinstance(result, dict) else {name: result}
        for key, frame in tables.items():
            if frame is not None and not frame.empty:
                out.setdefault(key, []).append(frame.assign(metric=metric, judge=judge))

    out["metric_means"] = [metric_means(images)]
    _run_all(images, questions, run, problems)
    tables = {k: _lead(pd.concat(v, ignore_index=True)) for k, v in out.items()}
    if problems:
        tables["problems"] = pd.DataFrame(problems)
    return tables


def _run_all(images: pd.DataFrame, questions: pd.DataFrame, run, problems: list) -> None:
    for metric, judge, sub in _groups(images, ["paircomp"]):
        run("paircomp", metric, judge, lambda s=sub: _paircomp(s))
    for metric, judge, sub in _groups(questions, ["soft-tifa", "geneval2-tifa", "tifa"]):
        rows, dropped = _complete_images(sub)
        if dropped:
            problems.append({"benchmark": "geneval2", "metric": metric, "judge": judge,
                             "message": f"{dropped} image(s) left out: a question has no "
                                        "value (evaluator error)"})
        run("geneval2", metric, judge, lambda r=rows, m=metric: _geneval2(r, GENEVAL2[m]))
    for metric, judge, sub in _groups(images, ["geneval2-vqascore"]):
        ok = sub[sub["value"].notna()]
        run("geneval2", metric, judge, lambda r=ok: _geneval2(r, ("vqascore",)))
    for metric, judge, sub in _groups(questions, TIIF):
        run("tiif", metric, judge, lambda s=sub, m=metric: _tiif(s, m))
    for metric, judge, sub in _groups(images, ["gned"]):
        run("gned", metric, judge, lambda s=sub: _gned(s))
    if "paraphrase_group" in images.columns:
        for (metric, judge), sub in images.groupby(["metric", "judge"], sort=True):
            run("consistency", str(metric), str(judge), lambda s=sub: _consistency(s))


def _lead(frame: pd.DataFrame) -> pd.DataFrame:
    """``metric`` and ``judge`` first, the function's own columns after."""
    first = [c for c in ("metric", "judge") if c in frame.columns]
    return frame[first + [c for c in frame.columns if c not in first]]


__all__ = ["GENEVAL2", "SECTIONS", "TIIF", "benchmark_tables", "image_scores", "metric_means"]
