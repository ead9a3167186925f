"""Plain JSON types for the report: numpy/pandas scalars converted, NaN as None."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd


def jsonable(value: object) -> object:
    """Convert numpy/pandas scalars and containers to JSON types; NaN and NA become None."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return None if math.isnan(value) or math.isinf(value) else float(value)
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    return str(value)


def records(frame: pd.DataFrame | None) -> list[dict]:
    """A frame as a list of JSON-ready records (``[]`` for None)."""
    if frame is None or frame.empty:
        return []
    return [jsonable(r) for r in frame.to_dict(orient="records")]
