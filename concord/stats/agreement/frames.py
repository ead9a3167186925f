"""Agreement over the Ratings frame: per-group tables, rater quality and gold items.

Input is the Ratings frame of ``docs/data-model.md`` (``prompt_id, model, rater,
criterion, value`` + optional image keys); the statistics come from
:mod:`concord.stats.agreement.matrices`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from concord.stats._codes import RATING_COLUMNS, first_rows, group_codes, image_keys
from concord.stats._resample import prompt_codes
from concord.stats._validate import (
    check_choice,
    check_fraction,
    check_positive_int,
    numeric_values,
    require_columns,
)
from concord.stats.agreement import entries
from concord.stats.agreement.entries import Entries
from concord.stats.agreement.interval_alpha import IntervalBlock, interval_alpha, is_continuous
from concord.stats.agreement.intervals import AgreementBlock, agreement_intervals
from concord.stats.agreement.matrices import (
    LEVELS,
    alpha_from_counts,
    fleiss_from_counts,
    leave_one_out,
)
from concord.stats.agreement.reliability import KAPPA_FIELDS, icc2, weighted_kappa


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
    rater, names = pd.factorize(ratings["rater"], sort=True)
    item = group_codes(ratings, keys)
    data = np.full((len(names), int(item.max()) + 1 if len(item) else 0), np.nan)
    data[rater, item] = values
    columns = pd.MultiIndex.from_frame(ratings.iloc[first_rows(item)][keys])
    return pd.DataFrame(data, index=pd.Index(names, name="rater"), columns=columns)


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

    Raises:
        ValueError: A rater rated the same item twice within a group.
    """
    for head, cells, names in group_entries(ratings, by, item):
        yield head, cells.matrix(), names


def group_entries(
    ratings: pd.DataFrame, by: Sequence[str], item: Sequence[str] | None = None,
    *, units: bool = False,
) -> Iterator[tuple[dict, Entries, list]]:
    """Yield ``(group keys, the group's ratings as Entries, rater names)`` per group of
    ``by``, built from integer codes of the whole frame (no per-group pivot, no matrix).
    ``units=True`` also gives each item's prompt code (``Entries.unit``).

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
    prompt = prompt_codes(df["prompt_id"])[0] if units else None
    order = np.argsort(gcode, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(gcode[order]) != 0, True])
    head = df.iloc[order[bounds[:-1]]][list(by)].to_dict(orient="records")
    for g in range(len(bounds) - 1):
        idx = order[bounds[g]:bounds[g + 1]]
        r_dense, r_used = _dense_codes(rater[idx], len(rater_names))
        i_dense, i_used = _dense_codes(item_code[idx], int(item_code.max()) + 1)
        # Twice the same rater and item: equal neighbours once sorted (a count per cell
        # would need raters × items of memory, a crowd study's billions).
        flat = np.sort(r_dense * len(i_used) + i_dense)
        if (flat[1:] == flat[:-1]).any():
            raise ValueError(f"{where}: a rater rated the same item twice in group {head[g]}; "
                             "add the distinguishing column to `by`")
        unit = None
        if prompt is not None:
            unit = np.empty(len(i_used), dtype=np.int64)
            unit[i_dense] = prompt[idx]
        yield (head[g], Entries(r_dense, i_dense, values[idx], len(r_used), len(i_used),
                                unit), [rater_names[k] for k in r_used])


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
    n_boot: int | None = None,
    seed: int = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """Agreement statistics per group of the Ratings frame.

    Args:
        ratings: Ratings frame (``prompt_id, model, rater, criterion, value``).
        by: Grouping columns; each group must hold one rating per rater and item.
            ``("criterion",)`` is a whole study, ``("model", "criterion")`` per model.
        levels: Krippendorff α levels to compute.
        item: Item columns (default: image keys).
        n_boot: Prompt-bootstrap resamples of α and κ (:mod:`concord.stats.agreement.intervals`);
            None: no intervals.
        seed, ci: Seed and level of those intervals.

    Returns:
        One row per group: ``by``, ``alpha_<level>`` for each level, ``fleiss_kappa``,
        ``mean_spearman``, the ICC and weighted-κ fields of
        :mod:`concord.stats.agreement.reliability`, ``n_raters``, ``n_items``, ``n_ratings``; with
        ``n_boot``, ``alpha_<level>_ci_boot_low/high`` and ``fleiss_kappa_ci_boot_low/high``.
    """
    require_columns(ratings, [*RATING_COLUMNS, *by], where="agreement_table")
    for level in levels:
        check_choice(level, (*LEVELS, "ratio"), name="level")
    if n_boot is not None:
        n_boot = check_positive_int(n_boot, name="n_boot")
        check_fraction(ci, name="ci")
    rows, blocks = [], []
    for head, cells, _ in group_entries(ratings, by, item, units=n_boot is not None):
        rows.append({**head, **agreement_row(cells, levels, ci=ci)})
        if n_boot is not None:
            block = IntervalBlock if is_continuous(cells) else AgreementBlock
            blocks.append(block(cells, cells.unit, levels))
    if blocks:
        for row, extra in zip(rows, agreement_intervals(blocks, n_boot=n_boot, seed=seed,
                                                        ci=ci), strict=True):
            row.update(extra)
    return pd.DataFrame(rows)


def agreement_row(data: np.ndarray | Entries, levels: Sequence[str] = LEVELS, *,
                  ci: float = 0.95) -> dict[str, float]:
    """The statistics of one :func:`agreement_table` row for a raters × items matrix (or
    the same ratings as :class:`~concord.stats.agreement.entries.Entries`)."""
    if not isinstance(data, Entries):
        data = Entries.from_matrix(np.asarray(data, dtype=float))
    row: dict[str, float] = {}
    if is_continuous(data):  # a slider: interval α only (the categorical ones need tables)
        row.update({f"alpha_{level}": interval_alpha(data) if level == "interval"
                    else float("nan") for level in levels})
        row["fleiss_kappa"] = float("nan")
        kappa = {**dict.fromkeys(KAPPA_FIELDS, float("nan")), "kappa_n_items": 0}
    else:
        counts, domain = entries.value_counts(data)
        for level in levels:
            row[f"alpha_{level}"] = (alpha_from_counts(counts, domain, level)
                                     if data.n_raters >= 2 else float("nan"))
        row["fleiss_kappa"] = fleiss_from_counts(counts)
        kappa = weighted_kappa(data)
    row["mean_spearman"] = entries.mean_pairwise_spearman(data)
    row.update(icc2(data, ci=ci))
    row.update(kappa)
    row.update(n_raters=data.n_raters, n_items=data.n_items, n_ratings=len(data.value))
    return row


def leave_one_out_table(
    ratings: pd.DataFrame, *, by: Sequence[str] = ("criterion",),
    item: Sequence[str] | None = None,
) -> pd.DataFrame:
    """:func:`leave_one_out` for every group of ``by`` (default: per criterion).

    Returns:
        Columns ``by``, ``rater, spearman, pearson, n_items``.
    """
    require_columns(ratings, [*RATING_COLUMNS, *by], where="leave_one_out_table")
    frames = [leave_one_out(data, raters=names).assign(**head)
              for head, data, names in group_matrices(ratings, by, item)]
    cols = [*by, "rater", "spearman", "pearson", "n_items"]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)
