"""Per-model item-level correlations and rater versus the rest, against brute-force loops.

The references below are plain Python over dicts (exact means with ``math.fsum``,
scipy per group, the three combinations by hand) on synthetic studies with missing
ratings, ties and 2 to 5 raters.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from concord.stats import (
    IMAGENHUB_O,
    full_report,
    human_sources,
    join_sources,
    per_model_table,
    rater_vs_rest,
    with_derived,
)

SCIPY = {"spearman": stats.spearmanr, "kendall_tau_b": stats.kendalltau,
         "pearson": stats.pearsonr}
CLIP = 0.999999999999


def _corr(xs, ys) -> dict[str, float]:
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return dict.fromkeys(SCIPY, float("nan"))
    return {name: float(test(xs, ys).statistic) for name, test in SCIPY.items()}


def _combine(values) -> tuple[float, float, float, int]:
    r = [v for v in values if not math.isnan(v)]
    if not r:
        return float("nan"), float("nan"), float("nan"), 0
    mean = sum(r) / len(r)
    z = sum(math.atanh(max(-CLIP, min(CLIP, v))) for v in r) / len(r)
    return mean, math.tanh(z), math.tanh(mean), len(r)


def _study(seed: int, raters: int, missing: float):
    rng = np.random.default_rng(seed)
    quality = rng.normal(0, 1, 4)
    ratings, scores = [], []
    for p in range(14):
        for m in range(4):
            latent = quality[m] + rng.normal()
            scores.append({"prompt_id": f"p{p}", "model": f"m{m}", "metric": "q",
                           "judge": "", "value": round(latent + rng.normal(0, 0.7), 1),
                           "dimension": f"d{p % 2}"})
            for r in range(raters):
                for crit in ("SC", "PR"):
                    if rng.random() < missing:
                        continue
                    level = int(np.clip(np.round(latent + rng.normal() + 1), 0, 2))
                    ratings.append({"prompt_id": f"p{p}", "model": f"m{m}", "rater": f"r{r}",
                                    "criterion": crit, "value": (0.0, 0.5, 1.0)[level],
                                    "dimension": f"d{p % 2}"})
    return pd.DataFrame(ratings), pd.DataFrame(scores)


def _per_rater_values(ratings: pd.DataFrame) -> dict[str, dict[tuple, dict[str, float]]]:
    """criterion -> image -> rater -> value, with O = sqrt(SC·PR) derived per rater."""
    table: dict[str, dict[tuple, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in ratings.itertuples():
        table[r.criterion][(r.prompt_id, r.model)][r.rater] = r.value
    for image, by_rater in list(table["SC"].items()):
        for rater, sc in by_rater.items():
            pr = table["PR"].get(image, {}).get(rater)
            if pr is not None:
                table["O"][image][rater] = math.sqrt(sc * pr)
    return table


@pytest.mark.parametrize(("raters", "missing"), [(2, 0.0), (3, 0.2), (5, 0.35)])
def test_rater_vs_rest_equals_brute_force(raters, missing):
    ratings, _ = _study(raters, raters, missing)
    out = rater_vs_rest(human_sources(with_derived(ratings, [IMAGENHUB_O]), None))
    values = _per_rater_values(ratings)
    per_model = out["per_model"].set_index(["human", "name", "model"])
    pooled = out["pooled"].set_index(["human", "name"])
    combined = out["combined"].set_index(["human", "name", "statistic"])
    checked = 0
    for crit, images in values.items():
        source = f"ratings:{crit}"
        for rater in sorted({r for by in images.values() for r in by}):
            pairs = defaultdict(lambda: ([], []))
            for image, by_rater in images.items():
                others = [v for k, v in by_rater.items() if k != rater]
                if rater in by_rater and others:
                    pairs[image[1]][0].append(by_rater[rater])
                    pairs[image[1]][1].append(math.fsum(others) / len(others))
            every = ([x for xs, _ in pairs.values() for x in xs],
                     [y for _, ys in pairs.values() for y in ys])
            ref_pooled = _corr(*every)
            per = {model: _corr(*xy) for model, xy in pairs.items()}
            for name in SCIPY:
                got = pooled.loc[(source, rater), name]
                assert got == pytest.approx(ref_pooled[name], abs=1e-12, nan_ok=True)
                for model, ref in per.items():
                    assert per_model.loc[(source, rater, model), name] == pytest.approx(
                        ref[name], abs=1e-12, nan_ok=True)
                mean, fisher, tanh_mean, n = _combine([ref[name] for ref in per.values()])
                row = combined.loc[(source, rater, name)]
                assert row["n_models"] == n
                assert row["mean_r"] == pytest.approx(mean, abs=1e-12, nan_ok=True)
                assert row["fisher_z"] == pytest.approx(fisher, abs=1e-12, nan_ok=True)
                assert row["tanh_mean_r"] == pytest.approx(tanh_mean, abs=1e-12, nan_ok=True)
                assert row["pooled"] == pytest.approx(ref_pooled[name], abs=1e-12,
                                                      nan_ok=True)
                checked += 1
    assert checked >= raters * 3 * 3


@pytest.mark.parametrize(("raters", "missing"), [(3, 0.0), (5, 0.3)])
def test_human_raters_combines_over_raters_then_over_models(raters, missing):
    ratings, _ = _study(20 + raters, raters, missing)
    out = rater_vs_rest(human_sources(with_derived(ratings, [IMAGENHUB_O]), None))
    got = out["human_raters"].set_index(["human", "statistic"])
    per = out["per_model"]
    assert set(got.index.get_level_values("human")) == {"ratings:SC", "ratings:PR",
                                                        "ratings:O"}
    for (source, stat), row in got.iterrows():
        # an independent nested loop: per model the raters' r (r and atanh r averaged),
        # then over models, mapped back once
        rows = per[(per["human"] == source) & (per["who"] == "rater")]
        by_model: dict[str, list[float]] = defaultdict(list)
        for model, r in zip(rows["model"], rows[stat], strict=True):
            if not math.isnan(r):
                by_model[model].append(r)
        means = [sum(v) / len(v) for v in by_model.values()]
        zs = [sum(math.atanh(max(-CLIP, min(CLIP, x))) for x in v) / len(v)
              for v in by_model.values()]
        mean = sum(means) / len(means)
        assert row["mean_r"] == pytest.approx(mean, abs=1e-12)
        assert row["fisher_z"] == pytest.approx(math.tanh(sum(zs) / len(zs)), abs=1e-12)
        assert row["tanh_mean_r"] == pytest.approx(math.tanh(mean), abs=1e-12)
        assert row["n_models"] == len(by_model) >= 2
        assert row["n_raters"] == rows.loc[rows[stat].notna(), "name"].nunique()


def test_human_raters_of_nothing_is_an_empty_table():
    out = rater_vs_rest({})
    assert out["human_raters"].empty
    assert list(out["human_raters"].columns) == [
        "human", "statistic", "mean_r", "fisher_z", "tanh_mean_r", "n_models", "n_raters"]


def _image_means(ratings: pd.DataFrame, crit: str) -> dict[tuple, float]:
    values = _per_rater_values(ratings)[crit]
    return {image: math.fsum(by.values()) / len(by) for image, by in values.items()}


@pytest.mark.parametrize(("raters", "missing"), [(2, 0.1), (4, 0.3)])
def test_per_model_item_level_equals_brute_force(raters, missing):
    ratings, scores = _study(10 + raters, raters, missing)
    joined = join_sources(scores, ratings=with_derived(ratings, [IMAGENHUB_O]))
    models, combined = per_model_table(joined)
    models = models.set_index(["human", "dimension", "model"])
    combined = combined.set_index(["human", "dimension", "statistic"])
    metric = {(r.prompt_id, r.model): r.value for r in scores.itertuples()}
    dims = {(r.prompt_id, r.model): r.dimension for r in scores.itertuples()}
    for crit in ("SC", "PR", "O"):
        human = _image_means(ratings, crit)
        for dim in ("all", "d0", "d1"):
            per = {}
            for model in sorted({m for _, m in human}):
                keys = [k for k in human if k[1] == model and (dim == "all" or dims[k] == dim)]
                per[model] = _corr([human[k] for k in keys], [metric[k] for k in keys])
                row = models.loc[(f"ratings:{crit}", dim, model)]
                assert row["n_images"] == len(keys)
                for name in SCIPY:
                    assert row[name] == pytest.approx(per[model][name], abs=1e-12,
                                                      nan_ok=True)
            for name in SCIPY:
                mean, fisher, tanh_mean, n = _combine([p[name] for p in per.values()])
                row = combined.loc[(f"ratings:{crit}", dim, name)]
                assert (row["mean_r"], row["fisher_z"], row["tanh_mean_r"]) == pytest.approx(
                    (mean, fisher, tanh_mean), abs=1e-12)
                assert row["n_models"] == n


def test_metric_rows_sit_in_the_rater_table_against_all_raters():
    ratings, scores = _study(21, 3, 0.1)
    doc = full_report(ratings, scores=scores.assign(question_id=""), n_boot=5, n_perm=5)
    rows = [r for r in doc["rater_vs_rest"]["pooled"] if r["human"] == "ratings:SC"]
    assert {r["who"] for r in rows} == {"rater", "metric"}
    metric = next(r for r in rows if r["who"] == "metric")
    human = _image_means(ratings, "SC")
    values = {(r.prompt_id, r.model): r.value for r in scores.itertuples()}
    keys = sorted(human)
    ref = stats.spearmanr([values[k] for k in keys], [human[k] for k in keys]).statistic
    assert metric["name"] == "q" and metric["spearman"] == pytest.approx(ref, abs=1e-12)
    item = next(r for r in doc["human_vs_metric"] if r["human"] == "ratings:SC"
                and r["level"] == "item" and r["dimension"] == "all")
    assert item["spearman"] == pytest.approx(metric["spearman"], abs=1e-12)


def test_reused_metric_rows_equal_recomputed_ones():
    ratings, scores = _study(22, 3, 0.2)
    rated = with_derived(ratings, [IMAGENHUB_O])
    joined = join_sources(scores, ratings=rated)
    direct = rater_vs_rest(joined.sources, joined)
    doc = full_report(ratings, scores=scores, derived=[IMAGENHUB_O], n_boot=5, n_perm=5)
    for key in ("per_model", "pooled", "combined"):
        got = pd.DataFrame(doc["rater_vs_rest"][key]).drop(columns="study", errors="ignore")
        want = direct[key]
        assert len(got) == len(want)
        cols = [c for c in want.columns if c in ("spearman", "kendall_tau_b", "pearson",
                                                  "mean_r", "fisher_z", "tanh_mean_r",
                                                  "pooled")]
        keys = [c for c in want.columns if c not in cols]
        merged = got.merge(want, on=keys, suffixes=("", "_want"))
        assert len(merged) == len(want), key
        for col in cols:
            np.testing.assert_allclose(merged[col].astype(float), merged[f"{col}_want"],
                                       atol=1e-12, equal_nan=True)
