"""TIIF-Bench text rendering: mean GNED and recall per model and prompt variant.

Input: one row per image with ``model, variant, prompt_id, gned, recall`` where ``gned``
(lower is better, in [0, 1]) and ``recall`` were computed per image by the evaluator.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._validate import numeric_values, require_columns, require_nonempty


def gned_summary(images: pd.DataFrame) -> pd.DataFrame:
    """Mean per-image GNED and recall per (model, variant), as the reference's file score.

    Images whose OCR failed should carry NaN: they are left out and counted in
    ``n_missing`` (the reference silently scores a failed file as 0).

    Returns:
        Columns ``model, variant, gned, recall, n_images, n_missing``.

    Raises:
        ValueError: Missing columns, values outside [0, 1], or a duplicated image.
    """
    where = "gned_summary"
    require_columns(images, ["model", "variant", "prompt_id", "gned", "recall"], where=where)
    require_nonempty(images, where=where)
    if images.duplicated(["model", "variant", "prompt_id"]).any():
        raise ValueError(f"{where}: duplicate (model, variant, prompt_id) rows")
    cols = {}
    for name in ("gned", "recall"):
        v = numeric_values(images, name, where=where)
        if ((v < 0) | (v > 1)).any():
            raise ValueError(f"{where}: {name} must be in [0, 1], got {v[(v < 0) | (v > 1)][:3]}")
        cols[name] = v
    df = images[["model", "variant"]].assign(**cols)
    df["missing"] = np.isnan(cols["gned"]) | np.isnan(cols["recall"])
    grouped = df[~df["missing"]].groupby(["model", "variant"], sort=True)
    out = grouped.agg(gned=("gned", "mean"), recall=("recall", "mean"),
                      n_images=("gned", "size"))
    missing = df.groupby(["model", "variant"], sort=True)["missing"].sum().rename("n_missing")
    out = out.join(missing, how="outer").reset_index()
    out["n_images"] = out["n_images"].fillna(0).astype(int)
    return out
