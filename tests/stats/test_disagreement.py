"""Disagreement rankings of the adjudication view, checked against scipy and by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from concord.stats import disagreement


def kendall_w(ranks: np.ndarray) -> float:
    """W of an m x n rank matrix through rank_disagreement (NaN when it lists nothing)."""
    rows = [{"prompt_id": "p", "criterion": "c", "rater": f"r{i}", "model": f"m{j}",
             "image_id": j, "rank": float(r)} for i, row in enumerate(ranks)
            for j, r in enumerate(row)]
    out = disagreement.rank_disagreement(pd.DataFrame(rows))
    return float(out["kendall_w"].iloc[0]) if len(out) else float("nan")


def test_kendall_w_matches_mean_spearman_without_ties():
    # Without ties, mean pairwise Spearman rho = (m W - 1) / (m - 1) (Kendall 1948).
    rng = np.random.default_rng(7)
    for m, n in ((2, 5), (3, 8), (6, 4)):
        ranks = np.vstack([rng.permutation(n) + 1 for _ in range(m)])
        rhos = [sps.spearmanr(ranks[i], ranks[j]).statistic
                for i, j in itertools.combinations(range(m), 2)]
        w = kendall_w(ranks)
        assert (m * w - 1) / (m - 1) == pytest.approx(np.mean(rhos), abs=1e-12)


def test_kendall_w_extremes_and_ties_by_hand():
    same = np.array([[1, 2, 3, 4]] * 3)
    assert kendall_w(same) == pytest.approx(1.0)
    # Two raters in opposite order: rank sums all equal, W = 0.
    assert kendall_w(np.array([[1, 2, 3], [3, 2, 1]])) == pytest.approx(0.0)
    # m=2, n=3, rater 2 ties the last two: sums [2, 4.5, 5.5], S = 6.5,
    # T = 2^3 - 2 = 6, W = 12*6.5 / (4*24 - 2*6) = 78/84.
    w = kendall_w(np.array([[1, 2, 3], [1, 2.5, 2.5]]))
    assert w == pytest.approx(78 / 84)
    assert np.isnan(kendall_w(np.array([[1, 1], [1, 1]])))
    assert np.isnan(kendall_w(np.array([[1, 2]])))


def _ratings(values: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    rows = []
    for n, ((model, crit), vals) in enumerate(values.items()):
        for r, v in enumerate(vals):
            rows.append({"image_id": n, "prompt_id": "p0", "model": model, "sample": 0,
                         "rater": f"r{r}", "criterion": crit, "value": v})
    return pd.DataFrame(rows)


def test_score_disagreement_is_range_then_std():
    frame = _ratings({("a", "SC"): [0, 1, 1], ("b", "SC"): [0, 0, 1], ("c", "SC"): [1, 1, 1],
                      ("d", "SC"): [0, 0.5, 1], ("e", "SC"): [1]})
    out = disagreement.score_disagreement(frame)
    # Range 1 for a, b, d; std breaks the tie (0.47 for a and b, 0.41 for d); e has one
    # rater only.
    assert list(out["model"]) == ["a", "b", "d", "c"]
    assert out.iloc[0]["std"] == pytest.approx(np.std([0, 1, 1]))
    assert out.iloc[2]["range"] == 1
    assert out.iloc[2]["std"] == pytest.approx(np.std([0, 0.5, 1]))
    assert out.iloc[-1]["disagreement"] == 0


def test_rank_disagreement_orders_sets_by_one_minus_w():
    rows = []
    orders = {"p_agree": [[1, 2, 3], [1, 2, 3]], "p_split": [[1, 2, 3], [3, 2, 1]]}
    for prompt, per_rater in orders.items():
        for r, ranks in enumerate(per_rater):
            for img, rank in enumerate(ranks):
                rows.append({"prompt_id": prompt, "rater": f"r{r}", "criterion": "overall",
                             "model": f"m{img}", "rank": rank})
    out = disagreement.rank_disagreement(pd.DataFrame(rows))
    assert list(out["prompt_id"]) == ["p_split", "p_agree"]
    assert list(out["disagreement"]) == pytest.approx([1.0, 0.0])


def test_pair_disagreement_ignores_placement():
    base = {"pair_id": 1, "prompt_id": "p0", "criterion": "overall"}
    unanimous = pd.DataFrame([  # the same model chosen from either side
        {**base, "rater": "r0", "left_model": "x", "right_model": "y", "outcome": "left"},
        {**base, "rater": "r1", "left_model": "y", "right_model": "x", "outcome": "right"},
    ])
    split = unanimous.assign(pair_id=2, outcome=["left", "left"])
    out = disagreement.pair_disagreement(pd.concat([unanimous, split]))
    assert list(out["pair_id"]) == [2, 1]
    assert list(out["disagreement"]) == pytest.approx([0.5, 0.0])
    assert out.iloc[1]["majority"] == "x"
    assert out.iloc[0]["majority"] == "x / y"
