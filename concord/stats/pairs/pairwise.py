"""Statistics of the pairwise A/B protocol: win rates, the win matrix, left/right bias.

Input is the Pairs frame of ``docs/data-model.md`` (see :mod:`concord.stats.pairs.frame`).
Bradley–Terry strengths are in :mod:`concord.stats.pairs.bradley_terry`, Elo ratings in
:mod:`concord.stats.pairs.elo`, rater agreement and metric accuracy in
:mod:`concord.stats.pairs.agreement`. "Both bad" is a tie unless ``both_bad="exclude"``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from concord.stats._resample import (
    bootstrap_weights,
    percentile_interval,
    ratio,
    resampled_means,
    unit_sums,
)
from concord.stats._validate import (
    check_choice,
    check_fraction,
    check_positive_int,
    require_columns,
)
from concord.stats.pairs.frame import check_pairs, count_matrices, judgments

WIN_MATRIX_VALUES = ("win_rate", "wins", "ties", "n")
CI_METHODS = ("exact", "wilson", "wilsoncc")


def win_rates(
    pairs: pd.DataFrame, *, both_bad: str = "tie", n_boot: int = 1000, ci: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Per model: share of its comparisons won, ties counted half, with a prompt bootstrap CI.

    ``win_rate = (wins + ties / 2) / n`` over the ``n`` judgments the model took part in
    (left or right). Win rates depend on which opponents a model met; the Bradley–Terry
    strengths correct for that.

    Returns:
        One row per model, best first: ``model, n, wins, losses, ties, both_bad`` (the
        model's "both bad" judgments in the input: inside ``ties`` when ``both_bad="tie"``,
        not in ``n`` when ``"exclude"``), ``win_rate, win_rate_ci_low, win_rate_ci_high,
        tie_rate = ties / n, decisive_win_rate = wins / (wins + losses)`` (NaN without a
        decisive judgment).
    """
    j = judgments(pairs, both_bad=both_bad, where="win_rates")
    check_fraction(ci, name="ci")
    m = len(j.models)
    model = np.r_[j.left, j.right]
    credit = np.r_[j.credit, 1.0 - j.credit]
    n = np.bincount(model, minlength=m)
    wins, losses = (np.bincount(model, credit == v, minlength=m) for v in (1.0, 0.0))
    ties = np.bincount(model, credit == 0.5, minlength=m)
    sums, counts = unit_sums(np.r_[j.prompt, j.prompt], model, credit, len(j.prompts), m)
    weights = bootstrap_weights(len(j.prompts), check_positive_int(n_boot, name="n_boot"), seed)
    low, high = percentile_interval(resampled_means(weights, sums, counts), ci)
    out = pd.DataFrame({
        "model": j.models, "n": n, "wins": wins.astype(int), "losses": losses.astype(int),
        "ties": ties.astype(int), "both_bad": _both_bad_counts(pairs, j.models),
        "win_rate": (wins + ties / 2) / n, "win_rate_ci_low": low, "win_rate_ci_high": high,
        "tie_rate": ties / n, "decisive_win_rate": ratio(wins, wins + losses)})
    return out.sort_values(["win_rate", "model"], ascending=[False, True], ignore_index=True)


def _both_bad_counts(pairs: pd.DataFrame, models: np.ndarray) -> np.ndarray:
    bad = pairs[(pairs["outcome"].astype(str) == "both_bad").to_numpy()]
    names = pd.Series(np.r_[bad["left_model"].astype(str), bad["right_model"].astype(str)])
    return names.value_counts().reindex(models, fill_value=0).to_numpy()


def win_matrix(pairs: pd.DataFrame, *, both_bad: str = "tie",
               value: str = "win_rate") -> pd.DataFrame:
    """Model × opponent matrix of head-to-head results.

    Args:
        pairs: Pairs frame.
        both_bad: ``"tie"`` or ``"exclude"``.
        value: ``"win_rate"`` (``(wins + ties/2) / n`` of the row model against the column
            model; NaN on the diagonal and for pairs never compared), ``"wins"`` (decisive
            wins of the row model), ``"ties"`` or ``"n"`` (judgments of the pair).

    Returns:
        Square DataFrame, index ``model``, columns ``opponent``, models sorted by name.
    """
    check_choice(value, WIN_MATRIX_VALUES, name="value")
    j = judgments(pairs, both_bad=both_bad, where="win_matrix")
    wins, ties = count_matrices(j)
    n = wins + wins.T + ties
    table = {"wins": wins, "ties": ties, "n": n, "win_rate": ratio(wins + ties / 2, n)}
    return pd.DataFrame(table[value], index=pd.Index(j.models, name="model"),
                        columns=pd.Index(j.models, name="opponent"))


def pair_position_bias(
    pairs: pd.DataFrame, *, by: Sequence[str] = (), ci: float = 0.95, method: str = "exact",
) -> pd.DataFrame:
    """Share of decisive judgments won by the LEFT image, with a binomial test, per group.

    ``left_share = left wins / (left wins + right wins)``; without position bias it is 0.5.
    Two-sided ``scipy.stats.binomtest(left wins, decisive, p=0.5)``; the interval is its
    ``proportion_ci(confidence_level=ci, method=method)`` (``"exact"`` = Clopper–Pearson,
    ``"wilson"``, ``"wilsoncc"``). Ties and "both bad" are not decisive.

    Returns:
        One row per group of ``by`` (``by=("rater",)``: per rater): ``by``, ``n_judgments,
        n_decisive, left_wins, left_share, ci_low, ci_high, p_value, tie_share``; NaN share,
        interval and p-value for a group without a decisive judgment.
    """
    df = check_pairs(pairs, where="pair_position_bias")
    require_columns(df, by, where="pair_position_bias")
    check_fraction(ci, name="ci")
    check_choice(method, CI_METHODS, name="method")
    groups = (df.groupby(list(by), sort=True, observed=True, dropna=False) if by
              else [((), df)])
    rows = []
    for key, part in groups:
        outcome = part["outcome"].astype(str).to_numpy()
        left = int((outcome == "left").sum())
        decisive = left + int((outcome == "right").sum())
        row = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        row.update(n_judgments=len(part), n_decisive=decisive, left_wins=left,
                   left_share=np.nan, ci_low=np.nan, ci_high=np.nan, p_value=np.nan,
                   tie_share=(len(part) - decisive) / len(part))
        if decisive:
            test = stats.binomtest(left, decisive, p=0.5)
            interval = test.proportion_ci(confidence_level=ci, method=method)
            row.update(left_share=left / decisive, ci_low=interval.low, ci_high=interval.high,
                       p_value=test.pvalue)
        rows.append(row)
    return pd.DataFrame(rows)
