"""Where humans and a metric disagree most: the images ranked most differently.

For every metric × judge × human source, over the images both scored (dimension
``all`` of :func:`concord.stats.human_vs_metric.table.join_sources`): each side is turned into a
percentile rank (``rank(ascending=False, pct=True)``, average ranks for ties: the best
image gets the smallest value, the worst 1.0), after orienting the metric so that higher
is better; ``gap = |human_rank − metric_rank|``. The ``n`` largest gaps are listed.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from concord.stats.human_vs_metric.table import Joined

COLUMNS = ["metric", "judge", "human_source", "prompt_id", "model", "sample", "dimension",
           "human_score", "metric_score", "human_rank", "metric_rank", "gap", "n_raters"]


def disagreements(joined: Joined, *, n: int = 20,
                  higher_is_better: Mapping[str, bool] | None = None) -> pd.DataFrame:
    """The ``n`` images with the largest rank gap per metric × judge × human source.

    Args:
        joined: Joined human and metric items (``human`` oriented, ``metric`` oriented).
        n: Images per metric × judge × source.
        higher_is_better: Per metric; ``metric_score`` is reported in the metric's own
            direction (the orientation is undone), ranks use the oriented value.

    Returns:
        :data:`COLUMNS`, largest gap first within each metric × judge × source (ties by
        prompt, model, sample).
    """
    directions = dict(higher_is_better or {})
    parts = []
    for head, sub in zip(joined.heads, joined.subsets, strict=True):
        if head["dimension"] != "all" or sub.empty:
            continue
        sign = 1.0 if directions.get(str(head["metric"]), True) else -1.0
        parts.append(_top(sub.dropna(subset=["human", "metric"]), n, sign).assign(
            metric=head["metric"], judge=head["judge"], human_source=head["human"]))
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(parts, ignore_index=True)[COLUMNS]


def _sort_codes(column: pd.Series) -> np.ndarray:
    """Codes whose order is the values' sorted order (for tie-breaking)."""
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype) and dtype.categories.is_monotonic_increasing:
        return column.cat.codes.to_numpy()
    return pd.factorize(column.astype(str), sort=True)[0]


def _top(both: pd.DataFrame, n: int, sign: float) -> pd.DataFrame:
    """The ``n`` images of one subset with the largest rank gap (frames built for those)."""
    human_rank = both["human"].rank(ascending=False, pct=True).to_numpy()
    metric_rank = both["metric"].rank(ascending=False, pct=True).to_numpy()
    gap = np.abs(human_rank - metric_rank)
    sample = both["sample"].to_numpy() if "sample" in both else np.zeros(len(both))
    order = np.lexsort((sample, _sort_codes(both["model"]), _sort_codes(both["prompt_id"]),
                        -gap))[:n]
    rows = both.iloc[order]
    return pd.DataFrame({
        "prompt_id": rows["prompt_id"].astype(str).to_numpy(),
        "model": rows["model"].astype(str).to_numpy(),
        "sample": sample[order].astype(int),
        "dimension": (rows["dimension"].astype(object).to_numpy()
                      if "dimension" in rows else None),
        "human_score": rows["human"].to_numpy(float),
        "metric_score": sign * rows["metric"].to_numpy(float),
        "human_rank": human_rank[order], "metric_rank": metric_rank[order], "gap": gap[order],
        "n_raters": rows["n_raters"].to_numpy() if "n_raters" in rows else None})
