"""Bradley–Terry strengths (Davidson ties / ties count half) of the Pairs frame.

References: a brute-force likelihood (a Python loop over judgments, maximised by
scipy.optimize.minimize), closed forms for two models, and choix 0.4.1 for plain
Bradley–Terry.
"""

from __future__ import annotations

import math

import choix
import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from concord.stats._resample import bootstrap_indices
from concord.stats.pairs.bradley_terry import (
    ELO_FACTOR,
    _bootstrap,
    bradley_terry,
    fit_bradley_terry,
)
from concord.stats.pairs.frame import count_matrices, judgments, pairs_from_rankings
from tests.stats.pairs_helpers import davidson_pairs, pairs_frame, plackett_luce_rankings

THETA = np.array([0.9, 0.4, 0.0, -0.5, -0.8])


def brute_force_davidson(df: pd.DataFrame, models: list[str]):
    """Davidson MLE by Nelder–Mead on a plain Python-loop log-likelihood."""
    index = {m: k for k, m in enumerate(models)}
    rows = [(index[r.left_model], index[r.right_model], r.outcome) for r in df.itertuples()]

    def loglik(params):
        theta = np.r_[0.0, params[:-1]]  # θ_0 = 0 fixes the scale
        nu = math.exp(params[-1])
        total = 0.0
        for a, b, outcome in rows:
            pa, pb = math.exp(theta[a]), math.exp(theta[b])
            tie = nu * math.sqrt(pa * pb)
            num = {"left": pa, "right": pb}.get(outcome, tie)
            total += math.log(num / (pa + pb + tie))
        return total

    res = optimize.minimize(lambda p: -loglik(p), np.zeros(len(models)), method="Nelder-Mead",
                            options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 40_000,
                                     "maxfev": 40_000})
    theta = np.r_[0.0, res.x[:-1]]
    return theta - theta.mean(), math.exp(res.x[-1]), loglik(res.x)


def test_davidson_matches_brute_force_likelihood():
    df = davidson_pairs(THETA[:4], nu=0.7, prompts=60, raters=3, seed=4, both_bad_share=0.3)
    ours = bradley_terry(df, n_boot=1).set_index("model").sort_index()
    theta, nu, loglik = brute_force_davidson(df, ours.index.tolist())
    assert np.abs(ours["strength"].to_numpy() - theta).max() < 1e-4
    assert ours["nu"].iloc[0] == pytest.approx(nu, abs=1e-4)
    assert ours["loglik"].iloc[0] == pytest.approx(loglik, abs=1e-7)


def test_davidson_loglik_is_the_maximum_on_a_grid():
    df = davidson_pairs(THETA[:3], nu=0.5, prompts=80, raters=2, seed=5)
    j = judgments(df, where="t")
    fit = fit_bradley_terry(*count_matrices(j))
    _, _, brute = brute_force_davidson(df, j.models.tolist())
    # Every grid point around the estimate has a lower brute-force log-likelihood.
    steps = np.linspace(-0.05, 0.05, 5)
    grid = [loglik_at(df, j.models, fit.strength + np.r_[0, d1, d2], fit.nu * np.exp(dn))
            for d1 in steps for d2 in steps for dn in steps]
    assert max(grid) == pytest.approx(fit.loglik, abs=1e-9)
    assert fit.loglik == pytest.approx(brute, abs=1e-7)


def loglik_at(df, models, theta, nu):
    index = {m: k for k, m in enumerate(models)}
    total = 0.0
    for r in df.itertuples():
        pa, pb = math.exp(theta[index[r.left_model]]), math.exp(theta[index[r.right_model]])
        tie = nu * math.sqrt(pa * pb)
        total += math.log({"left": pa, "right": pb}.get(r.outcome, tie) / (pa + pb + tie))
    return total


def test_two_models_have_closed_forms():
    # Davidson with 2 models fits the 3 outcome shares exactly: θ1 − θ2 = log(w1/w2),
    # ν = t / sqrt(w1 w2). Ties-count-half: θ1 − θ2 = log((w1 + t/2) / (w2 + t/2)).
    wins = np.array([[0.0, 30.0], [12.0, 0.0]])
    ties = np.array([[0.0, 9.0], [9.0, 0.0]])
    fit = fit_bradley_terry(wins, ties)
    assert fit.strength[0] - fit.strength[1] == pytest.approx(math.log(30 / 12), abs=1e-10)
    assert fit.nu == pytest.approx(9 / math.sqrt(30 * 12), abs=1e-10)
    assert fit.strength.sum() == pytest.approx(0, abs=1e-12)
    half = fit_bradley_terry(wins, ties, tie_model="half")
    assert half.strength[0] - half.strength[1] == pytest.approx(math.log(34.5 / 16.5),
                                                                abs=1e-10)
    assert half.nu == 0.0


def test_davidson_recovers_known_strengths():
    df = davidson_pairs(THETA, nu=0.5, prompts=2000, raters=3, per_prompt=2, seed=6)
    out = bradley_terry(df, n_boot=1).set_index("model").sort_index()
    assert np.abs(out["strength"].to_numpy() - (THETA - THETA.mean())).max() < 0.06
    assert out["nu"].iloc[0] == pytest.approx(0.5, abs=0.04)


def test_half_ties_match_choix_ilsr_dense():
    df = davidson_pairs(THETA, nu=0.6, prompts=300, raters=2, seed=7, both_bad_share=0.5)
    j = judgments(df, where="t")
    wins, ties = count_matrices(j)
    ours = fit_bradley_terry(wins, ties, tie_model="half").strength
    ref = choix.ilsr_pairwise_dense(wins + ties / 2, max_iter=10_000, tol=1e-13)
    assert np.abs(ours - (ref - ref.mean())).max() < 1e-8


def test_no_ties_matches_choix_ilsr_and_opt_pairwise():
    df = davidson_pairs(THETA, nu=0.0, prompts=300, raters=2, seed=8)
    j = judgments(df, where="t")
    data = [(int(w), int(lo)) for w, lo in zip(np.where(j.credit == 1, j.left, j.right),
                                               np.where(j.credit == 1, j.right, j.left),
                                               strict=True)]
    wins, ties = count_matrices(j)
    davidson = fit_bradley_terry(wins, ties)
    assert davidson.nu == 0.0  # nothing tied: Davidson's MLE is plain Bradley–Terry
    ref = choix.ilsr_pairwise(len(j.models), data, max_iter=10_000, tol=1e-13)
    assert np.abs(davidson.strength - (ref - ref.mean())).max() < 1e-8
    # choix's MAP adds alpha·Σθ² to the negative log-likelihood: our prior = 2·alpha.
    map_ref = choix.opt_pairwise(len(j.models), data, alpha=0.5, tol=1e-10)
    ours = fit_bradley_terry(wins, tie_model="half", prior=1.0).strength
    assert np.abs(ours - map_ref).max() < 1e-6


def test_unidentifiable_comparisons_name_the_models():
    disconnected = pairs_frame([("p1", "r", "a", "b", "left"), ("p1", "r", "b", "a", "left"),
                                ("p2", "r", "c", "d", "left"), ("p2", "r", "d", "c", "left")])
    with pytest.raises(ValueError, match=r"disconnected.*\[\['a', 'b'\], \['c', 'd'\]\]"):
        bradley_terry(disconnected, n_boot=1)
    undefeated = pairs_frame([("p1", "r", "a", "b", "left"), ("p1", "r", "b", "c", "left"),
                              ("p2", "r", "c", "b", "left"), ("p2", "r", "a", "c", "left")])
    with pytest.raises(ValueError, match=r"models \['a'\] never lost.*\['b', 'c'\] never won"):
        bradley_terry(undefeated, n_boot=1)
    winless = pairs_frame([("p1", "r", "a", "b", "left"), ("p1", "r", "b", "a", "left"),
                           ("p2", "r", "a", "c", "left"), ("p2", "r", "b", "c", "left")])
    with pytest.raises(ValueError, match=r"\['a', 'b'\] never lost.*\['c'\] never won"):
        bradley_terry(winless, n_boot=1)
    # A tie is credit both ways, so one tie makes the strengths finite.
    tied = pd.concat([undefeated, pairs_frame([("p3", "r", "b", "a", "tie")])])
    assert np.isfinite(bradley_terry(tied, n_boot=1)["strength"]).all()
    # A prior makes them finite too, with the undefeated model first.
    fit = bradley_terry(undefeated, prior=1.0, n_boot=1)
    assert fit["model"].iloc[0] == "a" and np.isfinite(fit["strength"]).all()
    assert fit["strength"].sum() == pytest.approx(0, abs=1e-9)


def test_fit_refuses_bad_matrices_and_all_ties():
    with pytest.raises(ValueError, match="square matrix"):
        fit_bradley_terry(np.ones((2, 3)))
    with pytest.raises(ValueError, match="ties must be symmetric"):
        fit_bradley_terry(np.array([[0, 1], [1, 0]]), np.array([[0, 1], [2, 0]]))
    with pytest.raises(ValueError, match="wins must be finite counts"):
        fit_bradley_terry(np.array([[0, -1], [1, 0]]))
    with pytest.raises(ValueError, match="tie_model must be one of"):
        fit_bradley_terry(np.array([[0, 1], [1, 0]]), tie_model="rao-kupper")
    with pytest.raises(ValueError, match="prior must be a number >= 0, got -1"):
        fit_bradley_terry(np.array([[0, 1], [1, 0]]), prior=-1)
    ties = np.array([[0, 3], [3, 0]])
    with pytest.raises(ValueError, match="every comparison is a tie"):
        fit_bradley_terry(np.zeros((2, 2)), ties)
    assert fit_bradley_terry(np.zeros((2, 2)), ties, tie_model="half").strength.tolist() == [0, 0]


def test_scores_are_elo_scaled_and_anchored():
    df = davidson_pairs(THETA, nu=0.3, prompts=100, seed=9)
    free = bradley_terry(df, n_boot=20).set_index("model")
    anchored = bradley_terry(df, n_boot=20, anchor="m2", base=1500).set_index("model")
    assert free["score"].mean() == pytest.approx(1000)
    assert anchored.loc["m2", "score"] == 1500
    assert anchored.loc["m2", ["score_ci_low", "score_ci_high"]].tolist() == [1500, 1500]
    diff = anchored["score"] - anchored.loc["m2", "score"]
    assert np.allclose(diff, ELO_FACTOR * (free["strength"] - free.loc["m2", "strength"]))
    with pytest.raises(ValueError, match=r"anchor must be one of .* got 'zz'"):
        bradley_terry(df, anchor="zz", n_boot=1)


def test_bootstrap_resamples_prompts():
    df = davidson_pairs(THETA[:3], nu=0.4, prompts=40, raters=2, seed=10)
    j = judgments(df, where="t")
    fit = fit_bradley_terry(*count_matrices(j))
    thetas, nus = _bootstrap(j, fit, "davidson", 0.0, 3, seed=11)
    prompts = np.sort(df["prompt_id"].unique())
    for b, row in enumerate(bootstrap_indices(len(prompts), 3, 11)):
        resample = pd.concat([df[df["prompt_id"] == prompts[k]] for k in row])
        jb = judgments(resample, where="t")
        ref = fit_bradley_terry(*count_matrices(jb))
        assert np.allclose(thetas[b], ref.strength, atol=1e-8)
        assert nus[b] == pytest.approx(ref.nu, abs=1e-8)


def test_bootstrap_interval_and_undefined_resamples():
    df = davidson_pairs(THETA, nu=0.4, prompts=150, seed=12)
    out = bradley_terry(df, n_boot=200, seed=3)
    assert (out["strength_ci_low"] < out["strength"]).all()
    assert (out["strength"] < out["strength_ci_high"]).all()
    assert out["boot_undefined"].iloc[0] == 0
    again = bradley_terry(df, n_boot=200, seed=3)
    pd.testing.assert_frame_equal(out, again)
    # A model met on one prompt only is missing from most resamples: those are counted.
    rare = pd.concat([df, pairs_frame([("solo", "r", "m0", "m9", "left"),
                                       ("solo", "r", "m9", "m1", "left")])])
    for prior in (0.0, 0.5):
        out = bradley_terry(rare, n_boot=50, prior=prior)
        assert 0 < out["boot_undefined"].iloc[0] < 50
        assert np.isfinite(out[["strength_ci_low", "strength_ci_high"]]).all().all()


def test_ranking_and_pairwise_studies_meet_on_one_bradley_terry_scale():
    # Plackett–Luce rankings imply P(i above j) = BT(θi − θj), so the pairs derived from a
    # ranking study and a pairwise study of the same models estimate the same strengths.
    theta = np.array([0.8, 0.3, 0.0, -0.4, -0.7])
    theta = theta - theta.mean()
    ranked = pairs_from_rankings(plackett_luce_rankings(theta, prompts=400, seed=1))
    paired = davidson_pairs(theta, prompts=400, raters=3, per_prompt=3, seed=2)
    a = bradley_terry(ranked, n_boot=2).set_index("model")["strength"].sort_index()
    b = bradley_terry(paired, n_boot=2).set_index("model")["strength"].sort_index()
    assert np.abs(a.to_numpy() - theta).max() < 0.1
    assert np.abs(b.to_numpy() - theta).max() < 0.1
    joint = bradley_terry(pd.concat([ranked, paired]), n_boot=2)
    assert joint["model"].tolist() == [f"m{k}" for k in range(5)]


@pytest.mark.parametrize(("c", "scale", "odds", "initial"), [(0.5, 400.0, 10.0, 1000.0),
                                                             (2.0, 100.0, 2.0, 0.0)])
def test_the_penalised_fit_is_the_arena_logistic_regression(c, scale, odds, initial):
    """Arena leaderboards fit Bradley–Terry as a logistic regression without intercept:
    one row per vote, +ln(odds) for model A and −ln(odds) for model B, ties as half a win
    each way (sample weights), an L2 penalty of strength 1/C, and score = scale · coef +
    initial. The same fit here is the "half" tie model with prior = 1 / (C · ln² odds)."""
    from sklearn.linear_model import LogisticRegression

    df = davidson_pairs(THETA, nu=0.4, prompts=40, seed=7)
    models = sorted(set(df.left_model) | set(df.right_model))
    index = {m: i for i, m in enumerate(models)}
    rows, labels, weights = [], [], []
    for a, b, outcome in zip(df.left_model, df.right_model, df.outcome, strict=True):
        x = np.zeros(len(models))
        x[index[a]], x[index[b]] = np.log(odds), -np.log(odds)
        credit = {"left": 1.0, "right": 0.0}.get(outcome, 0.5)
        for label, weight in ((1, credit), (0, 1.0 - credit)):
            if weight:
                rows.append(x)
                labels.append(label)
                weights.append(weight)
    lr = LogisticRegression(fit_intercept=False, C=c, tol=1e-12, max_iter=10_000)
    lr.fit(np.array(rows), np.array(labels), sample_weight=np.array(weights))
    arena = dict(zip(models, scale * lr.coef_[0] + initial, strict=True))
    ours = bradley_terry(df, tie_model="half", prior=1 / (c * np.log(odds) ** 2), n_boot=1,
                         base=initial, scale=scale, odds=odds).set_index("model")["score"]
    for model in models:
        assert ours[model] == pytest.approx(arena[model], abs=1e-4 * scale)


def test_the_vote_bootstrap_resamples_judgments():
    from concord.stats.pairs.bradley_terry import bradley_terry_boot

    one_each = davidson_pairs(THETA[:4], prompts=300, raters=1, seed=8)
    assert one_each.groupby("prompt_id").size().max() == 1
    by_prompt = bradley_terry_boot(one_each, tie_model="half", n_boot=30, seed=3)
    by_vote = bradley_terry_boot(one_each, tie_model="half", n_boot=30, seed=3, unit="vote")
    assert np.allclose(by_prompt.thetas, by_vote.thetas, equal_nan=True)
    many = davidson_pairs(THETA[:4], prompts=60, raters=4, seed=8)
    by_prompt = bradley_terry_boot(many, tie_model="half", n_boot=30, seed=3)
    by_vote = bradley_terry_boot(many, tie_model="half", n_boot=30, seed=3, unit="vote")
    assert np.allclose(by_prompt.fit.strength, by_vote.fit.strength)  # one fit
    assert not np.allclose(by_prompt.thetas, by_vote.thetas)  # other resamples
    with pytest.raises(ValueError, match="unit"):
        bradley_terry_boot(many, unit="rater")
