"""Rankings: per-prompt mean ranks, model ranking, Kendall's W per prompt, position bias."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from concord.stats import (
    kendalls_w,
    kendalls_w_by_prompt,
    model_ranking,
    position_bias,
    prompt_mean_ranks,
    rank_by_position,
)


def make_rankings(seed=0, prompts=10, raters=4, models=5, slot_bias=0.0, ties=False):
    rng = np.random.default_rng(seed)
    quality = np.linspace(1, -1, models)
    rows = []
    for p in range(prompts):
        for r in range(raters):
            slots = rng.permutation(models)
            noisy = quality + rng.normal(0, 1, models) + slot_bias * (slots == 0)
            if ties:
                noisy = np.round(noisy)
            ranks = stats.rankdata(-noisy, method="min")
            rows += [{"prompt_id": f"p{p}", "rater": f"r{r}", "criterion": "overall",
                      "model": f"m{m}", "rank": float(ranks[m]), "position": int(slots[m]),
                      "dimension": f"d{p % 2}"} for m in range(models)]
    return pd.DataFrame(rows)


def test_prompt_mean_ranks_match_groupby():
    df = make_rankings(1)
    ours = prompt_mean_ranks(df)
    ref = df.groupby(["prompt_id", "model"])["rank"].mean()
    got = ours.set_index(["prompt_id", "model"])["mean_rank"]
    pd.testing.assert_series_equal(got.sort_index(), ref.sort_index(), check_names=False)
    assert (ours["n_raters"] == 4).all()


def test_model_ranking_averages_prompts_and_ranks_best_first():
    df = pd.DataFrame({
        "prompt_id": ["p1"] * 4 + ["p2"] * 2, "rater": ["a", "a", "b", "b", "a", "a"],
        "criterion": "overall", "model": ["x", "y", "x", "y", "x", "y"],
        "rank": [1, 2, 2, 1, 2, 1], "dimension": ["d1"] * 4 + ["d2"] * 2})
    out = model_ranking(df).set_index(["dimension", "model"])
    # p1: x 1.5, y 1.5; p2: x 2, y 1 → all: x 1.75, y 1.25 (prompts weigh the same).
    assert out.loc[("all", "x"), "mean_rank"] == pytest.approx(1.75)
    assert out.loc[("all", "y"), "mean_rank"] == pytest.approx(1.25)
    assert out.loc[("all", "y"), "position"] == 1
    assert out.loc[("all", "x"), "position"] == 2
    assert out.loc[("d1", "x"), "position"] == out.loc[("d1", "y"), "position"] == 1
    assert out.loc[("d2", "x"), "n_prompts"] == 1


def test_kendalls_w_by_prompt_equals_matrix_version_with_ties():
    df = make_rankings(2, prompts=6, raters=5, ties=True)
    out = kendalls_w_by_prompt(df).set_index("prompt_id")
    for prompt, part in df.groupby("prompt_id"):
        matrix = part.pivot(index="rater", columns="model", values="rank").to_numpy()
        assert out.loc[prompt, "w"] == pytest.approx(kendalls_w(matrix), abs=1e-12)
        assert (out.loc[prompt, "n_raters"], out.loc[prompt, "n_models"]) == (5, 5)


def test_kendalls_w_by_prompt_leaves_out_partial_rankings():
    df = make_rankings(3, prompts=2, raters=3)
    partial = df[~((df["rater"] == "r0") & (df["model"] == "m4") & (df["prompt_id"] == "p0"))]
    out = kendalls_w_by_prompt(partial).set_index("prompt_id")
    assert out.loc["p0", "n_raters"] == 2
    full = partial[(partial["prompt_id"] == "p0") & (partial["rater"] != "r0")]
    matrix = full.pivot(index="rater", columns="model", values="rank").to_numpy()
    assert out.loc["p0", "w"] == pytest.approx(kendalls_w(matrix), abs=1e-12)


def test_position_bias_matches_scipy_and_detects_a_biased_slot():
    df = make_rankings(4, prompts=40, slot_bias=3.0)
    out = position_bias(df).iloc[0]
    ref = stats.spearmanr(df["position"], df["rank"])
    assert out["spearman"] == pytest.approx(ref.statistic, abs=1e-12)
    assert out["spearman_p_analytic"] == pytest.approx(ref.pvalue, rel=1e-9)
    chi = stats.chi2_contingency(pd.crosstab(df["position"], df["rank"]).to_numpy(),
                                 correction=False)
    assert out["chi2"] == pytest.approx(chi.statistic, rel=1e-12)
    assert out["chi2_p_analytic"] < 1e-6
    assert out["dof"] == 16
    by_slot = rank_by_position(df).set_index("position")["mean_rank"]
    assert by_slot.idxmin() == 0
    assert by_slot[0] == pytest.approx(df.loc[df["position"] == 0, "rank"].mean())


def test_two_slots_use_the_uncorrected_chi_square():
    df = make_rankings(6, prompts=30, models=2, slot_bias=1.0)
    out = position_bias(df).iloc[0]
    table = pd.crosstab(df["position"], df["rank"]).to_numpy()
    assert out["dof"] == 1
    plain = stats.chi2_contingency(table, correction=False).statistic
    assert out["chi2"] == pytest.approx(plain, rel=1e-12)
    assert plain != pytest.approx(stats.chi2_contingency(table).statistic)


def test_unbiased_slots_give_a_large_p_value():
    out = position_bias(make_rankings(5, prompts=40)).iloc[0]
    assert out["chi2_p_analytic"] > 0.01


@pytest.mark.parametrize(("change", "message"), [
    ({"rank": 0.0}, "ranks must be numbers >= 1"),
    ({"rank": np.nan}, "ranks must be numbers >= 1"),
])
def test_invalid_ranks_are_refused(change, message):
    df = make_rankings(0, prompts=1).assign(**change)
    with pytest.raises(ValueError, match=message):
        model_ranking(df)


def test_duplicate_ranking_rows_are_refused():
    df = make_rankings(0, prompts=1)
    with pytest.raises(ValueError, match="ranked the same model twice"):
        prompt_mean_ranks(pd.concat([df, df.iloc[:1]]))
    with pytest.raises(ValueError, match=r"missing column\(s\) \['position'\]"):
        position_bias(df.drop(columns="position"))
