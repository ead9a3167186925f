"""Integer codes of frame columns: the grouping machinery every statistic shares.

Groups are built from integer codes (mixed radix, made dense with a presence table)
instead of hashing tuples, which keeps million-row frames fast.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

RATING_COLUMNS = ("prompt_id", "model", "rater", "criterion", "value")


def image_keys(df: pd.DataFrame) -> list[str]:
    """Columns that identify one image in ``df`` (study/sample/image_id only when present)."""
    optional = [c for c in ("study", "sample", "image_id") if c in df.columns]
    return ["prompt_id", "model", *optional]


def column_codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """Integer codes of a column in sorted order (missing values last) and their count."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy().astype(np.int64)
        n = len(column.cat.categories)
        return np.where(codes < 0, n, codes), n + 1
    if pd.api.types.is_integer_dtype(column.dtype) and len(column):
        values = column.to_numpy(dtype=np.int64)
        low, high = int(values.min()), int(values.max())
        if high - low <= 4 * len(values) + 1_000_000:
            # Small-range integers (sample numbers, image ids): a presence table gives
            # the sorted dense codes without hashing.
            present = np.zeros(high - low + 1, dtype=bool)
            present[values - low] = True
            dense = np.cumsum(present) - 1
            return dense[values - low], int(dense[-1]) + 1
    try:
        codes, uniques = pd.factorize(column, sort=True, use_na_sentinel=False)
    except TypeError:
        # Mixed types (ints and strings) do not sort; sort their text instead.
        codes, uniques = pd.factorize(column.astype(str), sort=True, use_na_sentinel=False)
    return codes.astype(np.int64), max(len(uniques), 1)


def group_codes(df: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """Dense integer code per row for the combination of ``keys``, in sorted key order.

    Column codes are combined in mixed radix and made dense with a presence table: no
    hashing of tuples, which keeps million-row frames fast.
    """
    combined = np.zeros(len(df), dtype=np.int64)
    size = 1
    for key in keys:
        codes, n = column_codes(df[key])
        if size * n >= 2**62:
            return df.groupby(list(keys), sort=True, observed=True, dropna=False).ngroup(
            ).to_numpy()
        combined = combined * n + codes
        size *= n
    if size <= 8 * len(df) + 1_000_000:
        present = np.zeros(size, dtype=bool)
        present[combined] = True
        return (np.cumsum(present) - 1)[combined]
    return np.unique(combined, return_inverse=True)[1].ravel()


def first_rows(codes: np.ndarray) -> np.ndarray:
    """Row position of the first occurrence of each code 0..max."""
    first = np.full(int(codes.max()) + 1 if len(codes) else 0, -1)
    first[codes[::-1]] = np.arange(len(codes))[::-1]
    return first


def distinct_text(column: pd.Series) -> set[str]:
    """The distinct non-missing values of a column as strings (fast for categoricals)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = np.unique(column.cat.codes.to_numpy())
        return set(map(str, column.cat.categories.take(codes[codes >= 0]).tolist()))
    return set(map(str, pd.unique(column.dropna()).tolist()))


def codes_and_names(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer code per row and the names they stand for (categoricals: no re-hashing).

    A categorical keeps its categories (some may be unused); other columns are
    factorized in sorted order.
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy().astype(np.int64), np.asarray(
            column.cat.categories, dtype=object)
    codes, names = pd.factorize(column, sort=True)
    return codes.astype(np.int64), np.asarray(names, dtype=object)


def sorted_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for text: the sorted distinct values and
    each value's index among them.

    Hashing first and sorting only the distinct values: ``np.unique`` sorts every value,
    which for 700,000 model names of derived ranking pairs took a second.
    """
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=True)
    if (codes < 0).any():
        raise ValueError("sorted_codes: missing values have no code")
    return np.asarray(uniques, dtype=object), codes.astype(np.int64)
