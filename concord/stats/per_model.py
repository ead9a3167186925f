"""Per-model item-level correlations and rater-versus-the-rest, combined over models.

*Per model*: for each model, Spearman, Kendall τ_b and Pearson between the metric and
the human image score over that model's images; then combined over the models three
ways (:func:`concord.stats.grouped.combine_r`).

*Rater versus the rest*: each rater's own value on an image against the mean of the
OTHER raters' values on that image (their own values: a derived criterion such as O is
derived per rater first), per model and pooled over all images, combined over models
the same three ways. Metrics appear in the same table (the metric against the mean of
all raters), so a judge can be compared with a person.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._codes import first_rows, group_codes, image_keys
from concord.stats._exact import rest_means
from concord.stats._validate import numeric_values
from concord.stats.grouped import STATS, combine_table, grouped_correlations
from concord.stats.human_metric import Joined

HEAD = ["metric", "judge", "human", "dimension"]
WHO = ["human", "who", "name", "judge"]


def per_model_table(joined: Joined) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-model item-level correlations of every joined subset, and their combinations.

    Returns:
        ``(models, combined)``: ``models`` has ``metric, judge, human, dimension, model,
        spearman, kendall_tau_b, pearson, n_images``; ``combined`` has ``metric, judge,
        human, dimension, statistic, mean_r, fisher_z, tanh_mean_r, n_models``.
    """
    if not joined.subsets:
        return (pd.DataFrame(columns=[*HEAD, "model", *STATS, "n_images"]),
                pd.DataFrame(columns=[*HEAD, "statistic", "mean_r", "fisher_z",
                                      "tanh_mean_r", "n_models"]))
    heads = pd.DataFrame(joined.heads)
    tables = []
    # One call per human source: its values share few levels (the fast paths).
    for _, ks in heads.groupby("human", sort=True).groups.items():
        parts = [pd.DataFrame({"k": k, "model": sub["model"].astype(object).to_numpy(),
                               "human": sub["human"].to_numpy(float),
                               "metric": sub["metric"].to_numpy(float)})
                 for k, sub in ((k, joined.subsets[k]) for k in ks)]
        both = pd.concat(parts, ignore_index=True)
        code = group_codes(both, ["k", "model"])
        res = grouped_correlations(both["human"], both["metric"], code)
        first = first_rows(code)  # one row per (subset, model), in code order like ``res``
        rows = heads.iloc[both["k"].to_numpy()[first]].reset_index(drop=True)
        rows = rows.assign(model=both["model"].to_numpy()[first])
        tables.append(rows.join(res.reset_index(drop=True)))
    models = pd.concat(tables, ignore_index=True).rename(columns={"n": "n_images"})
    models = models.sort_values([*HEAD, "model"], kind="stable", ignore_index=True)
    return models, combine_table(models, HEAD)


def _source_pairs(rows: pd.DataFrame) -> pd.DataFrame:
    """Each rating with the mean of the other raters' values on the same image."""
    values = numeric_values(rows, "value", where="rater_vs_rest")
    ok = np.isfinite(values)
    rows, values = rows[ok], values[ok]
    image = group_codes(rows, image_keys(rows))
    rest, others = rest_means(image, values, int(image.max()) + 1 if image.size else 0)
    keep = others > 0
    return pd.DataFrame({"name": rows["rater"].astype(object).to_numpy()[keep],
                         "model": rows["model"].astype(object).to_numpy()[keep],
                         "x": values[keep], "y": rest[keep]})


def _metric_pairs(joined: Joined, source: str) -> list[tuple[str, str, pd.DataFrame]]:
    out = []
    for head, sub in zip(joined.heads, joined.subsets, strict=True):
        if head["human"] == source and head["dimension"] == "all":
            out.append((head["metric"], head["judge"], pd.DataFrame({
                "name": head["metric"], "model": sub["model"].astype(object).to_numpy(),
                "x": sub["metric"].to_numpy(float), "y": sub["human"].to_numpy(float)})))
    return out


def _correlate(pairs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per (who, name, judge, model) and pooled per (who, name, judge) correlations."""
    keys = ["who", "name", "judge"]
    per = group_codes(pairs, [*keys, "model"])
    pooled = group_codes(pairs, keys)
    offset = int(per.max()) + 1
    res = grouped_correlations(np.r_[pairs["x"], pairs["x"]], np.r_[pairs["y"], pairs["y"]],
                               np.r_[per, pooled + offset])
    res = res.rename(columns={"n": "n_images"})
    first_per, first_pooled = first_rows(per), first_rows(pooled)
    models = pairs.iloc[first_per][[*keys, "model"]].reset_index(drop=True).join(
        res.iloc[:offset].reset_index(drop=True))
    total = pairs.iloc[first_pooled][keys].reset_index(drop=True).join(
        res.iloc[offset:].reset_index(drop=True))
    return models, total


def rater_vs_rest(sources: dict[str, pd.DataFrame],
                  joined: Joined | None = None) -> dict[str, pd.DataFrame]:
    """Rater versus the rest (and metric versus all raters), per model and pooled.

    Args:
        sources: Rater-level rows per human source (:func:`human_sources`).
        joined: Joined metric subsets; their ``dimension == "all"`` subsets add one row
            per metric × judge (the metric against the mean of all raters per image).

    Returns:
        ``per_model`` (``human, who, name, judge, model, spearman, kendall_tau_b,
        pearson, n_images``), ``pooled`` (the same without ``model``, over all images)
        and ``combined`` (``human, who, name, judge, statistic, mean_r, fisher_z,
        tanh_mean_r, n_models, pooled``). ``who`` is ``rater`` or ``metric``.
    """
    per_model, pooled = [], []
    for source, rows in sources.items():
        # Raters and metrics apart: rater values take few levels (the fast table path),
        # metric values many.
        metrics = [frame.assign(who="metric", judge=judge)
                   for _, judge, frame in _metric_pairs(joined or Joined(), source)]
        for pairs in (_source_pairs(rows).assign(who="rater", judge=""), *metrics):
            if not pairs.empty:
                models, total = _correlate(pairs)
                per_model.append(models.assign(human=source))
                pooled.append(total.assign(human=source))
    if not per_model:
        return {"per_model": pd.DataFrame(), "pooled": pd.DataFrame(),
                "combined": pd.DataFrame()}
    models = pd.concat(per_model, ignore_index=True)[[*WHO, "model", *STATS, "n_images"]]
    total = pd.concat(pooled, ignore_index=True)[[*WHO, *STATS, "n_images"]]
    combined = combine_table(models, WHO)
    long = total.melt(id_vars=WHO, value_vars=list(STATS), var_name="statistic",
                      value_name="pooled")
    combined = combined.merge(long, on=[*WHO, "statistic"], how="left")
    return {"per_model": models, "pooled": total, "combined": combined}
