"""The ``pairs`` sections of :func:`concord.stats.full_report` (pairwise A/B judgments).

Input: the study's Pairs frame (``docs/data-model.md``; the store adds ``gold_model``, the
known better model of a gold pair) and, when the study has rankings, the Rankings frame
(without gold), whose derived pairs (:func:`concord.stats.pairs.frame.pairs_from_rankings`)
feed the same Bradley–Terry fit, so a ranking study and a pairwise study are on one scale
(mean strength = 1000, 400 points = odds of 10:1). Gold pairs count only for rater
quality (:func:`pair_gold_results`). A statistic the data cannot support (e.g. no finite
Bradley–Terry MLE: a model never lost) is reported in ``problems``, not raised.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from concord.stats._validate import check_choice
from concord.stats.pairs.agreement import metric_pair_accuracy, pair_agreement
from concord.stats.pairs.bradley_terry import (
    TIE_MODELS,
    UNITS,
    bradley_terry,
    bradley_terry_boot,
    score_factor,
)
from concord.stats.pairs.differences import bradley_terry_differences, pair_win_rates
from concord.stats.pairs.elo import elo_online, elo_ratings
from concord.stats.pairs.frame import judgments, pairs_from_rankings
from concord.stats.pairs.pairwise import pair_position_bias, win_matrix, win_rates

# Arena settings of the online Elo (docs/stats.md): K = 4 (the mean over orders: 100).
ELO_K, ELO_ORDERS = 4.0, 100
GOLD_COLUMNS = ["rater", "unit", "criterion", "n_gold", "n_correct", "accuracy"]
PAIR_SECTIONS = ("win_rates", "bradley_terry", "bradley_terry_differences", "head_to_head",
                 "elo_online", "elo_perm_mean", "win_matrix", "position_bias",
                 "position_bias_raters", "agreement", "metric_accuracy", "problems")


@dataclass(frozen=True)
class PairOptions:
    """The conventions of the Bradley–Terry and Elo scores (arena defaults): the
    Bradley–Terry prior precision (0: maximum likelihood; arena code fits with a small L2
    penalty), the score scale (``scale`` points are odds of ``odds``:1, the mean or anchor
    at ``initial``, also Elo's start), and what the bootstrap resamples (``prompt`` or
    ``vote``)."""

    bt_prior: float = 0.0
    scale: float = 400.0
    odds: float = 10.0
    initial: float = 1000.0
    bootstrap: str = "prompt"

    def __post_init__(self) -> None:
        score_factor(self.scale, self.odds)  # raises on a bad scale
        check_choice(self.bootstrap, UNITS, name="bootstrap")
        for name in ("bt_prior", "initial"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not np.isfinite(value) or (name == "bt_prior" and value < 0):
                raise ValueError(f"{name} must be a finite number{' >= 0' * (name == 'bt_prior')}"
                                 f", got {value!r}")

    def meta(self) -> dict[str, object]:
        """The settings as the report's ``meta.pairs`` lists them."""
        return {"bt_prior": self.bt_prior, "scale": self.scale, "odds": self.odds,
                "initial": self.initial, "bootstrap": self.bootstrap}


def split_gold_pairs(pairs: pd.DataFrame | None) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """(judgments of ordinary pairs or None, judgments of gold pairs)."""
    if pairs is None or pairs.empty:
        return None, pd.DataFrame()
    if "gold_model" not in pairs.columns:
        return pairs, pairs.iloc[:0]
    gold = pairs["gold_model"].notna().to_numpy()
    data = pairs[~gold].reset_index(drop=True)
    return (None if data.empty else data), pairs[gold]


def pair_gold_results(gold: pd.DataFrame) -> pd.DataFrame:
    """Per rater × criterion (unit ``pair``): a gold judgment is correct when it picks the
    known better image (a tie or "both bad" is wrong)."""
    if gold.empty:
        return pd.DataFrame(columns=GOLD_COLUMNS)
    outcome = gold["outcome"].astype(str)
    better = gold["gold_model"].astype(str)
    right = (((outcome == "left") & (gold["left_model"].astype(str) == better))
             | ((outcome == "right") & (gold["right_model"].astype(str) == better)))
    crit = gold["criterion"].astype(str) if "criterion" in gold else "overall"
    table = pd.DataFrame({"rater": gold["rater"].astype(str), "criterion": crit,
                          "correct": right.to_numpy()})
    out = table.groupby(["rater", "criterion"], sort=True).agg(
        n_gold=("correct", "size"), n_correct=("correct", "sum")).reset_index()
    out["accuracy"] = out["n_correct"] / out["n_gold"]
    return out.assign(unit="pair")[GOLD_COLUMNS]


def _by_criterion(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    if "criterion" not in frame.columns:
        return [("overall", frame)]
    return [(str(c), part) for c, part in frame.groupby("criterion", sort=True, observed=True)]


class _Collector:
    """Runs each statistic, tags its rows, and keeps what could not be computed."""

    def __init__(self) -> None:
        self.parts: dict[str, list[pd.DataFrame]] = {}
        self.problems: list[dict] = []

    def run(self, section: str, make: Callable[[], pd.DataFrame],
            **tags: object) -> pd.DataFrame | None:
        """``make()``, or None (and a problem naming the section) on ValueError."""
        try:
            return make()
        except ValueError as exc:
            self.problems.append({"section": section, **tags, "message": str(exc)})
            return None

    def add(self, section: str, make: Callable[[], pd.DataFrame], **tags: object) -> None:
        frame = self.run(section, make, **tags)
        if frame is not None and not frame.empty:
            self.parts.setdefault(section, []).append(frame.assign(**tags))

    def frames(self) -> dict[str, pd.DataFrame]:
        out = {f"pairs_{k}": pd.concat(v, ignore_index=True) for k, v in self.parts.items()}
        if self.problems:
            out["pairs_problems"] = pd.DataFrame(self.problems)
        return out


def pair_sections(pairs: pd.DataFrame | None, rankings: pd.DataFrame | None,
                  scores: pd.DataFrame | None, *, n_boot: int, seed: int, ci: float,
                  higher_is_better: Mapping[str, bool] | None,
                  options: PairOptions | None = None) -> dict[str, pd.DataFrame]:
    """Every pair statistic of the study, as ``{"pairs_<section>": frame}``.

    ``pairs``: the Pairs frame without gold (or None); ``rankings``: the Rankings frame
    without gold (or None); ``scores``: image-level metric scores (``image_id, metric,
    judge, value``) or None; ``options``: the score conventions (arena defaults).
    """
    col, options = _Collector(), options or PairOptions()
    sources = []
    if pairs is not None:
        sources += [("pairs", c, p) for c, p in _by_criterion(pairs)]
        for criterion, part in _by_criterion(pairs):
            _human_only(col, part, criterion, n_boot=n_boot, seed=seed, ci=ci,
                        options=options)
    if rankings is not None:
        for criterion, part in _by_criterion(rankings):
            derived = col.run("bradley_terry", lambda p=part, c=criterion: pairs_from_rankings(
                p, criterion=c), source="rankings", criterion=criterion)
            if derived is not None and not derived.empty:
                sources.append(("rankings", criterion, derived))
    for source, criterion, frame in sources:
        _bradley_terry(col, frame, source, criterion, n_boot=n_boot, seed=seed, ci=ci,
                       options=options)
        _metric_accuracy(col, frame, scores, source, criterion, n_boot=n_boot, seed=seed,
                         ci=ci, higher_is_better=higher_is_better)
    return col.frames()


def _bradley_terry(col: _Collector, pairs: pd.DataFrame, source: str, criterion: str, *,
                   n_boot: int, seed: int, ci: float, options: PairOptions) -> None:
    """Both tie models, each with its pairwise differences (from the same refits), and
    the head-to-head win rates. Without a tie (rankings without ties, usually) Davidson's
    ν̂ is 0 in the fit and in every resample, so both are plain Bradley–Terry: fitted once."""
    tags = {"source": source, "criterion": criterion}
    tied = pairs["outcome"].astype(str).isin(["tie", "both_bad"]).any()
    coded, factor = None, score_factor(options.scale, options.odds)
    for tie_model in TIE_MODELS if tied else ("half",):
        boot = col.run("bradley_terry", lambda t=tie_model: bradley_terry_boot(
            pairs, tie_model=t, n_boot=n_boot, seed=seed, prior=options.bt_prior,
            unit=options.bootstrap), **tags)
        if boot is None:
            continue
        coded = boot.judgments
        for shown in TIE_MODELS if not tied else (tie_model,):
            col.add("bradley_terry", lambda b=boot, t=shown: bradley_terry(
                pairs, boot=b, ci=ci, base=options.initial, scale=options.scale,
                odds=options.odds).assign(tie_model=t), **tags)
            col.add("bradley_terry_differences", lambda b=boot, t=shown:
                    bradley_terry_differences(b, ci=ci, factor=factor).assign(tie_model=t),
                    **tags)
    # The fit's coded judgments when there is one (350,000 derived pairs take 0.3 s to
    # check and code again).
    col.add("head_to_head", lambda: pair_win_rates(
        coded if coded is not None else judgments(pairs, where="head_to_head"),
        n_boot=n_boot, seed=seed, ci=ci), **tags)


def _human_only(col: _Collector, pairs: pd.DataFrame, criterion: str, *, n_boot: int,
                seed: int, ci: float, options: PairOptions) -> None:
    """The statistics only human pair judgments have (win rates, Elo, bias, agreement)."""
    col.add("win_rates", lambda: win_rates(pairs, n_boot=n_boot, ci=ci, seed=seed),
            criterion=criterion)
    scale = {"k": ELO_K, "initial": options.initial, "scale": options.scale,
             "base": options.odds}
    col.add("elo_online", lambda: _named(elo_online(pairs, n_boot=n_boot, ci=ci, seed=seed,
                                                    **scale), "elo_online"),
            criterion=criterion)
    col.add("elo_perm_mean", lambda: _named(elo_ratings(pairs, n_perm=ELO_ORDERS, seed=seed,
                                                        **scale), "elo_perm_mean"),
            criterion=criterion)
    col.add("win_matrix", lambda: _long_matrix(pairs), criterion=criterion)
    col.add("position_bias", lambda: pair_position_bias(pairs, ci=ci), criterion=criterion)
    col.add("position_bias_raters", lambda: pair_position_bias(pairs, by=("rater",), ci=ci)
            .astype({"rater": str}), criterion=criterion)
    keys = [c for c in ("study",) if c in pairs.columns]
    for both_bad in ("tie", "category"):
        col.add("agreement", lambda b=both_bad: pair_agreement(pairs, both_bad=b, by=keys)
                .drop(columns=keys), criterion=criterion, both_bad=both_bad)


def _named(frame: pd.DataFrame, method: str) -> pd.DataFrame:
    """Elo columns named by their method (``elo`` → ``elo_online``, ``elo_sd`` →
    ``elo_perm_mean_sd``, …): two conventions that must not be mistaken for each other."""
    return frame.rename(columns={c: c.replace("elo", method, 1) for c in frame.columns
                                 if c.startswith("elo")})


def _long_matrix(pairs: pd.DataFrame) -> pd.DataFrame:
    """Model × opponent ``wins, ties, n, win_rate`` (pairs that met at least once)."""
    tables = {v: win_matrix(pairs, value=v).stack() for v in ("wins", "ties", "n", "win_rate")}
    out = pd.DataFrame(tables).astype({"wins": int, "ties": float, "n": int}).reset_index()
    return out[out["n"] > 0].reset_index(drop=True)


def _metric_accuracy(col: _Collector, pairs: pd.DataFrame, scores: pd.DataFrame | None,
                     source: str, criterion: str, *, n_boot: int, seed: int, ci: float,
                     higher_is_better: Mapping[str, bool] | None) -> None:
    """Human vs metric pair accuracy for each metric × judge with image scores."""
    if scores is None or scores.empty or "left_image_id" not in pairs.columns:
        return
    for (metric, judge), part in scores.groupby(["metric", "judge"], sort=True,
                                                observed=True):
        up = True if higher_is_better is None else higher_is_better.get(str(metric), True)
        table = part[["image_id", "value"]]
        col.add("metric_accuracy", lambda t=table, u=up: pd.DataFrame([metric_pair_accuracy(
            pairs, t, higher_is_better=u, n_boot=n_boot, ci=ci, seed=seed)]),
            source=source, criterion=criterion, metric=str(metric), judge=str(judge))


def pair_counts(pairs: pd.DataFrame | None) -> dict[str, object]:
    """Judgments, judged pairs, raters, models and prompts of a Pairs frame (for ``meta``)."""
    if pairs is None or pairs.empty:
        return {"n": 0, "raters": set(), "models": set(), "prompts": set()}
    models = set(pd.unique(np.r_[pairs["left_model"].astype(str),
                                 pairs["right_model"].astype(str)]).tolist())
    return {"n": len(pairs), "raters": set(pairs["rater"].astype(str)), "models": models,
            "prompts": set(pairs["prompt_id"].astype(str))}
