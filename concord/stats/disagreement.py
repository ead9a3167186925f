"""Where raters disagree most: one row per item, most disagreed first (adjudication view).

Pure functions over the tidy frames of ``docs/data-model.md``; no I/O.

- Scores: per image × criterion, the ``range`` (max − min) and the population standard
  deviation ``std`` of the raters' values; sorted by range, then std.
- Rankings: per ranking set (prompt) × criterion, Kendall's coefficient of concordance W
  with the correction for tied ranks (Kendall & Babington Smith 1939; Siegel & Castellan
  1988, eq. 9.16), over the images every rater of the set ranked; ``disagreement`` is
  ``1 − W`` (0: every rater gave the same order, 1: no concordance at all).
- Pairs: per scheduled pair × criterion, the share of the most common answer, with each
  left/right answer named by the model it chose (placement does not matter);
  ``disagreement`` is ``1 − majority share`` (0: unanimous; 0.5: a 1–1 split).

Items with fewer than ``min_raters`` answers are left out: one answer cannot disagree.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._validate import require_columns

SCORE_COLUMNS = ["image_id", "prompt_id", "model", "sample", "criterion", "n_raters",
                 "mean", "std", "range", "disagreement"]
RANK_COLUMNS = ["prompt_id", "criterion", "n_raters", "n_images", "kendall_w",
                "disagreement"]
PAIR_COLUMNS = ["pair_id", "prompt_id", "criterion", "n_raters", "majority", "majority_share",
                "disagreement"]


def score_disagreement(ratings: pd.DataFrame, *, min_raters: int = 2) -> pd.DataFrame:
    """Spread of the raters' values per image × criterion (:data:`SCORE_COLUMNS`).

    Args:
        ratings: The Ratings frame (``image_id, prompt_id, model, sample, rater,
            criterion, value``), one current value per image × rater × criterion.
        min_raters: Fewest raters an image needs to be listed.

    Returns:
        ``disagreement`` equals ``range``; rows sorted by range, then std, descending.
    """
    require_columns(ratings, ["image_id", "prompt_id", "model", "sample", "criterion",
                              "value"], where="score_disagreement")
    keys = ["image_id", "prompt_id", "model", "sample", "criterion"]
    grouped = ratings.groupby(keys, observed=True, sort=False)["value"]
    out = grouped.agg(n_raters="count", mean="mean", lo="min", hi="max",
                      std=lambda v: float(np.std(v.to_numpy(float)))).reset_index()
    out = out[out["n_raters"] >= min_raters]
    out["range"] = out["hi"] - out["lo"]
    out["disagreement"] = out["range"]
    out = out.sort_values(["range", "std", "prompt_id", "model"],
                          ascending=[False, False, True, True], kind="stable")
    return out[SCORE_COLUMNS].reset_index(drop=True)


def kendall_w(ranks: np.ndarray) -> float:
    """Kendall's W of an ``m × n`` matrix of ranks (rows: raters, columns: items; ties as
    average ranks), corrected for ties. NaN when it is undefined (n < 2, m < 2, or every
    rater tied every item)."""
    ranks = np.asarray(ranks, dtype=float)
    m, n = ranks.shape
    if m < 2 or n < 2:
        return float("nan")
    # Re-rank each row 1..n (averages for ties) so any rank scale gives the same W.
    ranked = np.vstack([pd.Series(row).rank(method="average").to_numpy() for row in ranks])
    sums = ranked.sum(axis=0)
    s = float(((sums - sums.mean()) ** 2).sum())
    ties = 0.0
    for row in ranked:
        _, counts = np.unique(row, return_counts=True)
        ties += float((counts ** 3 - counts).sum())
    denominator = m * m * (n ** 3 - n) - m * ties
    return float("nan") if denominator <= 0 else 12.0 * s / denominator


def rank_disagreement(rankings: pd.DataFrame, *, min_raters: int = 2) -> pd.DataFrame:
    """``1 − W`` per ranking set × criterion (:data:`RANK_COLUMNS`), most disagreed first.

    Args:
        rankings: The Rankings frame (``prompt_id, rater, criterion, image_id, rank``).
        min_raters: Fewest raters a set needs to be listed.
    """
    require_columns(rankings, ["prompt_id", "rater", "criterion", "image_id", "rank"],
                    where="rank_disagreement")
    rows = []
    for (prompt, criterion), part in rankings.groupby(["prompt_id", "criterion"],
                                                      observed=True, sort=True):
        table = part.pivot_table(index="rater", columns="image_id", values="rank",
                                 aggfunc="first", observed=True).dropna(axis=1)
        if len(table) < min_raters or table.shape[1] < 2:
            continue
        w = kendall_w(table.to_numpy())
        rows.append({"prompt_id": prompt, "criterion": criterion, "n_raters": len(table),
                     "n_images": table.shape[1], "kendall_w": w, "disagreement": 1.0 - w})
    out = pd.DataFrame(rows, columns=RANK_COLUMNS)
    out = out.sort_values(["disagreement", "prompt_id"], ascending=[False, True],
                          kind="stable", na_position="last")
    return out.reset_index(drop=True)


def chosen(pairs: pd.DataFrame) -> pd.Series:
    """Each pair answer named by placement-free terms: the chosen model, or ``tie`` /
    ``both_bad``."""
    out = pairs["outcome"].astype(object).copy()
    out[pairs["outcome"] == "left"] = pairs.loc[pairs["outcome"] == "left", "left_model"]
    out[pairs["outcome"] == "right"] = pairs.loc[pairs["outcome"] == "right", "right_model"]
    return out


def pair_disagreement(pairs: pd.DataFrame, *, min_raters: int = 2) -> pd.DataFrame:
    """Split votes per pair × criterion (:data:`PAIR_COLUMNS`), most split first.

    Args:
        pairs: The Pairs frame (``pair_id, prompt_id, rater, criterion, left_model,
            right_model, outcome``).
        min_raters: Fewest answers a pair needs to be listed.
    """
    require_columns(pairs, ["pair_id", "prompt_id", "criterion", "left_model", "right_model",
                            "outcome"], where="pair_disagreement")
    votes = pairs.assign(choice=chosen(pairs))
    rows = []
    for (pair, prompt, criterion), part in votes.groupby(
            ["pair_id", "prompt_id", "criterion"], observed=True, sort=True):
        if len(part) < min_raters:
            continue
        counts = part["choice"].value_counts(sort=True)
        share = float(counts.iloc[0]) / len(part)
        top = sorted(counts.index[counts == counts.iloc[0]])
        rows.append({"pair_id": pair, "prompt_id": prompt, "criterion": criterion,
                     "n_raters": len(part), "majority": " / ".join(map(str, top)),
                     "majority_share": share, "disagreement": 1.0 - share})
    out = pd.DataFrame(rows, columns=PAIR_COLUMNS)
    out = out.sort_values(["disagreement", "pair_id"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)
