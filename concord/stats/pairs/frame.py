"""The Pairs frame of the pairwise A/B protocol: its contract, its checks, and pairs from rankings.

A Pairs frame has one row per judgment: a rater saw two images of one prompt side by side
and chose the left one, the right one, a tie, or "both bad". Required columns:
``prompt_id, rater, left_model, right_model, outcome`` with ``outcome`` one of
:data:`OUTCOMES`; optional ``study, dimension, criterion, left_image_id, right_image_id,
seconds``. See ``docs/data-model.md`` ("Pairs frame").

:func:`judgments` is the one entry point the pairwise statistics use: it checks the frame
and applies the ``both_bad`` convention, so every statistic treats "both bad" the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from concord.stats._codes import sorted_codes
from concord.stats._validate import (
    check_choice,
    duplicated_keys,
    numeric_values,
    require_columns,
    require_nonempty,
)
from concord.stats.rankings import RANKING_COLUMNS

PAIR_COLUMNS = ("prompt_id", "rater", "left_model", "right_model", "outcome")
OUTCOMES = ("left", "right", "tie", "both_bad")
# How "both bad" enters the statistics: as a tie (the arena convention) or left out.
BOTH_BAD = ("tie", "exclude")


def _row_label(df: pd.DataFrame, mask: np.ndarray) -> object:
    """Index label of the first row flagged in ``mask`` (as a plain Python value)."""
    return df.index[[np.flatnonzero(mask)[0]]].tolist()[0]


def check_pairs(pairs: object, *, where: str = "check_pairs") -> pd.DataFrame:
    """Check a Pairs frame and return it unchanged.

    Raises:
        TypeError: ``pairs`` is not a DataFrame.
        ValueError: A required column is missing, the frame is empty, a required cell is
            empty, an outcome is not one of :data:`OUTCOMES`, or a row pairs a model with
            itself (``left_model == right_model``). The message quotes the value and the
            row label.
    """
    df = require_columns(pairs, PAIR_COLUMNS, where=where)
    require_nonempty(df, where=where)
    for column in PAIR_COLUMNS:
        empty = df[column].isna().to_numpy()
        if empty.any():
            raise ValueError(f"{where}: column {column!r} is empty in row "
                             f"{_row_label(df, empty)!r} ({int(empty.sum())} row(s))")
    outcome = df["outcome"].astype(object)
    bad = ~outcome.isin(OUTCOMES).to_numpy()
    if bad.any():
        raise ValueError(f"{where}: unknown outcome {outcome[bad].iloc[0]!r} in row "
                         f"{_row_label(df, bad)!r}; expected one of {list(OUTCOMES)}")
    left = df["left_model"].astype(str).to_numpy()
    same = left == df["right_model"].astype(str).to_numpy()
    if same.any():
        raise ValueError(f"{where}: row {_row_label(df, same)!r} pairs model "
                         f"{left[same][0]!r} with itself (left_model == right_model)")
    return df


@dataclass(frozen=True)
class Judgments:
    """A checked Pairs frame as integer codes (one entry per judgment kept).

    ``left``/``right`` index ``models`` (sorted names); ``credit`` is the left model's
    score (1 win, 0 loss, 0.5 tie); ``both_bad`` flags the judgments that were "both bad";
    ``prompt`` indexes ``prompts`` (sorted), the bootstrap units; ``frame`` holds the rows.
    """

    frame: pd.DataFrame
    models: np.ndarray
    left: np.ndarray
    right: np.ndarray
    credit: np.ndarray
    both_bad: np.ndarray
    prompt: np.ndarray
    prompts: np.ndarray

    @property
    def tie(self) -> np.ndarray:
        """True where the judgment counts as a tie (incl. "both bad" kept as a tie)."""
        return self.credit == 0.5


def judgments(pairs: object, *, both_bad: str = "tie", where: str) -> Judgments:
    """Check ``pairs`` and encode it, with "both bad" as a tie or excluded.

    Raises:
        ValueError: as :func:`check_pairs`; an unknown ``both_bad``; no judgment left after
            excluding "both bad".
    """
    check_choice(both_bad, BOTH_BAD, name="both_bad")
    df = check_pairs(pairs, where=where)
    outcome = df["outcome"].astype(str).to_numpy()
    if both_bad == "exclude":
        keep = outcome != "both_bad"
        if not keep.any():
            raise ValueError(f"{where}: every judgment is 'both_bad' and both_bad='exclude' "
                             "leaves none")
        df, outcome = df[keep], outcome[keep]
    left_names = df["left_model"].astype(str).to_numpy()
    right_names = df["right_model"].astype(str).to_numpy()
    models, codes = sorted_codes(np.concatenate([left_names, right_names]))
    credit = np.select([outcome == "left", outcome == "right"], [1.0, 0.0], 0.5)
    prompt, prompts = pd.factorize(df["prompt_id"].astype(str), sort=True)
    return Judgments(frame=df, models=models, left=codes[:len(df)], right=codes[len(df):],
                     credit=credit, both_bad=outcome == "both_bad", prompt=prompt,
                     prompts=np.asarray(prompts))


def count_matrices(
    j: Judgments, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(wins, ties)``: ``wins[a, b]`` = judgments model a won against b, ``ties`` symmetric.

    ``weights`` (one per judgment, default 1) gives weighted counts, e.g. a resample's.
    """
    n = len(j.models)
    w = np.ones(len(j.credit)) if weights is None else weights
    lr, rl = j.left * n + j.right, j.right * n + j.left
    wins = (np.bincount(lr, weights=w * (j.credit == 1.0), minlength=n * n)
            + np.bincount(rl, weights=w * (j.credit == 0.0), minlength=n * n)).reshape(n, n)
    ties = np.bincount(lr, weights=w * j.tie, minlength=n * n).reshape(n, n)
    return wins, ties + ties.T


def pairs_from_rankings(rankings: object, *, criterion: str | None = None) -> pd.DataFrame:
    """Turn a Rankings frame into a Pairs frame: every pair of models one rater ranked.

    For each ``(study,) prompt_id, rater`` and the chosen criterion, every two models the
    rater ranked become one judgment: the lower rank wins, equal ranks are a ``"tie"``.
    ``left_model`` is the model shown in the lower display slot (``position``) when the
    frame has positions, else the alphabetically first model; so the left/right bias of
    derived pairs is the bias towards the earlier slot.

    Args:
        rankings: Rankings frame (``prompt_id, rater, criterion, model, rank``; optional
            ``study, dimension, image_id, position``).
        criterion: Which criterion to convert; may be omitted when there is only one.

    Returns:
        A Pairs frame with ``study`` and ``dimension`` when present, ``criterion``, and
        ``left_image_id``/``right_image_id`` when the rankings have ``image_id``.

    Raises:
        ValueError: Missing columns, an empty frame, a rank that is not a number >= 1, a
            model ranked twice by one rater for one prompt, an unknown criterion, or several
            criteria without ``criterion``.
    """
    where = "pairs_from_rankings"
    df = _one_criterion(rankings, criterion, where)
    keys = [c for c in ("study", "prompt_id", "rater", "criterion") if c in df.columns]
    order = np.zeros(len(df))
    if "position" in df.columns:
        order = numeric_values(df, "position", where=where)
        if np.isnan(order).any():
            raise ValueError(f"{where}: column 'position' is empty in row "
                             f"{_row_label(df, np.isnan(order))!r}")
    df = df.assign(_order=order, _model=df["model"].astype(str))
    carry = [c for c in ("_model", "rank", "_order", "image_id") if c in df.columns]
    both = df[[*keys, *carry]].merge(df[[*keys, *carry]], on=keys, suffixes=("_l", "_r"))
    first = (both["_order_l"] < both["_order_r"]) | (
        (both["_order_l"] == both["_order_r"]) & (both["_model_l"] < both["_model_r"]))
    both = both[first.to_numpy()]
    out = both[keys].reset_index(drop=True)
    out["left_model"] = both["_model_l"].to_numpy()
    out["right_model"] = both["_model_r"].to_numpy()
    rl, rr = both["rank_l"].to_numpy(), both["rank_r"].to_numpy()
    out["outcome"] = np.select([rl < rr, rl > rr], ["left", "right"], "tie")
    if "image_id" in df.columns:
        out["left_image_id"] = both["image_id_l"].to_numpy()
        out["right_image_id"] = both["image_id_r"].to_numpy()
    if "dimension" in df.columns:
        dims = df.drop_duplicates(keys)[[*keys, "dimension"]]
        out = out.merge(dims, on=keys, how="left")
    return out


def _one_criterion(rankings: object, criterion: str | None, where: str) -> pd.DataFrame:
    """The checked rows of one criterion, ranks as floats."""
    df = require_columns(rankings, RANKING_COLUMNS, where=where)
    require_nonempty(df, where=where)
    ranks = numeric_values(df, "rank", where=where)
    bad = np.isnan(ranks) | (ranks < 1)
    if bad.any():
        raise ValueError(f"{where}: rank {df['rank'][bad].tolist()[0]!r} in row "
                         f"{_row_label(df, bad)!r} is not a number >= 1 (1 = best)")
    criteria = sorted(df["criterion"].astype(str).unique())
    if criterion is None and len(criteria) > 1:
        raise ValueError(f"{where}: the rankings hold several criteria {criteria}; "
                         "pass criterion=")
    chosen = criteria[0] if criterion is None else criterion
    check_choice(chosen, criteria, name="criterion")
    df = df.assign(rank=ranks)
    df = df[(df["criterion"].astype(str) == chosen).to_numpy()]
    keys = [c for c in ("study", "prompt_id", "rater") if c in df.columns]
    duplicated_keys(df, [*keys, "model"], where=where,
                    what="a rater's rank of a model for one prompt")
    return df
