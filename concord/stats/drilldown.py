"""Where humans and a metric disagree most: the images ranked most differently.

For every metric × judge × human source, over the images both scored (dimension
``all`` of :func:`concord.stats.human_metric.join_sources`): each side is turned into a
percentile rank (``rank(ascending=False, pct=True)``, average ranks for ties: the best
image gets the smallest value, the worst 1.0), after orienting the metric so that higher
is better; ``gap = |human_rank − metric_rank|``. The ``n`` largest gaps are listed.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from concord.stats.human_metric import Joined

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
        both = sub.dropna(subset=["human", "metric"])
        sign = 1.0 if directions.get(str(head["metric"]), True) else -1.0
        out = pd.DataFrame({
            "prompt_id": both["prompt_id"].astype(object).to_numpy(),
            "model": both["model"].astype(object).to_numpy(),
            "sample": both["sample"].to_numpy() if "sample" in both else 0,
            "dimension": (both["dimension"].astype(object).to_numpy()
                          if "dimension" in both else None),
            "human_score": both["human"].to_numpy(float),
            "metric_score": sign * both["metric"].to_numpy(float),
            "human_rank": both["human"].rank(ascending=False, pct=True).to_numpy(),
            "metric_rank": both["metric"].rank(ascending=False, pct=True).to_numpy(),
            "n_raters": both["n_raters"].to_numpy() if "n_raters" in both else None})
        out["gap"] = (out["human_rank"] - out["metric_rank"]).abs()
        top = out.sort_values(["gap", "prompt_id", "model", "sample"],
                              ascending=[False, True, True, True], kind="stable").head(n)
        parts.append(top.assign(metric=head["metric"], judge=head["judge"],
                                human_source=head["human"]))
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(parts, ignore_index=True)[COLUMNS]
