"""Per-model item-level correlations and rater-versus-the-rest, combined over models.

*Per model*: for each model, Spearman, Kendall τ_b and Pearson between the metric and
the human image score over that model's images; then combined over the models three
ways (:func:`concord.stats.grouped.combine_r`).

*Rater versus the rest*: each rater's own value on an image against the mean of the
OTHER raters' values on that image (their own values: a derived criterion such as O is
derived per rater first), per model and pooled over all images, combined over models
the same three ways. Metrics appear in the same table (the metric against the mean of
all raters), so a judge can be compared with a person. *Human raters*: one figure for all
raters, the raters' per-model values combined over raters, then over models.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from concord.stats._codes import codes_and_names, group_codes, image_keys
from concord.stats._exact import rest_means
from concord.stats._validate import numeric_values
from concord.stats.grouped import CLIP, COMBINE, STATS, combine_table, grouped_correlations
from concord.stats.human_vs_metric.table import Joined

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
        coded = [codes_and_names(joined.subsets[k]["model"]) for k in ks]
        names = np.unique(np.concatenate([n for _, n in coded]).astype(str))
        groups = np.concatenate([k_pos * len(names) + pd.Index(names).get_indexer(
            n.astype(str))[c] for k_pos, (c, n) in enumerate(coded)])
        res = grouped_correlations(
            np.concatenate([joined.subsets[k]["human"].to_numpy(float) for k in ks]),
            np.concatenate([joined.subsets[k]["metric"].to_numpy(float) for k in ks]),
            groups, len(ks) * len(names))
        used = np.flatnonzero(res["n"].to_numpy() > 0)
        rows = heads.iloc[np.asarray(ks)[used // len(names)]].reset_index(drop=True)
        rows = rows.assign(model=names[used % len(names)])
        tables.append(rows.join(res.iloc[used].reset_index(drop=True)))
    models = pd.concat(tables, ignore_index=True).rename(columns={"n": "n_images"})
    models = models.sort_values([*HEAD, "model"], kind="stable", ignore_index=True)
    return models, combine_table(models, HEAD)


@dataclass(frozen=True, slots=True)
class _Pairs:
    """(x, y) pairs with the code of who gave x (a rater or a metric) and of the model."""

    who: np.ndarray
    who_names: np.ndarray
    model: np.ndarray
    model_names: np.ndarray
    x: np.ndarray
    y: np.ndarray


def _source_pairs(rows: pd.DataFrame) -> _Pairs:
    """Each rating with the mean of the other raters' values on the same image."""
    values = numeric_values(rows, "value", where="rater_vs_rest")
    image = group_codes(rows, image_keys(rows))
    ok = np.isfinite(values)
    rest, others = rest_means(image[ok], values[ok], int(image.max()) + 1 if image.size else 0)
    keep = np.flatnonzero(ok)[others > 0]
    who, who_names = codes_and_names(rows["rater"])
    model, model_names = codes_and_names(rows["model"])
    return _Pairs(who[keep], who_names, model[keep], model_names, values[keep],
                  rest[others > 0])


def _metric_pairs(joined: Joined, source: str) -> list[tuple[str, _Pairs]]:
    out = []
    for head, sub in zip(joined.heads, joined.subsets, strict=True):
        if head["human"] == source and head["dimension"] == "all":
            model, names = codes_and_names(sub["model"])
            out.append((head["judge"], _Pairs(
                np.zeros(len(sub), dtype=np.int64), np.array([head["metric"]], dtype=object),
                model, names, sub["metric"].to_numpy(float), sub["human"].to_numpy(float))))
    return out


def _correlate(pairs: _Pairs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per (name, model) and pooled per name correlations (names and models by code)."""
    n_models = len(pairs.model_names)
    offset = len(pairs.who_names) * n_models
    res = grouped_correlations(pairs.x, pairs.y, pairs.who * n_models + pairs.model, offset,
                               parents=np.arange(offset) // n_models)
    res = res.rename(columns={"n": "n_images"})
    used = res["n_images"].to_numpy() > 0
    codes = np.flatnonzero(used[:offset])
    models = pd.DataFrame({"name": pairs.who_names[codes // n_models],
                           "model": pairs.model_names[codes % n_models]}).join(
        res.iloc[codes].reset_index(drop=True))
    names = np.flatnonzero(used[offset:])
    total = pd.DataFrame({"name": pairs.who_names[names]}).join(
        res.iloc[offset + names].reset_index(drop=True))
    return models, total


def metric_rows(models: pd.DataFrame,
                table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The metric rows of :func:`rater_vs_rest` from tables already computed.

    Args:
        models: :func:`per_model_table` models (its ``dimension == "all"`` rows).
        table: :func:`concord.stats.human_vs_metric.table.correlation_table` (its ``item`` rows of
            ``dimension == "all"``: the metric against the mean of all raters per image).

    Returns:
        ``(per_model, pooled)`` in the layout of :func:`rater_vs_rest`.
    """
    per = models[models["dimension"] == "all"].rename(columns={"metric": "name"})
    items = table[(table["level"] == "item") & (table["dimension"] == "all")]
    pooled = items.rename(columns={"metric": "name", "n": "n_images"})
    return (per.assign(who="metric")[[*WHO, "model", *STATS, "n_images"]],
            pooled.assign(who="metric")[[*WHO, *STATS, "n_images"]])


def rater_vs_rest(sources: dict[str, pd.DataFrame], joined: Joined | None = None, *,
                  metrics: tuple[pd.DataFrame, pd.DataFrame] | None = None,
                  ) -> dict[str, pd.DataFrame]:
    """Rater versus the rest (and metric versus all raters), per model and pooled.

    Args:
        sources: Rater-level rows per human source (:func:`human_sources`).
        joined: Joined metric subsets; their ``dimension == "all"`` subsets add one row
            per metric × judge (the metric against the mean of all raters per image).
        metrics: The metric rows already computed (:func:`metric_rows`), used instead of
            computing them from ``joined``.

    Returns:
        ``per_model`` (``human, who, name, judge, model, spearman, kendall_tau_b,
        pearson, n_images``), ``pooled`` (the same without ``model``, over all images),
        ``combined`` (``human, who, name, judge, statistic, mean_r, fisher_z,
        tanh_mean_r, n_models, pooled``; ``who`` is ``rater`` or ``metric``) and
        ``human_raters`` (:func:`human_raters`: one figure for all raters).
    """
    per_model, pooled = [], []
    for source, rows in sources.items():
        # Raters and metrics apart: rater values take few levels (the fast table path),
        # metric values many.
        todo = [("rater", "", _source_pairs(rows))]
        if metrics is None:
            todo += [("metric", judge, pairs)
                     for judge, pairs in _metric_pairs(joined or Joined(), source)]
        for who, judge, pairs in todo:
            if pairs.x.size:
                models, total = _correlate(pairs)
                per_model.append(models.assign(human=source, who=who, judge=judge))
                pooled.append(total.assign(human=source, who=who, judge=judge))
    if metrics is not None:
        per_model += [metrics[0]]
        pooled += [metrics[1]]
    per_model = [p for p in per_model if not p.empty]
    if not per_model:
        return {"per_model": pd.DataFrame(), "pooled": pd.DataFrame(),
                "combined": pd.DataFrame(), "human_raters": human_raters(pd.DataFrame())}
    models = pd.concat(per_model, ignore_index=True)[[*WHO, "model", *STATS, "n_images"]]
    total = pd.concat([p for p in pooled if not p.empty],
                      ignore_index=True)[[*WHO, *STATS, "n_images"]]
    models = models.sort_values(["human", "who", "name", "judge", "model"], kind="stable",
                                ignore_index=True)
    total = total.sort_values(["human", "who", "name", "judge"], kind="stable",
                              ignore_index=True)
    combined = combine_table(models, WHO)
    long = total.melt(id_vars=WHO, value_vars=list(STATS), var_name="statistic",
                      value_name="pooled")
    combined = combined.merge(long, on=[*WHO, "statistic"], how="left")
    return {"per_model": models, "pooled": total, "combined": combined,
            "human_raters": human_raters(models)}


def human_raters(per_model: pd.DataFrame) -> pd.DataFrame:
    """One "human raters" figure per human source: each rater against the mean of the
    others per model, combined over raters, then over models.

    Each of the three combinations averages in its own space at both levels and maps
    back once: ``mean_r`` = mean over models of the mean over raters of r; ``fisher_z``
    = tanh of the mean over models of the mean over raters of atanh r; ``tanh_mean_r`` =
    tanh of ``mean_r`` (the convention of published MLLM-judge code). NaN r (a constant
    rater or rest) are skipped, as in :func:`concord.stats.grouped.combine_r`.

    Args:
        per_model: The ``per_model`` rows of :func:`rater_vs_rest` (``who == "rater"``
            rows are used).

    Returns:
        ``human, statistic, mean_r, fisher_z, tanh_mean_r, n_models, n_raters``.
    """
    columns = ["human", "statistic", *COMBINE, "n_models", "n_raters"]
    raters = per_model[per_model["who"] == "rater"] if not per_model.empty else per_model
    if raters.empty:
        return pd.DataFrame(columns=columns)
    out = []
    for stat in STATS:
        r = raters[["human", "model", "name", stat]].rename(columns={stat: "r"})
        r = r[np.isfinite(r["r"].to_numpy(float))]
        r = r.assign(z=np.arctanh(np.clip(r["r"].to_numpy(float), -CLIP, CLIP)))
        by_model = r.groupby(["human", "model"], sort=True, observed=True).agg(
            r=("r", "mean"), z=("z", "mean"), n_raters=("name", "nunique"))
        top = by_model.groupby(level="human", sort=True, observed=True).agg(
            mean_r=("r", "mean"), z=("z", "mean"), n_models=("r", "size"))
        n_raters = r.groupby("human", sort=True, observed=True)["name"].nunique()
        out.append(pd.DataFrame({
            "human": top.index.astype(str), "statistic": stat,
            "mean_r": top["mean_r"].to_numpy(float), "fisher_z": np.tanh(top["z"]).to_numpy(),
            "tanh_mean_r": np.tanh(top["mean_r"]).to_numpy(float),
            "n_models": top["n_models"].to_numpy(int),
            "n_raters": n_raters.reindex(top.index).to_numpy(int)}))
    table = pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=columns)
    return table.sort_values(["human", "statistic"], kind="stable", ignore_index=True)[columns]
