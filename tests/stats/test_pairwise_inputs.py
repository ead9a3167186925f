"""Bad Pairs frames get a ValueError naming the bad value, from every pairwise statistic."""

from __future__ import annotations

import pandas as pd
import pytest

from concord.stats.pairs.agreement import metric_pair_accuracy, oriented_pairs, pair_agreement
from concord.stats.pairs.bradley_terry import bradley_terry
from concord.stats.pairs.elo import elo_ratings
from concord.stats.pairs.frame import PAIR_COLUMNS, check_pairs
from concord.stats.pairs.pairwise import pair_position_bias, win_matrix, win_rates
from tests.stats.pairs_helpers import pairs_frame

SCORES = pd.DataFrame({"prompt_id": ["p1", "p1"], "model": ["x", "y"], "value": [0.1, 0.2]})

FUNCTIONS = {
    "check_pairs": check_pairs,
    "win_rates": lambda df: win_rates(df, n_boot=5),
    "win_matrix": win_matrix,
    "pair_position_bias": pair_position_bias,
    "bradley_terry": lambda df: bradley_terry(df, n_boot=5),
    "elo_ratings": lambda df: elo_ratings(df, n_perm=2),
    "oriented_pairs": oriented_pairs,
    "pair_agreement": pair_agreement,
    "metric_pair_accuracy": lambda df: metric_pair_accuracy(df, SCORES, n_boot=5),
}


def good() -> pd.DataFrame:
    return pairs_frame([("p1", "r1", "x", "y", "left"), ("p1", "r2", "y", "x", "tie"),
                        ("p2", "r1", "x", "y", "right")])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_function_refuses_an_empty_frame(name):
    with pytest.raises(ValueError, match="empty"):
        FUNCTIONS[name](good().iloc[:0])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_function_names_an_unknown_outcome(name):
    df = good()
    df.loc[1, "outcome"] = "Left"
    with pytest.raises(ValueError, match=r"unknown outcome 'Left' in row 1"):
        FUNCTIONS[name](df)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_function_refuses_a_pair_of_one_model(name):
    df = good()
    df.loc[2, "right_model"] = "x"
    with pytest.raises(ValueError, match=r"row 2 pairs model 'x' with itself"):
        FUNCTIONS[name](df)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("column", PAIR_COLUMNS)
def test_every_function_names_a_missing_column(name, column):
    with pytest.raises(ValueError, match=rf"missing column\(s\) \['{column}'\]"):
        FUNCTIONS[name](good().drop(columns=column))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_function_names_an_empty_cell(name):
    df = good()
    df.loc[1, "rater"] = None
    with pytest.raises(ValueError, match=r"column 'rater' is empty in row 1"):
        FUNCTIONS[name](df)
