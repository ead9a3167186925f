"""Order-independent group sums: the same ratings give bit-identical image means."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from concord.stats import human_metric_table
from concord.stats._exact import group_means, group_sums, rest_means
from concord.stats.human_vs_metric.table import item_means


def _exact_mean(values) -> float:
    """The correctly rounded mean of exact rationals (the order-free reference)."""
    total = sum((Fraction(v) for v in values), Fraction(0))
    return float(total / len(values))


def _groups(seed: int, kind: str, n_groups: int = 40, max_size: int = 6):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, n_groups)
    group = np.repeat(np.arange(n_groups), sizes)
    if kind == "dyadic":
        values = rng.choice([0.0, 0.5, 1.0, 2.0], group.size)
    elif kind == "few":  # non-dyadic but few distinct values (like O = sqrt(SC·PR))
        values = rng.choice([0.1, 0.2, 0.3, math.sqrt(0.5), 0.7], group.size)
    else:  # many distinct values
        values = rng.random(group.size) * 3
    return group, values, n_groups


@pytest.mark.parametrize("kind", ["dyadic", "few", "many"])
def test_group_sums_do_not_depend_on_row_order(kind):
    group, values, n = _groups(1, kind)
    first = group_sums(group, values, n)
    rng = np.random.default_rng(2)
    for _ in range(20):
        perm = rng.permutation(group.size)
        again = group_sums(group[perm], values[perm], n)
        assert np.array_equal(first, again)  # bit for bit
    means, counts = group_means(group, values, n)
    for g in range(n):
        member = values[group == g]
        assert counts[g] == member.size
        assert means[g] == pytest.approx(_exact_mean(member), rel=1e-15, abs=1e-15)


def test_equal_multisets_give_identical_means_where_a_running_sum_does_not():
    # 0.1 + 0.2 + 0.3 in two orders: a running sum gives 0.6000000000000001 and 0.6.
    group = np.array([0, 0, 0, 1, 1, 1])
    values = np.array([0.1, 0.2, 0.3, 0.3, 0.2, 0.1])
    naive = np.bincount(group, weights=values)
    assert naive[0] != naive[1]  # the bug this module exists for
    means, _ = group_means(group, values, 2)
    assert means[0] == means[1]


@pytest.mark.parametrize("kind", ["dyadic", "few", "many"])
def test_rest_means_equal_the_exact_mean_of_the_others(kind):
    group, values, n = _groups(3, kind)
    rest, others = rest_means(group, values, n)
    for row in range(group.size):
        mates = [values[j] for j in np.flatnonzero(group == group[row]) if j != row]
        assert others[row] == len(mates)
        if not mates:
            assert np.isnan(rest[row])
        else:
            assert rest[row] == pytest.approx(_exact_mean(mates), rel=1e-15, abs=1e-15)
    perm = np.random.default_rng(4).permutation(group.size)
    again, _ = rest_means(group[perm], values[perm], n)
    assert np.array_equal(rest[perm], again, equal_nan=True)


def test_rest_means_of_equal_multisets_are_identical():
    # Rater x sees the others' {0.1, 0.2, 0.3} on both images, in different row orders.
    group = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    values = np.array([0.9, 0.1, 0.2, 0.3, 0.3, 0.9, 0.2, 0.1])
    rest, _ = rest_means(group, values, 2)
    assert rest[0] == rest[5]


def _tie_study(order_seed: int) -> pd.DataFrame:
    """Images whose raters gave the same O values, rows in a shuffled order."""
    rows = []
    o_values = [0.1, 0.2, 0.3]
    for p in range(6):
        for m, model in enumerate(("a", "b", "c")):
            vals = o_values if (p + m) % 2 else o_values[::-1]
            for r, v in enumerate(vals):
                rows.append({"prompt_id": f"p{p}", "model": model, "rater": f"r{r}",
                             "criterion": "O", "value": v + (m == 2) * 0.25 * (p % 3)})
    frame = pd.DataFrame(rows)
    return frame.sample(frac=1, random_state=order_seed).reset_index(drop=True)


def test_image_means_and_correlations_are_the_same_for_every_row_order():
    metric = pd.DataFrame([{"prompt_id": f"p{p}", "model": m, "metric": "q",
                            "value": float(p + 3 * k)}
                           for p in range(6) for k, m in enumerate(("a", "b", "c"))])
    tables, means = [], []
    for seed in range(8):
        ratings = _tie_study(seed)
        items = item_means(ratings, ["prompt_id", "model"], where="test").sort_values(
            ["prompt_id", "model"], ignore_index=True)
        means.append(items["value"].to_numpy())
        tables.append(human_metric_table(metric, ratings=ratings, n_boot=5, n_perm=5))
    for other in means[1:]:
        assert np.array_equal(means[0], other)
    # Every image of models a and b has the same multiset: one tied human score.
    tied = means[0][np.r_[0:18][np.arange(18) % 3 != 2]]
    assert len(set(tied.tolist())) == 1
    item = tables[0][(tables[0]["level"] == "item") & (tables[0]["dimension"] == "all")]
    exact = pd.DataFrame(_tie_study(0)).groupby(["prompt_id", "model"])["value"].apply(
        lambda s: _exact_mean(s.tolist()))
    ref = stats.spearmanr(exact.to_numpy(), metric.set_index(["prompt_id", "model"])[
        "value"].reindex(exact.index).to_numpy()).statistic
    assert item["spearman"].iloc[0] == pytest.approx(ref, abs=1e-12)
    for other in tables[1:]:
        pd.testing.assert_frame_equal(tables[0], other)
