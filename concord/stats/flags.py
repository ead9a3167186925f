"""Per-rater behaviour signals, per-item "too fast" marks and the flags they raise.

Input: the Ratings frame (``rater, criterion, value, seconds`` + image keys) and the
Rankings frame (``prompt_id, rater, criterion, rank, position, seconds``), gold results
from :func:`concord.stats.quality.gold_results`, thresholds from
:class:`concord.stats.quality.QualityThresholds`. Unknown times (NaN ``seconds``, e.g.
imported ratings) are never "too fast".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from concord.stats._codes import codes_and_names, first_rows, group_codes, image_keys
from concord.stats.thresholds import QualityThresholds

FLAG_COLUMNS = ["rater", "flag", "unit", "criterion", "value", "threshold", "n", "message"]
ITEM_COLUMNS = ["rater", "unit", "prompt_id", "model", "sample", "image_id", "criterion",
                "seconds", "threshold"]


def _seconds(frame: pd.DataFrame) -> pd.Series:
    if "seconds" not in frame.columns:
        return pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(frame["seconds"], errors="coerce").astype(float)


def _text_keys(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Small result frames get plain string keys (categoricals stay in the big input)."""
    return frame.astype(dict.fromkeys([k for k in keys if k in frame.columns], str))


def _rating_signals(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per rater × criterion: count, median seconds, modal value and its share.

    Counted from integer codes (a million ratings): the modal value is the most common
    value, ties going to the lowest (levels are sorted, ``argmax`` takes the first).
    """
    rater, raters = codes_and_names(ratings["rater"])
    crit, crits = codes_and_names(ratings["criterion"])
    level, levels = pd.factorize(ratings["value"].to_numpy(float), sort=True)
    cell = rater * len(crits) + crit
    n_cells, n_levels = len(raters) * len(crits), max(len(levels), 1)
    counts = np.bincount(cell * n_levels + level,
                         minlength=n_cells * n_levels).reshape(n_cells, n_levels)
    n = counts.sum(axis=1)
    used = np.flatnonzero(n > 0)
    seconds = _seconds(ratings)
    median = np.full(n_cells, np.nan)
    if seconds.notna().any():
        by_cell = seconds.groupby(cell).median()
        median[by_cell.index.to_numpy()] = by_cell.to_numpy()
    top = counts.argmax(axis=1)
    return pd.DataFrame({
        "rater": raters[used // len(crits)].astype(str),
        "criterion": crits[used % len(crits)].astype(str), "n": n[used],
        "median_seconds": median[used], "modal_value": np.asarray(levels)[top[used]],
        "modal_share": counts[used, top[used]] / n[used], "unit": "image",
        "display_order_share": np.nan})


def _rankings_per_set(rankings: pd.DataFrame) -> pd.DataFrame:
    """One row per ranking (prompt × rater × criterion): seconds, in display order?"""
    df = rankings.assign(seconds=_seconds(rankings))
    keys = ["prompt_id", "rater", "criterion"]
    df = df.sort_values([*keys, "position"]) if "position" in df else df
    step = df.groupby(keys, sort=False, observed=True)["rank"].diff()
    df = df.assign(backwards=(step < 0).to_numpy())
    out = df.groupby(keys, sort=True, observed=True).agg(
        seconds=("seconds", "max"), backwards=("backwards", "any")).reset_index()
    return _text_keys(out, keys)


def _ranking_signals(rankings: pd.DataFrame) -> pd.DataFrame:
    sets = _rankings_per_set(rankings).assign(in_order=lambda d: ~d["backwards"])
    table = sets.groupby(["rater", "criterion"], sort=True).agg(
        n=("seconds", "size"), median_seconds=("seconds", "median"),
        display_order_share=("in_order", "mean")).reset_index()
    if "position" not in rankings.columns:
        table["display_order_share"] = np.nan
    return table.assign(unit="prompt", modal_value=np.nan, modal_share=np.nan)


SIGNAL_COLUMNS = ["rater", "unit", "criterion", "n", "median_seconds", "modal_value",
                  "modal_share", "display_order_share"]


def rater_signals(ratings: pd.DataFrame, rankings: pd.DataFrame | None) -> pd.DataFrame:
    """Per rater × unit (``image`` ratings, ``prompt`` rankings) × criterion.

    ``n`` ratings or rankings; ``median_seconds``; for ratings ``modal_value`` and
    ``modal_share`` (share of the rater's ratings equal to their most common value, ties:
    the lowest value); for rankings ``display_order_share`` (share of rankings whose ranks
    never decrease along the display slots: the order shown was kept).
    """
    parts = []
    if not ratings.empty:
        parts.append(_rating_signals(ratings))
    if rankings is not None and not rankings.empty:
        parts.append(_ranking_signals(rankings))
    if not parts:
        return pd.DataFrame(columns=SIGNAL_COLUMNS)
    return pd.concat(parts, ignore_index=True)[SIGNAL_COLUMNS]


@dataclass(frozen=True, slots=True)
class UnitItems:
    """The items of one unit (rated images or rankings): who did each, in how long.

    ``rater`` is the code of each item's rater in ``rater_names``, ``seconds`` its time;
    ``keys(which)`` builds the key columns of the items ``which`` (only the few reported).
    """

    unit: str
    threshold: float
    rater: np.ndarray
    rater_names: np.ndarray
    seconds: np.ndarray
    keys: Callable[[np.ndarray], pd.DataFrame]

    def fast(self) -> np.ndarray:
        """Mask of the items done faster than the threshold (unknown times never are)."""
        with np.errstate(invalid="ignore"):
            return self.seconds < self.threshold


def _rated_items(ratings: pd.DataFrame, threshold: float) -> UnitItems:
    """One item per rated image and rater; its time is the largest of its criteria's."""
    keys = [*image_keys(ratings), "rater"]
    code = group_codes(ratings, keys)
    longest = np.full(int(code.max()) + 1 if code.size else 0, -np.inf)
    np.fmax.at(longest, code, _seconds(ratings).to_numpy())  # fmax: NaN times are ignored
    first = first_rows(code)
    rater, names = codes_and_names(ratings["rater"])

    def rows(which: np.ndarray) -> pd.DataFrame:
        return ratings.iloc[first[which]][keys].reset_index(drop=True)
    return UnitItems("image", threshold, rater[first], names,
                     np.where(np.isinf(longest), np.nan, longest), rows)


def item_times(ratings: pd.DataFrame, rankings: pd.DataFrame | None,
               thresholds: QualityThresholds) -> list[UnitItems]:
    """Every rated image (per rater) and every ranking, with its time, per unit.

    A rated image's time is the largest ``seconds`` of its criteria (they are submitted
    together); a ranking's is its own.
    """
    parts = []
    if not ratings.empty:
        parts.append(_rated_items(ratings, thresholds.min_seconds_rating))
    if rankings is not None and not rankings.empty:
        sets = _rankings_per_set(rankings)
        rater, names = codes_and_names(sets["rater"])
        parts.append(UnitItems("prompt", thresholds.min_seconds_ranking, rater, names,
                               sets["seconds"].to_numpy(dtype=float),
                               lambda which, s=sets: s.iloc[which].reset_index(drop=True)))
    return parts


def too_fast_items(items: list[UnitItems]) -> pd.DataFrame:
    """The items of :func:`item_times` done in fewer seconds than their threshold.

    Returns:
        :data:`ITEM_COLUMNS` (``criterion`` for rankings only; image keys for ratings).
    """
    parts = []
    for part in items:
        which = np.flatnonzero(part.fast())
        if which.size:
            rows = _text_keys(part.keys(which), ["rater", "prompt_id", "model", "criterion"])
            parts.append(rows.assign(unit=part.unit, seconds=part.seconds[which],
                                     threshold=part.threshold).reindex(columns=ITEM_COLUMNS))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=ITEM_COLUMNS)


def time_summary(items: list[UnitItems]) -> pd.DataFrame:
    """Per rater × unit: ``n_items, n_timed, n_too_fast, too_fast_share`` (of timed)."""
    out = []
    for part in items:
        size = len(part.rater_names)
        count = np.bincount(part.rater, minlength=size)
        timed = np.bincount(part.rater, weights=np.isfinite(part.seconds), minlength=size)
        fast = np.bincount(part.rater, weights=part.fast(), minlength=size)
        used = count > 0
        out.append(pd.DataFrame({"rater": part.rater_names[used].astype(str),
                                 "unit": part.unit, "n_items": count[used],
                                 "n_timed": timed[used].astype(int),
                                 "n_too_fast": fast[used].astype(int)}))
    cols = ["rater", "unit", "n_items", "n_timed", "n_too_fast"]
    table = pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)
    table["too_fast_share"] = table["n_too_fast"] / table["n_timed"].where(
        table["n_timed"] > 0)
    return table


def _time_flags(times: pd.DataFrame, thresholds: QualityThresholds) -> list[dict]:
    rows = []
    for r in times.itertuples(index=False):
        share = r.too_fast_share
        if r.n_timed >= thresholds.min_items and share > thresholds.max_fast_share:
            limit = (thresholds.min_seconds_rating if r.unit == "image"
                     else thresholds.min_seconds_ranking)
            rows.append({"rater": r.rater, "flag": "too_fast", "unit": r.unit,
                         "criterion": None, "value": share,
                         "threshold": thresholds.max_fast_share, "n": int(r.n_timed),
                         "message": f"{share:.0%} of {int(r.n_timed)} timed items under "
                                    f"{limit:g} s (limit {thresholds.max_fast_share:.0%})"})
    return rows


def _straight_flags(signals: pd.DataFrame, thresholds: QualityThresholds) -> list[dict]:
    rows = []
    for r in signals.itertuples(index=False):
        share = r.modal_share if r.unit == "image" else r.display_order_share
        if r.n < thresholds.min_items or not share >= thresholds.max_modal_share:
            continue
        what = (f"value {r.modal_value:g}" if r.unit == "image" else "the display order")
        rows.append({"rater": r.rater, "flag": "straight_lining", "unit": r.unit,
                     "criterion": r.criterion, "value": share,
                     "threshold": thresholds.max_modal_share, "n": int(r.n),
                     "message": f"{share:.0%} of {int(r.n)} {r.criterion} answers are "
                                f"{what} (limit {thresholds.max_modal_share:.0%})"})
    return rows


def quality_flags(signals: pd.DataFrame, times: pd.DataFrame, gold: pd.DataFrame,
                  thresholds: QualityThresholds) -> pd.DataFrame:
    """Flags ``too_fast``, ``straight_lining`` and ``gold_failures`` with their numbers.

    * ``too_fast``: per rater × unit, more than ``max_fast_share`` of the timed items
      under the unit's minimum seconds, with at least ``min_items`` timed items;
    * ``straight_lining``: per rater × unit × criterion with at least ``min_items``
      answers, ``modal_share`` (ratings) or ``display_order_share`` (rankings) at least
      ``max_modal_share``;
    * ``gold_failures``: per rater × unit × criterion, gold accuracy below
      ``min_gold_accuracy``.

    Returns:
        :data:`FLAG_COLUMNS`; ``value`` is the share that tripped the flag.
    """
    rows = _time_flags(times, thresholds) + _straight_flags(signals, thresholds)
    for r in gold.itertuples(index=False):
        if r.accuracy < thresholds.min_gold_accuracy:
            rows.append({"rater": r.rater, "flag": "gold_failures", "unit": r.unit,
                         "criterion": r.criterion, "value": float(r.accuracy),
                         "threshold": thresholds.min_gold_accuracy, "n": int(r.n_gold),
                         "message": f"{int(r.n_correct)} of {int(r.n_gold)} gold "
                                    f"{r.criterion} answers right (minimum "
                                    f"{thresholds.min_gold_accuracy:.0%})"})
    out = pd.DataFrame(rows, columns=FLAG_COLUMNS)
    return out.sort_values(["rater", "flag", "unit"], kind="stable", ignore_index=True)
