"""Inter-rater agreement on a matrix: Krippendorff's α, Fleiss' κ, Kendall's W, Spearman.

Every function takes a raters × items array (``numpy`` or a DataFrame; NaN = not rated);
:mod:`concord.stats.agreement.frames` applies them to the Ratings frame. Undefined cases
(fewer than two raters, a single category, no item rated twice) give NaN, never 0 or 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats import inter_rater

from concord.stats._validate import check_choice
from concord.stats.agreement import entries
from concord.stats.agreement.entries import Entries

LEVELS = ("nominal", "ordinal", "interval")


def _as_matrix(matrix: object, *, where: str) -> np.ndarray:
    data = np.asarray(matrix, dtype=float)
    if data.ndim != 2:
        raise ValueError(f"{where}: expected a 2-D raters × items matrix, got shape {data.shape}")
    return data

def value_counts(matrix: object) -> tuple[np.ndarray, np.ndarray]:
    """Per item, how many raters gave each distinct value.

    Returns:
        ``(counts, domain)``: an items × values count matrix and the sorted distinct values.
    """
    return entries.value_counts(Entries.from_matrix(_as_matrix(matrix, where="value_counts")))


def krippendorff_alpha(matrix: object, *, level: str = "ordinal") -> float:
    """Krippendorff's α of a raters × items matrix via the ``krippendorff`` package.

    Missing ratings are allowed; items with fewer than two ratings do not count.

    Args:
        matrix: Raters × items values, NaN where not rated.
        level: ``"nominal"``, ``"ordinal"``, ``"interval"`` or ``"ratio"``.

    Returns:
        α, or NaN when undefined (fewer than two raters or distinct values, or no item
        rated at least twice).

    Example:
        Two raters agree on two items of three: observed disagreement 2/6 against 3/5
        expected by chance, α = 1 − (1/3)/(3/5) = 4/9.

        >>> round(krippendorff_alpha([[1, 2, 1], [1, 2, 2]], level="nominal"), 4)
        0.4444
    """
    check_choice(level, (*LEVELS, "ratio"), name="level")
    if _as_matrix(matrix, where="krippendorff_alpha").shape[0] < 2:
        return float("nan")
    return alpha_from_counts(*value_counts(matrix), level)


def alpha_from_counts(counts: np.ndarray, domain: np.ndarray, level: str) -> float:
    """Krippendorff's α from an items × values count table (see :func:`value_counts`)."""
    pairable = counts.sum(axis=1) >= 2
    if counts.shape[1] < 2 or not pairable.any():
        return float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(krippendorff.alpha(value_counts=counts[pairable], value_domain=domain,
                                        level_of_measurement=level))


def percent_from_counts(counts: np.ndarray) -> float:
    """Percent agreement from an items × values count table: the mean over items rated at
    least twice of the share of agreeing rater pairs ``Σ_c n_c (n_c − 1) / (n (n − 1))``;
    NaN without such an item."""
    n = counts.sum(axis=1)
    pairs = n >= 2
    if not pairs.any():
        return float("nan")
    agreeing = (counts[pairs] * (counts[pairs] - 1)).sum(axis=1)
    return float(np.mean(agreeing / (n[pairs] * (n[pairs] - 1))))


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

    Example:
        Observed agreement 2/3, chance agreement 1/2: κ = (2/3 − 1/2) / (1 − 1/2) = 1/3.

        >>> round(fleiss_kappa([[1, 2, 1], [1, 2, 2]]), 4)
        0.3333
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
    return _fleiss_from_table(table)


def _fleiss_from_table(table: np.ndarray) -> float:
    if table.shape[0] == 0 or np.count_nonzero(table.sum(axis=0)) < 2:
        return float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(inter_rater.fleiss_kappa(table, method="fleiss"))


def fleiss_from_counts(counts: np.ndarray) -> float:
    """Fleiss' κ from an items × values count table (the table aggregate_raters builds)."""
    n_raters = _modal_raters(counts.sum(axis=1))
    if n_raters < 2:
        return float("nan")
    return _fleiss_from_table(counts[counts.sum(axis=1) == n_raters])


def kendalls_w(ranks: object) -> float:
    """Kendall's coefficient of concordance W with the tie correction.

    ``W = 12 S / (m² (n³ − n) − m Σ_j T_j)``, with ``S`` the sum of squared deviations of
    the objects' rank sums from ``m (n + 1) / 2`` and ``T_j = Σ (t³ − t)`` over the tie
    groups of rater ``j``. Each row is re-ranked (average ranks), so scores work too.

    Args:
        ranks: m raters × n objects, complete (no NaN).

    Returns:
        W in [0, 1], or NaN for fewer than two raters or objects, or all-tied rankings.

    Example:
        >>> kendalls_w([[1, 2, 3], [1, 2, 3]])  # the same order
        1.0
        >>> kendalls_w([[1, 2, 3], [3, 2, 1]])  # opposite orders: equal rank sums
        0.0
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


def mean_pairwise_spearman(matrix: object) -> float:
    """Mean Spearman ρ over all pairs of raters (items both rated; NaN pairs skipped).

    Only raters who rated a common item are paired (``concord.stats.agreement.entries``), so a
    sparse crowd matrix of thousands of raters costs what its ratings cost.

    Returns:
        The mean, or NaN with fewer than two raters or no defined pair.
    """
    data = _as_matrix(matrix, where="mean_pairwise_spearman")
    return entries.mean_pairwise_spearman(Entries.from_matrix(data))


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
    names = list(raters)
    if len(names) != data.shape[0]:
        raise ValueError(f"leave_one_out: {len(names)} rater names for {data.shape[0]} rows")
    present = ~np.isnan(data)
    total, count = np.where(present, data, 0.0).sum(axis=0), present.sum(axis=0)
    if present.all() and data.shape[0] > 1:
        # Complete data: every rater shares all items, so all raters go through at once.
        rest = (total[None, :] - data) / (data.shape[0] - 1)
        out = {"spearman": _rowwise_rank_corr(data, rest), "pearson": _rowwise_corr(data, rest)}
        return pd.DataFrame({"rater": names, **out, "n_items": data.shape[1]})
    rows = []
    for r, name in enumerate(names):
        others = count - present[r]
        mask = present[r] & (others > 0)
        rest = (total[mask] - data[r, mask]) / others[mask]
        rows.append({"rater": name, **_pair_corr(data[r, mask], rest), "n_items": int(mask.sum())})
    return pd.DataFrame(rows, columns=["rater", "spearman", "pearson", "n_items"])


def _rowwise_corr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc, yc = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=1) / np.sqrt((xc**2).sum(axis=1) * (yc**2).sum(axis=1))
    r[x.shape[1] < 3] = np.nan
    return r


def _rowwise_rank_corr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _rowwise_corr(stats.rankdata(x, axis=1), stats.rankdata(y, axis=1))


def _pair_corr(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"spearman": float("nan"), "pearson": float("nan")}
    return {"spearman": float(stats.spearmanr(x, y)[0]), "pearson": float(stats.pearsonr(x, y)[0])}
