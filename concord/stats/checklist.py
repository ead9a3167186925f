"""Agreement per checklist condition, and how often raters override the derived value.

Input: the Ticks frame, one row per rating × condition, with the columns
``image_id, rater, criterion, condition, ticked`` (1/0) and, for :func:`overrides`,
``derived, final`` (one value per rating, repeated on its condition rows). Each
condition is a two-category nominal judgment of an image, so its agreement is
Krippendorff's α (nominal) over the raters who ticked or left it, and the percent
agreement: over images with at least two raters, the share of agreeing rater pairs,
averaged over those images.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._validate import require_columns
from concord.stats.agreement.entries import Entries, value_counts
from concord.stats.agreement.matrices import alpha_from_counts, percent_from_counts

TICK_COLUMNS = ("image_id", "rater", "criterion", "condition", "ticked")
CONDITION_COLUMNS = ["criterion", "condition", "n_images", "n_raters", "n_ratings",
                     "share_ticked", "percent_agreement", "alpha_nominal"]
OVERRIDE_COLUMNS = ["criterion", "n_ratings", "n_overrides", "share_overridden"]


def percent_agreement(matrix: np.ndarray) -> float:
    """Mean over items (columns) with ≥ 2 ratings of the share of agreeing rater pairs.

    Args:
        matrix: Raters × items values, NaN where not rated.

    Returns:
        The percent agreement in [0, 1], or NaN when no item has two ratings.
    """
    counts, _ = value_counts(Entries.from_matrix(np.asarray(matrix, dtype=float)))
    return percent_from_counts(counts)


def condition_agreement(ticks: pd.DataFrame) -> pd.DataFrame:
    """Per criterion × condition: images rated twice or more, raters, ratings, the share
    ticked, percent agreement and Krippendorff's α (nominal); NaN where undefined.

    Each condition's ticks are taken as (rater, image, value) triples, never as a raters ×
    images matrix (a crowd study's would be mostly empty and gigabytes large).

    Returns:
        :data:`CONDITION_COLUMNS`, in the order the conditions first appear.
    """
    require_columns(ticks, TICK_COLUMNS, where="condition_agreement")
    rows = []
    for (criterion, condition), part in ticks.groupby(["criterion", "condition"], sort=False,
                                                      observed=True):
        cells = _entries(part)
        counts, domain = value_counts(cells)
        rated = counts.sum(axis=1)
        rows.append({
            "criterion": criterion, "condition": condition,
            "n_images": int((rated >= 2).sum()), "n_raters": int(part["rater"].nunique()),
            "n_ratings": len(part), "share_ticked": float(part["ticked"].mean()),
            "percent_agreement": percent_from_counts(counts),
            "alpha_nominal": (alpha_from_counts(counts, domain, "nominal")
                              if cells.n_raters >= 2 else float("nan")),
        })
    return pd.DataFrame(rows, columns=CONDITION_COLUMNS)


def _entries(part: pd.DataFrame) -> Entries:
    """One condition's ticks, the first of a rater's for an image (as a pivot takes it)."""
    ticked = part["ticked"].to_numpy(dtype=float)
    one = part[~np.isnan(ticked)].drop_duplicates(["rater", "image_id"])
    rater, raters = pd.factorize(one["rater"], sort=True)
    image, images = pd.factorize(one["image_id"], sort=True)
    return Entries(rater, image, one["ticked"].to_numpy(dtype=float), len(raters),
                   len(images))


def overrides(ticks: pd.DataFrame) -> pd.DataFrame:
    """Per criterion: ratings with a checklist, how many the rater overrode (final ≠
    derived), and their share.

    Returns:
        :data:`OVERRIDE_COLUMNS`.
    """
    require_columns(ticks, ("image_id", "rater", "criterion", "derived", "final"),
                    where="overrides")
    one = ticks.drop_duplicates(["image_id", "rater", "criterion"])
    rows = []
    for criterion, part in one.groupby("criterion", sort=False, observed=True):
        n_over = int((part["final"] != part["derived"]).sum())
        rows.append({"criterion": criterion, "n_ratings": len(part), "n_overrides": n_over,
                     "share_overridden": n_over / len(part)})
    return pd.DataFrame(rows, columns=OVERRIDE_COLUMNS)
