"""Inter-rater agreement: Krippendorff's α, Fleiss' κ, Kendall's W, Spearman, gold items.

Matrix functions take a raters × items array (``numpy`` or a DataFrame; NaN = not rated).
Frame functions take the Ratings frame of ``docs/data-model.md``. Undefined cases (fewer
than two raters, a single category, no item rated twice) give NaN, never 0 or 1.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence

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
    # Hash-based factorize: few distinct values, so this beats sorting every rating.
    codes, domain = pd.factorize(data[present], sort=True)
    items = np.nonzero(present)[1]
    flat = items * len(domain) + codes
    counts = np.bincount(flat, minlength=data.shape[1] * len(domain))
    return counts.reshape(data.shape[1], len(domain)), np.asarray(domain, dtype=float)


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
    if _as_matrix(matrix, where="krippendorff_alpha").shape[0] < 2:
        return float("nan")
    return _alpha_from_counts(*value_counts(matrix), level)


def _alpha_from_counts(counts: np.ndarray, domain: np.ndarray, level: str) -> float:
    pairable = counts.sum(axis=1) >= 2
    if counts.shape[1] < 2 or not pairable.any():
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
    return _fleiss_from_table(table)


def _fleiss_from_table(table: np.ndarray) -> float:
    if table.shape[0] == 0 or np.count_nonzero(table.sum(axis=0)) < 2:
        return float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(inter_rater.fleiss_kappa(table, method="fleiss"))


def _fleiss_from_counts(counts: np.ndarray) -> float:
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


def group_matrices(
    ratings: pd.DataFrame, by: Sequence[str], item: Sequence[str] | None = None
) -> Iterator[tuple[dict, np.ndarray, list]]:
    """Yield ``(group keys, raters × items matrix, rater names)`` per group of ``by``.

    Built from integer codes of the whole frame (no per-group pivot).

    Raises:
        ValueError: A rater rated the same item twice within a group.
    """
    where = "group_matrices"
    keys = list(item) if item is not None else image_keys(ratings)
    require_columns(ratings, ["rater", "value", *by, *keys], where=where)
    values = numeric_values(ratings, "value", where=where)
    df = ratings[~np.isnan(values)]
    values = values[~np.isnan(values)]
    if df.empty:
        return
    gcode = group_codes(df, list(by))
    rater, rater_names = pd.factorize(df["rater"], sort=True)
    item_code = group_codes(df, keys)
    order = np.argsort(gcode, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(gcode[order]) != 0, True])
    head = df.iloc[order[bounds[:-1]]][list(by)].to_dict(orient="records")
    for g in range(len(bounds) - 1):
        idx = order[bounds[g]:bounds[g + 1]]
        r_dense, r_used = _dense_codes(rater[idx], len(rater_names))
        i_dense, i_used = _dense_codes(item_code[idx], int(item_code.max()) + 1)
        flat = r_dense * len(i_used) + i_dense
        if np.bincount(flat).max() > 1:
            raise ValueError(f"{where}: a rater rated the same item twice in group {head[g]}; "
                             "add the distinguishing column to `by`")
        data = np.full((len(r_used), len(i_used)), np.nan)
        data.ravel()[flat] = values[idx]
        yield head[g], data, [rater_names[k] for k in r_used]


def _dense_codes(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    present = np.zeros(size, dtype=bool)
    present[codes] = True
    used = np.flatnonzero(present)
    return (np.cumsum(present) - 1)[codes], used


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
    require_columns(ratings, [*RATING_COLUMNS, *by], where="agreement_table")
    for level in levels:
        check_choice(level, (*LEVELS, "ratio"), name="level")
    rows = [{**head, **agreement_row(data, levels)}
            for head, data, _ in group_matrices(ratings, by, item)]
    return pd.DataFrame(rows)


def agreement_row(data: np.ndarray, levels: Sequence[str] = LEVELS) -> dict[str, float]:
    """The statistics of one :func:`agreement_table` row for a raters × items matrix."""
    counts, domain = value_counts(data)
    row: dict[str, float] = {}
    for level in levels:
        row[f"alpha_{level}"] = (_alpha_from_counts(counts, domain, level)
                                 if data.shape[0] >= 2 else float("nan"))
    row["fleiss_kappa"] = _fleiss_from_counts(counts)
    row["mean_spearman"] = mean_pairwise_spearman(data)
    row.update(n_raters=data.shape[0], n_items=data.shape[1],
               n_ratings=int(np.isfinite(data).sum()))
    return row


def rater_quality(
    ratings: pd.DataFrame, *, by: Sequence[str] = ("criterion",),
    item: Sequence[str] | None = None,
) -> pd.DataFrame:
    """:func:`leave_one_out` for every group of ``by`` (default: per criterion).

    Returns:
        Columns ``by``, ``rater, spearman, pearson, n_items``.
    """
    require_columns(ratings, [*RATING_COLUMNS, *by], where="rater_quality")
    frames = [leave_one_out(data, raters=names).assign(**head)
              for head, data, names in group_matrices(ratings, by, item)]
    cols = [*by, "rater", "spearman", "pearson", "n_items"]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)
