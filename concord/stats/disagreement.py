"""Where raters disagree most: one row per item, most disagreed first (adjudication view).

Pure functions over the tidy frames of ``docs/data-model.md``; no I/O.

- Scores: per image × criterion, the ``range`` (max − min) and the population standard
  deviation ``std`` of the raters' values; sorted by range, then std.
- Rankings: per ranking set (prompt) × criterion, Kendall's coefficient of concordance W
  corrected for tied ranks (:func:`concord.stats.rankings.kendalls_w_by_prompt`);
  ``disagreement`` is ``1 − W`` (0: every rater gave the same order, 1: none at all).
- Pairs: per scheduled pair × criterion, the share of the most common answer, with each
  left/right answer named by the model it chose (placement does not matter);
  ``disagreement`` is ``1 − majority share`` (0: unanimous; 0.5: a 1–1 split).

Items with fewer than ``min_raters`` answers are left out: one answer cannot disagree.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._validate import require_columns
from concord.stats.rankings import kendalls_w_by_prompt

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


def rank_disagreement(rankings: pd.DataFrame, *, min_raters: int = 2) -> pd.DataFrame:
    """``1 − W`` per ranking set × criterion (:data:`RANK_COLUMNS`), most disagreed first.

    W is :func:`concord.stats.rankings.kendalls_w_by_prompt` (tie-corrected, over the
    raters who ranked the whole set), the same number the dashboard reports.

    Args:
        rankings: The Rankings frame (``prompt_id, rater, criterion, model, rank``).
        min_raters: Fewest raters a set needs to be listed.
    """
    require_columns(rankings, ["prompt_id", "rater", "criterion", "model", "rank"],
                    where="rank_disagreement")
    if rankings.empty:
        return pd.DataFrame(columns=RANK_COLUMNS)
    w = kendalls_w_by_prompt(rankings)
    w = w[(w["n_raters"] >= min_raters) & w["w"].notna()]
    out = pd.DataFrame({"prompt_id": w["prompt_id"].astype(object),
                        "criterion": w["criterion"].astype(object),
                        "n_raters": w["n_raters"], "n_images": w["n_models"],
                        "kendall_w": w["w"], "disagreement": 1.0 - w["w"]})
    out = out.sort_values(["disagreement", "prompt_id"], ascending=[False, True],
                          kind="stable")
    return out[RANK_COLUMNS].reset_index(drop=True)


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
