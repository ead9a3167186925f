"""Grouped Spearman / Kendall τ_b / Pearson against scipy; combining r three ways."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import concord.stats._contingency as contingency
import concord.stats.grouped as grouped_module
from concord.stats import combine_r, grouped_correlations
from concord.stats.grouped import combine_table

SCIPY = {"spearman": stats.spearmanr, "kendall_tau_b": stats.kendalltau,
         "pearson": stats.pearsonr}


def _data(seed: int, kind: str):
    rng = np.random.default_rng(seed)
    n_groups = int(rng.integers(1, 9))
    sizes = rng.integers(0, 45, n_groups)
    group = np.repeat(np.arange(n_groups), sizes)
    x = rng.choice([0.0, 0.5, 1.0, 2.0], group.size)          # rubric levels: many ties
    if kind == "discrete":
        y = rng.integers(0, 12, group.size) / 3.0               # means of a few ratings
    elif kind == "continuous":
        y = rng.normal(size=group.size)                         # a metric
    else:  # both continuous, some exact ties
        x = np.round(rng.normal(size=group.size), 1)
        y = rng.normal(size=group.size)
    if group.size:
        x[rng.random(group.size) < 0.05] = np.nan               # missing values
    perm = rng.permutation(group.size)                          # rows in any order
    return x[perm], y[perm], group[perm], n_groups


def _check_against_scipy(x, y, group, n_groups, out):
    for g in range(n_groups):
        sel = (group == g) & np.isfinite(x) & np.isfinite(y)
        xs, ys = x[sel], y[sel]
        assert out.loc[g, "n"] == sel.sum()
        if sel.sum() < 3 or np.ptp(xs) == 0 or np.ptp(ys) == 0:
            assert out.loc[g, ["spearman", "kendall_tau_b", "pearson"]].isna().all()
            continue
        for name, test in SCIPY.items():
            assert out.loc[g, name] == pytest.approx(test(xs, ys).statistic, abs=1e-12), name


@pytest.mark.parametrize("kind", ["discrete", "continuous", "many"])
@pytest.mark.parametrize("seed", range(6))
def test_grouped_correlations_equal_scipy_per_group(kind, seed):
    x, y, group, n_groups = _data(seed, kind)
    out = grouped_correlations(x, y, group, n_groups)
    assert list(out.index) == list(range(n_groups))
    _check_against_scipy(x, y, group, n_groups, out)


@pytest.mark.parametrize("seed", range(4))
def test_sort_path_and_scipy_fallback_equal_scipy_too(monkeypatch, seed):
    x, y, group, n_groups = _data(seed, "discrete")
    monkeypatch.setattr(grouped_module, "MAX_CELLS", 0)      # no count table
    _check_against_scipy(x, y, group, n_groups, grouped_correlations(x, y, group, n_groups))
    monkeypatch.setattr(grouped_module, "_MAX_LEVELS", 1)    # Kendall through scipy
    _check_against_scipy(x, y, group, n_groups, grouped_correlations(x, y, group, n_groups))
    assert contingency.MAX_CELLS > 0


def test_constant_and_tiny_groups_are_undefined():
    group = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    x = np.array([1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 2.0])
    y = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 1.0, 0.0])
    out = grouped_correlations(x, y, group)
    assert out.loc[[0, 1], "spearman"].isna().all()            # constant x; only 2 pairs
    assert out.loc[2, "spearman"] == pytest.approx(-1.0)
    assert out.loc[2, "kendall_tau_b"] == pytest.approx(-1.0)


def test_combine_r_three_ways_by_hand():
    r = [0.2, 0.5, float("nan"), 0.9, 1.0]
    got = combine_r(r)
    finite = [0.2, 0.5, 0.9, 1.0]
    clip = 0.999999999999
    assert got["n"] == 4
    assert got["mean_r"] == pytest.approx(sum(finite) / 4, abs=1e-15)
    z = sum(math.atanh(max(-clip, min(clip, v))) for v in finite) / 4
    assert got["fisher_z"] == pytest.approx(math.tanh(z), abs=1e-15)
    assert got["tanh_mean_r"] == pytest.approx(math.tanh(sum(finite) / 4), abs=1e-15)
    empty = combine_r([float("nan")])
    assert empty["n"] == 0 and math.isnan(empty["fisher_z"])


def test_combine_table_is_long_format_per_statistic():
    import pandas as pd

    table = pd.DataFrame({"k": ["a", "a", "b"], "spearman": [0.1, 0.3, 0.5],
                          "kendall_tau_b": [0.0, 0.2, np.nan], "pearson": [0.4, 0.4, 0.4]})
    out = combine_table(table, ["k"]).set_index(["k", "statistic"])
    assert out.loc[("a", "spearman"), "mean_r"] == pytest.approx(0.2)
    assert out.loc[("b", "kendall_tau_b"), "n_models"] == 0
    assert out.loc[("a", "pearson"), "fisher_z"] == pytest.approx(0.4)


def test_combine_table_equals_combine_r_per_group():
    """All groups at once give what combine_r gives each group (NaN r skipped, a missing
    key a group of its own, a group without any r NaN with count 0)."""
    import pandas as pd

    rng = np.random.default_rng(3)
    n = 400
    table = pd.DataFrame({"who": rng.choice(["rater", "model"], n),
                          "name": rng.choice(["a", "b", "c", None], n),
                          **{stat: rng.uniform(-1, 1, n) for stat in grouped_module.STATS}})
    table.loc[rng.random(n) < 0.2, "spearman"] = np.nan
    table.loc[table["name"] == "c", "pearson"] = np.nan
    table.loc[3, "kendall_tau_b"] = 1.0  # clipped before atanh
    out = combine_table(table, ["who", "name"], count="n")
    expected = []
    for head, part in table.groupby(["who", "name"], sort=True, dropna=False):
        for stat in grouped_module.STATS:
            expected.append({"who": head[0], "name": head[1], "statistic": stat,
                             **combine_r(part[stat])})
    want = pd.DataFrame(expected)
    assert out[["who", "statistic"]].equals(want[["who", "statistic"]])
    assert out["name"].tolist() == want["name"].tolist()
    assert out["n"].tolist() == want["n"].tolist()
    for col in ("mean_r", "fisher_z", "tanh_mean_r"):
        np.testing.assert_allclose(out[col], want[col], rtol=0, atol=1e-12)


def test_lengths_must_agree():
    with pytest.raises(ValueError, match="lengths differ"):
        grouped_correlations([1.0, 2.0], [1.0], [0, 0])


@pytest.mark.parametrize("max_cells", [None, 0])
def test_parents_pool_their_groups(monkeypatch, max_cells):
    if max_cells is not None:
        monkeypatch.setattr(grouped_module, "MAX_CELLS", max_cells)  # the sort path
    x, y, group, n_groups = _data(7, "discrete")
    parents = np.arange(n_groups) % 2
    out = grouped_correlations(x, y, group, n_groups, parents=parents)
    assert len(out) == n_groups + 2
    _check_against_scipy(x, y, group, n_groups, out.iloc[:n_groups])
    pooled = out.iloc[n_groups:].reset_index(drop=True)
    _check_against_scipy(x, y, parents[group], 2, pooled)
