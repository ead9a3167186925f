"""Planning by simulation, checked against closed forms (the normal approximation of a
paired difference, the sampling SD of a mean), krippendorff, and the size of Williams'
test under its null hypothesis."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from concord.stats.power import (
    Components,
    components_from_pilot,
    interval_alpha,
    needed,
    plan_table,
)

BASE = Components(sd_prompt=0.3, sd_prompt_model=0.4, sd_rater=0.6, sd_model=0.3,
                  n_models=4, difference=0.12)


def test_simulated_power_follows_the_normal_approximation_of_a_paired_difference():
    table = plan_table(BASE, prompts=[60, 150, 400], raters=[1, 3], n_sims=4000, seed=1)
    for row in table.itertuples():
        # Monte Carlo SE ≤ 0.008; the t-test is a little below the z approximation.
        assert abs(row.power_diff - row.power_diff_normal) < 0.035, row
        assert row.score_width == pytest.approx(row.score_width_normal, rel=0.06)
    sd_d = np.sqrt(2 * 0.4**2 + 2 * 0.6**2 / 3)
    z = stats.norm.ppf(0.975)
    row = table[(table.raters == 3) & (table.prompts == 150)].iloc[0]
    shift = 0.12 * np.sqrt(150) / sd_d
    assert row.power_diff_normal == pytest.approx(stats.norm.cdf(shift - z)
                                                  + stats.norm.cdf(-shift - z), abs=1e-12)


def test_power_grows_with_prompts_and_raters_and_no_difference_gives_the_level():
    table = plan_table(BASE, prompts=[20, 80, 320], raters=[1, 5], n_sims=2000)
    for _, part in table.groupby("raters"):
        assert part.sort_values("prompts")["power_diff"].is_monotonic_increasing
    at = table.set_index(["raters", "prompts"])
    assert at.loc[(5, 80), "power_diff"] > at.loc[(1, 80), "power_diff"]
    null = plan_table(Components(0.3, 0.4, 0.6, 0.3, 4, 0.0), prompts=[50], raters=[3],
                      n_sims=4000, alpha=0.1)
    assert abs(null["power_diff"].iloc[0] - 0.1) < 0.02


def test_interval_alpha_equals_krippendorff():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(3, 30, 1)) + rng.normal(0, 0.7, size=(3, 30, 4))
    got = interval_alpha(y)
    for k in range(3):
        ref = krippendorff.alpha(reliability_data=y[k].T, level_of_measurement="interval")
        assert got[k] == pytest.approx(ref, abs=1e-12)
    assert np.isnan(interval_alpha(np.ones((1, 5, 3))))[0]


def test_alpha_is_undefined_for_one_rater_and_narrows_with_prompts():
    table = plan_table(BASE, prompts=[20, 200], raters=[1, 4], n_sims=300)
    one = table[table.raters == 1]
    assert one["alpha_width"].isna().all() and one["alpha_mean"].isna().all()
    four = table[table.raters == 4].sort_values("prompts")
    assert four["alpha_width"].iloc[1] < four["alpha_width"].iloc[0]
    # α is about the share of true-score variance in a rating.
    true = 0.3**2 + 0.4**2 + BASE.sd_model**2
    assert four["alpha_mean"].iloc[1] == pytest.approx(true / (true + 0.6**2), abs=0.05)


def test_metric_power_has_the_level_under_the_null_and_grows_with_a_gap():
    equal = Components(0.3, 0.4, 0.6, 0.3, 4, 0.1, r_hx=0.5, r_hy=0.5, r_xy=0.6)
    size = plan_table(equal, prompts=[30], raters=[3], n_sims=3000)["power_metrics"].iloc[0]
    assert abs(size - 0.05) < 0.015
    gap = Components(0.3, 0.4, 0.6, 0.3, 4, 0.1, r_hx=0.6, r_hy=0.45, r_xy=0.6)
    powers = plan_table(gap, prompts=[20, 80], raters=[3], n_sims=800)["power_metrics"]
    assert powers.iloc[1] > powers.iloc[0] > 0.05
    assert plan_table(BASE, prompts=[10], raters=[1], n_sims=10)["power_metrics"].isna().all()


def test_measured_correlations_are_rescaled_to_the_number_of_raters():
    c = Components(0.3, 0.4, 0.6, 0.3, 4, 0.1, r_hx=0.5, r_hy=0.4, r_xy=0.6,
                   raters_measured=3)
    assert c.correlation(3)[0, 1] == pytest.approx(0.5)
    assert c.correlation(1)[0, 1] < 0.5 < c.correlation(5)[0, 1]
    assert c.correlation(5)[1, 2] == 0.6


def _pilot(p=400, m=4, r=3, seed=0, sd=(0.3, 0.4, 0.6)):
    rng = np.random.default_rng(seed)
    model = np.array([0.0, 0.2, 0.5, 0.6])[:m]
    u = rng.normal(0, sd[0], (p, 1))
    v = rng.normal(0, sd[1], (p, m))
    y = model + u + v
    rows = [{"prompt_id": f"p{i}", "model": f"m{j}", "rater": f"r{k}", "criterion": "c",
             "value": y[i, j] + rng.normal(0, sd[2])}
            for i in range(p) for j in range(m) for k in range(r)]
    return pd.DataFrame(rows)


def test_components_from_a_pilot_recover_the_simulated_ones():
    got = components_from_pilot(_pilot())
    assert got.sd_rater == pytest.approx(0.6, rel=0.05)
    assert got.sd_prompt_model == pytest.approx(0.4, rel=0.12)
    assert got.sd_prompt == pytest.approx(0.3, rel=0.2)
    assert got.difference == pytest.approx(0.1, abs=0.05) and got.n_models == 4
    assert components_from_pilot(_pilot(), difference=0.3).difference == 0.3


def test_pilots_nobody_wrote_and_bad_numbers():
    one_rater = components_from_pilot(_pilot(p=30, r=1))
    assert one_rater.sd_rater == 0.0                 # no replicate: no rater noise to see
    constant = _pilot(p=10).assign(value=1.0)
    c = components_from_pilot(constant)
    assert (c.sd_prompt, c.sd_prompt_model, c.sd_rater, c.difference) == (0, 0, 0, 0)
    table = plan_table(c, prompts=[5], raters=[2], n_sims=20)
    assert table["power_diff"].iloc[0] == 0.0 and np.isnan(table["alpha_mean"].iloc[0])
    with pytest.raises(ValueError, match="2 prompts"):
        components_from_pilot(_pilot(p=1))
    with pytest.raises(ValueError, match="no ratings"):
        components_from_pilot(_pilot(p=3).assign(value=np.nan))
    with pytest.raises(ValueError, match="sd_rater"):
        Components(0.1, 0.1, -1, 0.1, 3, 0.1)
    with pytest.raises(ValueError, match="not a possible correlation"):
        Components(0.1, 0.1, 0.1, 0.1, 3, 0.1, r_hx=0.9, r_hy=-0.9, r_xy=0.9)
    with pytest.raises(ValueError, match="together"):
        Components(0.1, 0.1, 0.1, 0.1, 3, 0.1, r_hx=0.5)
    with pytest.raises(ValueError, match="prompts"):
        plan_table(BASE, prompts=[1], raters=[1])


def test_needed_picks_the_fewest_prompts_reaching_each_target():
    table = pd.DataFrame({"raters": [1, 1, 1, 3, 3], "prompts": [10, 50, 100, 10, 50],
                          "power_diff": [0.2, 0.7, 0.9, 0.5, 0.85],
                          "power_metrics": [np.nan] * 5,
                          "score_width": [0.5, 0.3, 0.2, 0.4, 0.25],
                          "alpha_width": [np.nan, np.nan, np.nan, 0.3, 0.1]})
    out = needed(table, power=0.8, width=0.3, alpha_width=0.2).set_index("raters")
    assert out.loc[1, "prompts_for_power_diff"] == 100
    assert out.loc[3, "prompts_for_power_diff"] == 50
    assert out.loc[1, "prompts_for_score_width"] == 50
    assert pd.isna(out.loc[1, "prompts_for_alpha_width"])
    assert out.loc[3, "prompts_for_alpha_width"] == 50
