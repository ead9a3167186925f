"""Input checks shared by the stats functions.

Every public function validates its frame here, so a caller gets a ``ValueError``
that names the missing column or the bad value instead of a ``KeyError`` deep in pandas.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd


def require_frame(df: object, *, where: str) -> pd.DataFrame:
    """Return ``df`` if it is a DataFrame, else raise ``TypeError`` naming its type."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{where}: expected a pandas DataFrame, got {type(df).__name__}")
    return df


def require_columns(df: object, columns: Iterable[str], *, where: str) -> pd.DataFrame:
    """Check that ``df`` is a DataFrame holding every column of ``columns``.

    Args:
        df: The frame to check.
        columns: Column names that must be present.
        where: Name of the calling function, put at the front of the message.

    Returns:
        ``df`` unchanged, so the call can be chained.

    Raises:
        TypeError: ``df`` is not a DataFrame.
        ValueError: Some columns are missing; the message lists them and the columns present.
    """
    frame = require_frame(df, where=where)
    missing = sorted(set(columns) - set(frame.columns))
    if missing:
        present = sorted(str(c) for c in frame.columns)
        raise ValueError(f"{where}: missing column(s) {missing}; the frame has {present}")
    return frame


def require_nonempty(df: pd.DataFrame, *, where: str) -> None:
    """Raise ``ValueError`` when ``df`` has no rows."""
    if df.empty:
        raise ValueError(f"{where}: the frame is empty")


def numeric_values(df: pd.DataFrame, column: str, *, where: str) -> np.ndarray:
    """``df[column]`` as float64, raising ``ValueError`` that quotes a non-numeric value."""
    series = df[column]
    if pd.api.types.is_float_dtype(series.dtype) or pd.api.types.is_integer_dtype(series.dtype):
        return series.to_numpy(dtype=float, na_value=np.nan)  # already numeric: no parsing
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
    bad = np.isnan(values) & df[column].notna().to_numpy()
    if bad.any():
        example = df[column].to_numpy()[bad][0]
        raise ValueError(f"{where}: column {column!r} has non-numeric value {example!r}")
    return values


def check_choice(value: object, allowed: Iterable[object], *, name: str) -> None:
    """Raise ``ValueError`` when ``value`` is not one of ``allowed``."""
    options = list(allowed)
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")


def check_fraction(value: float, *, name: str) -> None:
    """Raise ``ValueError`` unless ``0 < value < 1`` (e.g. a confidence level)."""
    if not isinstance(value, int | float) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be a number strictly between 0 and 1, got {value!r}")


def check_positive_int(value: object, *, name: str, minimum: int = 1) -> int:
    """Return ``value`` as int, raising ``ValueError`` below ``minimum`` or for non-integers."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def duplicated_keys(df: pd.DataFrame, keys: list[str], *, where: str, what: str) -> None:
    """Raise ``ValueError`` quoting the first duplicated key combination."""
    dup = df.duplicated(keys, keep=False)
    if dup.any():
        first = df.loc[dup, keys].iloc[0].to_dict()
        raise ValueError(f"{where}: {int(dup.sum())} rows share a key {keys}; "
                         f"{what} must be unique, e.g. {first}")


def filled_text(column: pd.Series, fill: str) -> pd.Series:
    """``column`` as plain strings with missing values replaced by ``fill``.

    Works for categorical columns too (``fillna`` there refuses a new category).
    """
    values = column.astype(object)
    return values.where(values.notna(), fill).astype(str)
