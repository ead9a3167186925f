"""Inter-rater agreement: Krippendorff's α, Fleiss' κ, Kendall's W, Spearman, gold items.

Matrix functions take a raters × items array (``numpy`` or a DataFrame; NaN = not rated).
Frame functions take the Ratings frame of ``docs/data-model.md``. Undefined cases (fewer
than two raters, a single category, no item rated twice) give NaN, never 0 or 1.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats import inter_rater

from concord.stats._validate import (
    check_choice,
    numeric_values,
    require_columns,
)
from concord.stats.human import RATING_COLUMNS, group_codes, image_keys

LEVELS = ("nominal", "ordinal", "interval")


def _as_matrix(matrix: object, *, where: str) -> np.ndarray:
    data = np.asarray(matrix, dtype=float)
    if data.ndim != 2:
        raise ValueError(f"{where}: expected a 2-D raters × items matrix, got shape {data.shape}")
    return data


def rating_matrix(
    ratings: pd.DataFrame, *, item: Sequence[str] | None = None
) -> pd.DataFrame:
    """Pivot ratings of ONE criterion into a raters × items matrix (NaN = not rated).

    Args:
        ratings: Ratings frame (``prompt_id, model, rater, value`` + optional image keys).
        item: Columns that identify an item; default the image keys
            (``prompt_id, model`` and ``study, sample, image_id`` when present).

    Returns:
        DataFrame indexed by rater, one column per item (sorted).

    Raises:
        ValueError: Missing columns, or a rater rating the same item twice (e.g. two
            criteria mixed in one frame).
    """
    where = "rating_matrix"
    require_columns(ratings, ["rater", "value", *(item or ["prompt_id", "model"])], where=where)
    keys = list(item) if item is not None else image_keys(ratings)
    values = numeric_values(ratings, "value", where=where)
    dup = ratings.duplicated([*keys, "rater"])
    if dup.any():
        raise ValueError(f"{where}: rater {ratings.loc[dup, 'rater'].iloc[0]!r} rated an item "
                         "twice; select one criterion first")
    frame = ratings[[*keys, "rater"]].assign(value=values)
    return frame.pivot_table(index="rater", columns=keys, values="value", aggfunc="first",
                             dropna=False, observed=True)


def value_counts(matrix: object) -> tuple[np.ndarray, np.ndarray]:
    """Per item, how many raters gave each distinct value.

    Returns:
        ``(counts, domain)``: an items × values count matrix and the sorted distinct values.
    """
    data = _as_matrix(matrix, where="value_counts")
    present = ~np.isnan(data)
    domain, codes = np.unique(data[present], return_inverse=True)
    items = np.nonzero(present)[1]
    flat = items * len(domain) + codes.ravel()
    counts = np.bincount(flat, minlength=data.shape[1] * len(domain))
    return counts.reshape(data.shape[1], len(domain)), domain


def krippendorff_alpha(matrix: object, *, level: str = "ordinal") -> float:
    """Krippendorff's α of a raters × items matrix via the ``krippendorff`` package.

    Missing ratings are allowed; items with fewer than two ratings do not count.

    Args:
        matrix: Raters × items values, NaN where not rated.
        level: ``"nominal"``, ``"ordinal"``, ``"interval"`` or ``"ratio"``.

    Returns:
        α, or NaN when undefined (fewer than two raters or distinct values, or no item
        rated at least twice).
    """
    check_choice(level, (*LEVELS, "ratio"), name="level")
    counts, domain = value_counts(matrix)
    pairable = counts.sum(axis=1) >= 2
    if counts.shape[1] < 2 or not pairable.any() or _as_matrix(matrix, where="alpha").shape[0] < 2:
        return float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(krippendorff.alpha(value_counts=counts[pairable], value_domain=domain,
                                        level_of_measurement=level))


def _modal_raters(n_per_item: np.ndarray) -> int:
    # Fleiss' κ needs the same number of raters on every item; we keep the items rated by
    # the most common number of raters (ties go to the larger number), so one missing
    # rating drops one item rather than the whole computation.
    rated = n_per_item[n_per_item >= 2]
    if rated.size == 0:
        return 0
    sizes, freq = np.unique(rated, return_counts=True)
    return int(sizes[freq == freq.max()].max())


def fleiss_kappa(matrix: object) -> float:
    """Fleiss' κ with the distinct values as categories (statsmodels, ``method="fleiss"``).

    Only items rated by the modal number of raters are used (see ``docs/stats.md``).

    Args:
        matrix: Raters × items values, NaN where not rated.

    Returns:
        κ, or NaN when undefined (fewer than two raters per item, or a single category).
    """
    data = _as_matrix(matrix, where="fleiss_kappa").T
    present = ~np.isnan(data)
    n_raters = _modal_raters(present.sum(axis=1))
    keep = present.sum(axis=1) == n_raters
    if n_raters < 2 or not keep.any():
        return float("nan")
    rows = data[keep]
    # Move each item's ratings to the first n_raters columns (NaNs sort last).
    compact = np.sort(rows, axis=1)[:, :n_raters]
    table, _ = inter_rater.aggregate_raters(compact)
    if np.count_nonzero(table.sum(axis=0)) < 2:
        return float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(inter_rater.fleiss_kappa(table, method="fleiss"))


def kendalls_w(ranks: object) -> float:
    """Kendall's coefficient of concordance W with the tie correction.

    ``W = 12 S / (m² (n³ − n) − m Σ_j T_j)``, with ``S`` the sum of squared deviations of
    the objects' rank sums from ``m (n + 1) / 2`` and ``T_j = Σ (t³ − t)`` over the tie
    groups of rater ``j``. Each row is re-ranked (average ranks), so scores work too.

    Args:
        ranks: m raters × n objects, complete (no NaN).

    Returns:
        W in [0, 1], or NaN for fewer than two raters or objects, or all-tied rankings.
    """
    data = _as_matrix(ranks, where="kendalls_w")
    if np.isnan(data).any():
        raise ValueError("kendalls_w: rankings must be complete (found NaN)")
    m, n = data.shape
    if m < 2 or n < 2:
        return float("nan")
    r = stats.rankdata(data, axis=1)
    s = float(((r.sum(axis=0) - m * (n + 1) / 2.0) ** 2).sum())
    ties = 0.0
    for row in data:
        t = np.unique(row, return_counts=True)[1].astype(float)
        ties += float((t**3 - t).sum())
    denom = m**2 * (n**3 - n) - m * ties
    return float("nan") if denom <= 0 else 12.0 * s / denom


def _spearman_matrix(data: np.ndarray) -> np.ndarray:
    """Raters × raters Spearman matrix; pairwise-complete items when ratings are missing."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        if not np.isnan(data).any():
            return np.atleast_2d(np.corrcoef(stats.rankdata(data, axis=1)))
        frame = pd.DataFrame(data.T)
        return frame.corr(method="spearman", min_periods=3).to_numpy()


def mean_pairwise_spearman(matrix: object) -> float:
    """Mean Spearman ρ over all pairs of raters (items both rated; NaN pairs skipped).

    Returns:
        The mean, or NaN with fewer than two raters or no defined pair.
    """
    data = _as_matrix(matrix, where="mean_pairwise_spearman")
    if data.shape[0] < 2:
        return float("nan")
    rho = _spearman_matrix(data)[np.triu_indices(data.shape[0], 1)]
    return float(np.nanmean(rho)) if np.isfinite(rho).any() else float("nan")


def leave_one_out(matrix: object, raters: Sequence[str] | None = None) -> pd.DataFrame:
    """Each rater against the mean of the other raters (a rater-quality signal).

    Args:
        matrix: Raters × items values (a DataFrame's index names the raters).
        raters: Rater names; default the DataFrame index or 0..m-1.

    Returns:
        Columns ``rater, spearman, pearson, n_items`` (items rated by the rater and at
        least one other). Correlations are NaN when undefined (constant, < 3 items).
    """
    data = _as_matrix(matrix, where="leave_one_out")
    if raters is None:
        raters = list(matrix.index) if isinstance(matrix, pd.DataFrame) else range(len(data))
    present = ~np.isnan(data)
    total, count = np.where(present, data, 0.0).sum(axis=0), present.sum(axis=0)
    rows = []
    for r, name in enumerate(raters):
        others = count - present[r]
        mask = present[r] & (others > 0)
        rest = (total[mask] - data[r, mask]) / others[mask]
        rows.append({"rater": name, **_pair_corr(data[r, mask], rest), "n_items": int(mask.sum())})
    return pd.DataFrame(rows, columns=["rater", "spearman", "pearson", "n_items"])


def _pair_corr(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"spearman": float("nan"), "pearson": float("nan")}
    return {"spearman": float(stats.spearmanr(x, y)[0]), "pearson": float(stats.pearsonr(x, y)[0])}


def gold_accuracy(ratings: pd.DataFrame, gold: pd.DataFrame) -> pd.DataFrame:
    """Share of gold (attention-check) items each rater scored within tolerance.

    Args:
        ratings: Ratings with ``image_id, criterion, rater, value``.
        gold: Expectations with ``image_id, criterion, expected, tolerance``; a rating is
            correct when ``|value − expected| ≤ tolerance``.

    Returns:
        Columns ``rater, n_gold, n_correct, accuracy`` for raters with gold ratings.
    """
    where = "gold_accuracy"
    require_columns(ratings, ["image_id", "criterion", "rater", "value"], where=where)
    require_columns(gold, ["image_id", "criterion", "expected", "tolerance"], where=where)
    if gold.duplicated(["image_id", "criterion"]).any():
        raise ValueError(f"{where}: gold has two expectations for one (image_id, criterion)")
    tol = numeric_values(gold, "tolerance", where=where)
    if (tol < 0).any() or np.isnan(tol).any():
        raise ValueError(f"{where}: tolerance must be >= 0, got {gold['tolerance'].tolist()}")
    merged = ratings[["image_id", "criterion", "rater", "value"]].merge(
        gold[["image_id", "criterion", "expected", "tolerance"]], on=["image_id", "criterion"])
    diff = (numeric_values(merged, "value", where=where)
            - numeric_values(merged, "expected", where=where))
    # A small slack so that 0.1 + 0.2 style float noise does not fail an exact match.
    merged["correct"] = np.abs(diff) <= merged["tolerance"].to_numpy(dtype=float) + 1e-9
    out = merged.groupby("rater", sort=True).agg(n_gold=("correct", "size"),
                                                 n_correct=("correct", "sum")).reset_index()
    out["accuracy"] = out["n_correct"] / out["n_gold"]
    return out


def agreement_table(
    ratings: pd.DataFrame,
    *,
    by: Sequence[str] = ("criterion",),
    levels: Sequence[str] = LEVELS,
    item: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Agreement statistics per group of the Ratings frame.

    Args:
        ratings: Ratings frame (``prompt_id, model, rater, criterion, value``).
        by: Grouping columns; each group must hold one rating per rater and item.
            ``("criterion",)`` is a whole study, ``("model", "criterion")`` per model.
        levels: Krippendorff α levels to compute.
        item: Item columns (default: image keys).

    Returns:
        One row per group: ``by``, ``alpha_<level>`` for each level, ``fleiss_kappa``,
        ``mean_spearman``, ``n_raters``, ``n_items``, ``n_ratings``.
    """
    where = "agreement_table"
    by = list(by)
    require_columns(ratings, [*RATING_COLUMNS, *by], where=where)
    for level in levels:
        check_choice(level, (*LEVELS, "ratio"), name="level")
    keys = list(item) if item is not None else image_keys(ratings)
    values = numeric_values(ratings, "value", where=where)
    df = ratings.assign(value=values)[~np.isnan(values)]
    gcode = group_codes(df, by)
    rows = []
    for _, part in df.groupby(gcode, sort=True):
        rows.append({**part.iloc[0][by].to_dict(), **_agreement_row(part, keys, levels)})
    return pd.DataFrame(rows)


def _agreement_row(part: pd.DataFrame, keys: list[str], levels: Sequence[str]) -> dict:
    data = _dense(part, keys)
    row: dict[str, float | int] = {
        f"alpha_{level}": krippendorff_alpha(data, level=level) for level in levels}
    row["fleiss_kappa"] = fleiss_kappa(data)
    row["mean_spearman"] = mean_pairwise_spearman(data)
    row.update(n_raters=data.shape[0], n_items=data.shape[1], n_ratings=len(part))
    return row


def _dense(part: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Raters × items matrix of one group built from integer codes (faster than a pivot)."""
    rater, _ = pd.factorize(part["rater"], sort=True)
    item = group_codes(part, keys)
    data = np.full((int(rater.max()) + 1, int(item.max()) + 1), np.nan)
    flat = rater.astype(np.int64) * data.shape[1] + item
    if np.bincount(flat).max() > 1:
        first = part.iloc[0].to_dict()
        raise ValueError("agreement_table: a rater rated the same item twice within a group; "
                         f"add the distinguishing column to `by` (group starts {first})")
    data.ravel()[flat] = part["value"].to_numpy(dtype=float)
    return data
