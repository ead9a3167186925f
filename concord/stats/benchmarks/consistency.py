"""Paraphrase consistency (Hollinger): score spread across paraphrases of one scene.

Input: one row per generated image with ``model, paraphrase_group, kind, value`` where
``kind`` is ``"abstract"`` or ``"realistic"`` (another column can hold it, e.g. the
``dimension`` the consistency evaluator stores: pass ``kind_column``) and ``value`` is any
faithfulness score of the image against its paraphrase.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._validate import (
    check_choice,
    numeric_values,
    require_columns,
    require_nonempty,
)

AGGREGATORS = ("std", "min", "median")
KINDS = ("abstract", "realistic")


def group_consistency(
    scores: pd.DataFrame, *, aggregator: str = "std", kind_column: str = "kind"
) -> pd.DataFrame:
    """Per model and paraphrase group, s_i = sample std (ddof=1) of the group's scores.

    ``aggregator="min"`` or ``"median"`` are the paper's alternative aggregators. A group
    with a single paraphrase has an undefined std (NaN).

    Returns:
        Columns ``model, paraphrase_group, kind, s, n_paraphrases``.
    """
    where = "group_consistency"
    check_choice(aggregator, AGGREGATORS, name="aggregator")
    require_columns(scores, ["model", "paraphrase_group", kind_column, "value"], where=where)
    require_nonempty(scores, where=where)
    scores = scores.assign(kind=scores[kind_column])
    bad = sorted(set(scores["kind"].astype(str)) - set(KINDS))
    if bad:
        raise ValueError(f"{where}: kind must be one of {list(KINDS)}, got {bad}")
    values = numeric_values(scores, "value", where=where)
    if np.isnan(values).any():
        raise ValueError(f"{where}: {int(np.isnan(values).sum())} missing value(s)")
    df = scores.assign(value=values)
    keys = ["model", "paraphrase_group"]
    kinds = df.groupby(keys, sort=True)["kind"].agg(["first", "nunique"])
    if (kinds["nunique"] > 1).any():
        raise ValueError(f"{where}: a paraphrase group is both abstract and realistic")
    grouped = df.groupby(keys, sort=True)["value"]
    s = grouped.std(ddof=1) if aggregator == "std" else grouped.agg(aggregator)
    out = pd.DataFrame({"kind": kinds["first"], "s": s, "n_paraphrases": grouped.size()})
    return out.reset_index()


def paraphrase_consistency(
    scores: pd.DataFrame, *, aggregator: str = "std", kind_column: str = "kind"
) -> pd.DataFrame:
    """S_a (mean s over abstract groups), S_r (over realistic) and S_final = S_r − S_a.

    Groups with an undefined s (one paraphrase) are skipped in the means; a kind with no
    defined group gives NaN. Lower |S_final| is better.

    Returns:
        Columns ``model, S_a, S_r, S_final, n_abstract, n_realistic``.
    """
    per_group = group_consistency(scores, aggregator=aggregator, kind_column=kind_column)
    per_group = per_group.dropna(subset=["s"])
    table = per_group.pivot_table(index="model", columns="kind", values="s",
                                  aggfunc=["mean", "size"])
    models = sorted(scores["model"].unique())
    out = pd.DataFrame({"model": models})
    for kind, short in (("abstract", "a"), ("realistic", "r")):
        mean = table["mean"][kind] if ("mean", kind) in table.columns else pd.Series(dtype=float)
        size = table["size"][kind] if ("size", kind) in table.columns else pd.Series(dtype=float)
        out[f"S_{short}"] = mean.reindex(models).to_numpy(dtype=float)
        out[f"n_{kind}"] = size.reindex(models).fillna(0).to_numpy(dtype=int)
    out["S_final"] = out["S_r"] - out["S_a"]
    return out[["model", "S_a", "S_r", "S_final", "n_abstract", "n_realistic"]]
