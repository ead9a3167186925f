"""``records`` (the report's frame → JSON rows) against a plain per-cell reference."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from concord.stats.report.records import jsonable, records


def _reference(frame: pd.DataFrame) -> list[dict]:
    """One ``jsonable`` call per cell, read through ``itertuples`` (the slow, plain way)."""
    out = []
    for row in frame.astype(object).itertuples(index=False, name=None):
        cells = [None if v is pd.NA or (isinstance(v, float) and not math.isfinite(v)) else v
                 for v in row]
        out.append({str(k): jsonable(v) for k, v in zip(frame.columns, cells, strict=True)})
    return out


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    names = np.array(["alpha", "β-model", "", "x,y\"z"], dtype=object)
    text = names[rng.integers(0, 4, n)]
    missing = rng.random(n) < 0.2
    floats = rng.normal(size=n)
    floats[rng.random(n) < 0.1] = np.nan
    floats[rng.random(n) < 0.05] = np.inf
    return pd.DataFrame({
        "cat": pd.Categorical(np.where(missing, None, text)),
        "cat_int": pd.Categorical(rng.integers(0, 3, n)),
        "string": pd.array(np.where(missing, None, text), dtype="string"),
        "str": pd.Series(text).astype("str"),
        "object": pd.Series([None if m else (v if i % 2 else i) for i, (m, v)
                             in enumerate(zip(missing, text, strict=True))], dtype=object),
        "float": floats, "int": rng.integers(-5, 5, n),
        "nullable_int": pd.array(np.where(missing, None, rng.integers(0, 9, n)), dtype="Int64"),
        "bool": rng.random(n) < 0.5,
        "nullable_bool": pd.array(np.where(missing, None, rng.random(n) < 0.5),
                                  dtype="boolean"),
    })


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_records_equal_the_per_cell_reference(seed):
    frame = _frame(300, seed)
    assert records(frame) == _reference(frame)


def test_unused_categories_and_missing_codes():
    frame = pd.DataFrame({"c": pd.Categorical(["b", None, "b"], categories=["a", "b", "z"])})
    assert records(frame) == [{"c": "b"}, {"c": None}, {"c": "b"}]
    assert records(frame) == _reference(frame)


def test_empty_and_none():
    assert records(None) == []
    assert records(pd.DataFrame({"a": pd.Categorical([])})) == []
