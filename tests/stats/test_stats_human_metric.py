"""Human vs metric: model-level bootstrap CI and permutation p, item level, the table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from concord.stats import human_metric_table, item_level
from concord.stats._resample import bootstrap_indices
from concord.stats.human_vs_metric.model_level import model_level
from concord.stats.human_vs_metric.table import model_level_many


def make_items(seed=0, prompts=20, models=6, noise=1.0):
    rng = np.random.default_rng(seed)
    quality = rng.normal(0, 1, models)
    rows = []
    for p in range(prompts):
        for m in range(models):
            if rng.random() < 0.1:
                continue  # some images missing
            human = quality[m] + rng.normal()
            rows.append({"prompt_id": f"p{p:02d}", "model": f"m{m}", "human": human,
                         "metric": human + rng.normal(0, noise), "dimension": f"d{p % 2}"})
    return pd.DataFrame(rows)


def _model_means(items):
    means = items.groupby("model")[["human", "metric"]].mean()
    return means["human"].to_numpy(), means["metric"].to_numpy()


def test_model_level_point_estimates_match_scipy():
    items = make_items(1)
    out = model_level(items, n_boot=50, n_perm=50)
    h, m = _model_means(items)
    assert out["spearman"] == pytest.approx(stats.spearmanr(h, m).statistic, abs=1e-12)
    assert out["kendall_tau_b"] == pytest.approx(stats.kendalltau(h, m).statistic, abs=1e-12)
    assert out["pearson"] == pytest.approx(stats.pearsonr(h, m).statistic, abs=1e-12)
    assert (out["n"], out["n_prompts"], out["n_items"]) == (6, 20, len(items))


def test_model_level_ci_equals_slow_bootstrap_loop():
    items = make_items(2, prompts=12)
    n_boot, seed = 40, 3
    out = model_level(items, n_boot=n_boot, n_perm=10, seed=seed, ci=0.9)
    prompts = np.array(sorted(items["prompt_id"].unique()))
    idx = bootstrap_indices(len(prompts), n_boot, seed)
    by_prompt = dict(list(items.groupby("prompt_id")))
    rhos, taus, rs = [], [], []
    for b in range(n_boot):
        sample = pd.concat([by_prompt[p] for p in prompts[idx[b]]])
        means = sample.groupby("model")[["human", "metric"]].mean()
        if len(means) < items["model"].nunique():
            rhos.append(np.nan)
            taus.append(np.nan)
            rs.append(np.nan)
            continue
        rhos.append(stats.spearmanr(means["human"], means["metric"]).statistic)
        taus.append(stats.kendalltau(means["human"], means["metric"]).statistic)
        rs.append(stats.pearsonr(means["human"], means["metric"]).statistic)
    for name, values in (("spearman", rhos), ("kendall_tau_b", taus), ("pearson", rs)):
        low, high = np.nanquantile(values, [0.05, 0.95])
        assert out[f"{name}_ci_boot_low"] == pytest.approx(low, abs=1e-12)
        assert out[f"{name}_ci_boot_high"] == pytest.approx(high, abs=1e-12)


def test_model_level_permutation_p_value_equals_loop():
    items = make_items(3, models=5)
    n_perm, seed = 200, 9
    out = model_level(items, n_boot=10, n_perm=n_perm, seed=seed)
    h, m = _model_means(items)
    rng = np.random.default_rng((seed, 1))
    perms = rng.permuted(np.tile(np.arange(len(m)), (n_perm, 1)), axis=1)
    observed = stats.spearmanr(h, m).statistic
    hits = sum(abs(stats.spearmanr(h, m[perm]).statistic) >= abs(observed) - 1e-12
               for perm in perms)
    assert out["spearman_p_perm"] == pytest.approx((1 + hits) / (1 + n_perm))
    again = model_level(items, n_boot=10, n_perm=n_perm, seed=seed)
    assert again == out


def test_strong_agreement_gives_small_p_and_ci_above_zero():
    items = make_items(4, prompts=60, models=8, noise=0.2)
    out = model_level(items, n_boot=300, n_perm=2000)
    assert out["spearman"] > 0.9
    assert out["spearman_p_perm"] < 0.01
    assert out["spearman_ci_boot_low"] > 0


def test_item_level_matches_scipy_on_items():
    items = make_items(5)
    out = item_level(items)
    ref = stats.kendalltau(items["human"], items["metric"])
    assert out["kendall_tau_b"] == pytest.approx(ref.statistic, abs=1e-12)
    assert out["n"] == out["n_items"] == len(items)
    assert 0 <= out["pairwise_acc"] <= 1


def _ratings_and_scores(seed=0, prompts=16, models=5, raters=3):
    rng = np.random.default_rng(seed)
    quality = np.linspace(1, -1, models)
    ratings, scores, rankings = [], [], []
    for p in range(prompts):
        latent = quality + rng.normal(0, 0.5, models)
        for m in range(models):
            base = {"prompt_id": f"p{p}", "model": f"m{m}", "sample": 0,
                    "dimension": f"d{p % 2}"}
            for r in range(raters):
                value = float(np.clip(np.round(latent[m] + rng.normal(0, 0.3) + 0.5), 0, 1))
                ratings.append({**base, "rater": f"r{r}", "criterion": "SC", "value": value})
            scores.append({**base, "metric": "good", "judge": "", "value": latent[m]})
            scores.append({**base, "metric": "distance", "judge": "", "value": -latent[m]})
        order = stats.rankdata(-latent)
        rankings += [{"prompt_id": f"p{p}", "model": f"m{m}", "rater": "x",
                      "criterion": "overall", "rank": order[m], "sample": 0,
                      "dimension": f"d{p % 2}"} for m in range(models)]
    return pd.DataFrame(ratings), pd.DataFrame(scores), pd.DataFrame(rankings)


def test_table_orients_metrics_and_rankings_so_agreement_is_positive():
    ratings, scores, rankings = _ratings_and_scores()
    table = human_metric_table(scores, ratings=ratings, rankings=rankings,
                               higher_is_better={"distance": False}, n_boot=50, n_perm=50)
    assert set(table["human"]) == {"ratings:SC", "rankings:overall"}
    assert set(table["dimension"]) == {"all", "d0", "d1"}
    assert set(table["level"]) == {"model", "item"}
    model_all = table[(table["level"] == "model") & (table["dimension"] == "all")]
    assert len(model_all) == 4
    assert (model_all["spearman"] > 0.9).all()
    # The single ranker ranks by the latent quality the metrics report: perfect agreement.
    ranked = model_all[model_all["human"] == "rankings:overall"]
    assert ranked["spearman"].tolist() == pytest.approx([1.0, 1.0])
    # Without the direction flag the distance metric disagrees exactly as much.
    plain = human_metric_table(scores, ratings=ratings, n_boot=20, n_perm=20)
    pick = (plain["level"] == "model") & (plain["dimension"] == "all")
    good = plain[pick & (plain["metric"] == "good")]["spearman"].iloc[0]
    distance = plain[pick & (plain["metric"] == "distance")]["spearman"].iloc[0]
    assert distance == pytest.approx(-good)


def test_table_item_level_uses_image_means_over_raters():
    ratings, scores, _ = _ratings_and_scores(1)
    table = human_metric_table(scores[scores["metric"] == "good"], ratings=ratings,
                               n_boot=20, n_perm=20)
    row = table[(table["level"] == "item") & (table["dimension"] == "all")].iloc[0]
    human = ratings.groupby(["prompt_id", "model"])["value"].mean()
    metric = scores[scores["metric"] == "good"].set_index(["prompt_id", "model"])["value"]
    joined = pd.concat([human, metric], axis=1, join="inner")
    ref = stats.spearmanr(joined.iloc[:, 0], joined.iloc[:, 1]).statistic
    assert row["spearman"] == pytest.approx(ref, abs=1e-12)
    assert row["n"] == len(joined)


def test_batched_model_level_equals_single_calls():
    frames = [make_items(6, prompts=10), make_items(7, prompts=10, models=4),
              make_items(8, prompts=14)]
    batched = model_level_many(frames, n_boot=60, n_perm=40, seed=2)
    singles = [model_level(f, n_boot=60, n_perm=40, seed=2) for f in frames]
    for got, want in zip(batched, singles, strict=True):
        assert got == pytest.approx(want, abs=1e-12, nan_ok=True)


def _rater_mean_scores(ratings: pd.DataFrame) -> pd.Series:
    """Brute force: per model, the mean over raters of each rater's mean."""
    per_rater = ratings.groupby(["model", "rater"])["value"].mean()
    return per_rater.groupby(level="model").mean()


def test_model_level_with_mean_of_rater_means_equals_slow_loop():
    ratings, scores, _ = _ratings_and_scores(3, prompts=12, raters=4)
    rng = np.random.default_rng(0)
    ratings = ratings[rng.random(len(ratings)) > 0.3].reset_index(drop=True)  # missing
    good = scores[scores["metric"] == "good"]
    n_boot, seed = 30, 5
    table = human_metric_table(good, ratings=ratings, n_boot=n_boot, n_perm=20, seed=seed,
                               model_score="mean_rater_means")
    row = table[(table["level"] == "model") & (table["dimension"] == "all")].iloc[0]
    assert row["human_model_score"] == "mean_rater_means"
    human = _rater_mean_scores(ratings)
    metric = good.groupby("model")["value"].mean().reindex(human.index)
    assert row["spearman"] == pytest.approx(stats.spearmanr(human, metric).statistic,
                                            abs=1e-12)
    assert row["pearson"] == pytest.approx(stats.pearsonr(human, metric).statistic, abs=1e-12)
    # The CI: every resample recomputes both sides' model scores over the drawn prompts.
    prompts = np.array(sorted(ratings["prompt_id"].unique()))
    idx = bootstrap_indices(len(prompts), n_boot, seed)
    rat_by, met_by = dict(list(ratings.groupby("prompt_id"))), dict(list(good.groupby(
        "prompt_id")))
    rhos = []
    for b in range(n_boot):
        r_sample = pd.concat([rat_by[p] for p in prompts[idx[b]]])
        m_sample = pd.concat([met_by[p] for p in prompts[idx[b]]])
        h = _rater_mean_scores(r_sample)
        m = m_sample.groupby("model")["value"].mean().reindex(h.index)
        rhos.append(stats.spearmanr(h, m).statistic if len(h) == len(human) else np.nan)
    low, high = np.nanquantile(rhos, [0.025, 0.975])
    assert row["spearman_ci_boot_low"] == pytest.approx(low, abs=1e-12)
    assert row["spearman_ci_boot_high"] == pytest.approx(high, abs=1e-12)
    default = human_metric_table(good, ratings=ratings, n_boot=n_boot, n_perm=20, seed=seed)
    first = default[(default["level"] == "model") & (default["dimension"] == "all")].iloc[0]
    assert first["human_model_score"] == "mean_image_means"
    with pytest.raises(ValueError, match="model_score must be one of"):
        human_metric_table(good, ratings=ratings, model_score="median")
