"""Online Elo on the Pairs frame: a hand-computed sequence and the average over orders."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from concord.stats.pairs.elo import elo_online, elo_ratings
from tests.stats.pairs_helpers import davidson_pairs, pairs_frame

THETA = np.array([0.9, 0.4, 0.0, -0.5, -0.8])


def test_elo_hand_computed_sequence():
    df = pairs_frame([("p1", "r", "A", "B", "left"), ("p1", "r", "B", "C", "tie"),
                      ("p2", "r", "C", "A", "left")])
    out = elo_ratings(df, k=32, n_perm=None).set_index("model")["elo"]
    a, b, c = 1000.0, 1000.0, 1000.0
    # 1: A beats B at equal ratings: expected 0.5, so ±16.
    a, b = 1016.0, 984.0
    # 2: B (984) ties C (1000): E_B = 1 / (1 + 10^(16/400)).
    e_b = 1 / (1 + 10 ** (16 / 400))
    b, c = b + 32 * (0.5 - e_b), c - 32 * (0.5 - e_b)
    # 3: C beats A (1016): E_C = 1 / (1 + 10^((1016 − C)/400)).
    e_c = 1 / (1 + 10 ** ((a - c) / 400))
    c, a = c + 32 * (1 - e_c), a - 32 * (1 - e_c)
    assert out["A"] == pytest.approx(a, abs=1e-9)
    assert out["B"] == pytest.approx(b, abs=1e-9)
    assert out["C"] == pytest.approx(c, abs=1e-9)
    assert e_b == pytest.approx(0.47699, abs=1e-5) and a == pytest.approx(999.22986, abs=1e-4)


def test_elo_averages_seeded_random_orders():
    df = davidson_pairs(THETA, nu=0.3, prompts=30, seed=13)
    out = elo_ratings(df, k=16, n_perm=3, seed=5).set_index("model")
    rng = np.random.default_rng(5)
    replays = [elo_ratings(df.iloc[rng.permutation(len(df))], k=16, n_perm=None)
               .set_index("model")["elo"] for _ in range(3)]
    mean = pd.concat(replays, axis=1).mean(axis=1)
    assert np.allclose(out["elo"], mean.reindex(out.index))
    assert out["elo"].mean() == pytest.approx(1000)  # Elo updates are zero-sum
    assert (out["n_orders"] == 3).all() and (out["elo_sd"] > 0).all()
    ranked = elo_ratings(davidson_pairs(THETA, prompts=600, seed=14), k=16)
    assert ranked["model"].tolist() == ["m0", "m1", "m2", "m3", "m4"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"k": 0}, "k must be a number > 0, got 0"), ({"scale": -4}, "scale must be"),
    ({"n_perm": 0}, "n_perm must be an integer >= 1, got 0"),
    ({"initial": float("nan")}, "initial must be a finite number")])
def test_elo_refuses_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        elo_ratings(pairs_frame([("p", "r", "a", "b", "left")]), **kwargs)


def _plain_online(rows, *, k, scale, base, initial=1000.0):
    """Online Elo by a plain loop over (left, right, outcome) rows, in the given order."""
    rating: dict[str, float] = {}
    for left, right, outcome in rows:
        ra, rb = rating.setdefault(left, initial), rating.setdefault(right, initial)
        expected = 1 / (1 + base ** ((rb - ra) / scale))
        score = {"left": 1.0, "right": 0.0}.get(outcome, 0.5)
        rating[left], rating[right] = ra + k * (score - expected), rb - k * (score - expected)
    return rating


@pytest.mark.parametrize(("k", "scale", "base"), [(4.0, 400.0, 10.0), (32.0, 173.7, np.e)])
def test_online_elo_replays_the_votes_in_time_order(k, scale, base):
    df = davidson_pairs(THETA, nu=0.3, prompts=40, seed=21)
    rng = np.random.default_rng(3)
    stamps = pd.Timestamp("2024-05-01", tz="UTC") + pd.to_timedelta(
        rng.permutation(len(df)), unit="min")
    df = df.assign(created_at=[t.isoformat() for t in stamps])
    got = elo_online(df, k=k, scale=scale, base=base).set_index("model")["elo"]
    timed = df.assign(t=stamps).sort_values("t", kind="stable")
    want = _plain_online(zip(timed.left_model, timed.right_model, timed.outcome, strict=True),
                         k=k, scale=scale, base=base)
    for model, value in want.items():
        assert got[model] == pytest.approx(value, abs=1e-9)
    in_rows = _plain_online(zip(df.left_model, df.right_model, df.outcome, strict=True),
                            k=k, scale=scale, base=base)
    assert any(abs(in_rows[m] - want[m]) > 1e-6 for m in want)  # the order matters


def test_online_elo_interval_is_a_bootstrap_over_votes_in_time_order():
    df = davidson_pairs(THETA, prompts=25, seed=4).reset_index(drop=True)
    df = df.assign(created_at=[f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}"
                               for i in range(len(df))])
    out = elo_online(df, n_boot=40, seed=9, ci=0.9).set_index("model")
    rng = np.random.default_rng(9)
    draws = np.sort(rng.integers(0, len(df), size=(40, len(df))), axis=1)
    boots = pd.DataFrame([_plain_online(
        zip(df.left_model.iloc[d], df.right_model.iloc[d], df.outcome.iloc[d], strict=True),
        k=4.0, scale=400.0, base=10.0) for d in draws])
    for model in out.index:
        values = boots[model].fillna(1000.0).to_numpy()  # a model drawn in no vote keeps 1000
        low, high = np.quantile(values, [0.05, 0.95])
        assert out.loc[model, "elo_ci_low"] == pytest.approx(low, abs=1e-9)
        assert out.loc[model, "elo_ci_high"] == pytest.approx(high, abs=1e-9)
    assert (out["n_boot"] == 40).all()
