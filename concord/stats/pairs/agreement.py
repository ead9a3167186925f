"""Agreement on pairwise judgments: between raters, and between a metric and the raters.

Input is the Pairs frame of ``docs/data-model.md`` (see :mod:`concord.stats.pairs.frame`). A
judgment is first put in the orientation of its unordered model pair (``model_a`` = the
model first by name), so "left wins" on (x, y) and "right wins" on (y, x) are the same
answer: ``"a"``, ``"b"``, ``"tie"`` or ``"both_bad"``.
"""

from __future__ import annotations

from collections.abc import Sequence

import krippendorff
import numpy as np
import pandas as pd

from concord.stats._resample import (
    bootstrap_weights,
    percentile_interval,
    resampled_means,
    unit_sums,
)
from concord.stats._validate import (
    check_choice,
    check_fraction,
    check_positive_int,
    duplicated_keys,
    numeric_values,
    require_columns,
    require_nonempty,
)
from concord.stats.agreement.matrices import percent_from_counts
from concord.stats.pairs.frame import check_pairs

CATEGORIES = ("a", "b", "tie", "both_bad")
AGREEMENT_BOTH_BAD = ("tie", "exclude", "category")


def oriented_pairs(pairs: pd.DataFrame, *, both_bad: str = "tie") -> pd.DataFrame:
    """The Pairs frame plus ``model_a, model_b, pair_outcome`` in a fixed pair orientation.

    ``model_a`` is the first model by name; ``pair_outcome`` is ``"a"``/``"b"`` (that
    model won), ``"tie"``, or ``"both_bad"`` (with ``both_bad="category"``; ``"tie"``
    folds it into ties, ``"exclude"`` drops those rows). With image ids, ``image_a`` and
    ``image_b`` follow the same orientation.
    """
    check_choice(both_bad, AGREEMENT_BOTH_BAD, name="both_bad")
    df = check_pairs(pairs, where="oriented_pairs")
    left = df["left_model"].astype(str).to_numpy()
    right = df["right_model"].astype(str).to_numpy()
    swap = left > right
    outcome = df["outcome"].astype(str).to_numpy()
    a_won = np.where(swap, outcome == "right", outcome == "left")
    b_won = np.where(swap, outcome == "left", outcome == "right")
    bad = "tie" if both_bad == "tie" else "both_bad"
    label = np.select([a_won, b_won, outcome == "tie"], ["a", "b", "tie"], bad)
    out = df.assign(model_a=np.where(swap, right, left), model_b=np.where(swap, left, right),
                    pair_outcome=label)
    if {"left_image_id", "right_image_id"} <= set(df.columns):
        li, ri = df["left_image_id"].to_numpy(), df["right_image_id"].to_numpy()
        out = out.assign(image_a=np.where(swap, ri, li), image_b=np.where(swap, li, ri))
    return out[label != "both_bad"] if both_bad == "exclude" else out


def pair_agreement(
    pairs: pd.DataFrame, *, both_bad: str = "tie", by: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Inter-rater agreement on pair outcomes: Krippendorff's α (nominal) and % agreement.

    An item is one pair of images of one prompt: ``prompt_id, model_a, model_b`` (+
    ``image_a, image_b`` when the frame has image ids); its value is ``pair_outcome``.
    α is ``krippendorff.alpha(value_counts=…, level_of_measurement="nominal")`` over the
    items judged at least twice; percent agreement is the mean over those items of the
    share of agreeing rater pairs ``Σ_c n_c (n_c − 1) / (n (n − 1))``.

    Args:
        pairs: Pairs frame.
        both_bad: ``"tie"``, ``"exclude"`` or ``"category"`` (a fourth answer).
        by: Groups, each computed on its own; default ``study`` and ``criterion`` where
            the frame has them.

    Returns:
        One row per group: ``by``, ``alpha_nominal, percent_agreement, n_items`` (judged
        at least twice), ``n_raters, n_judgments``. α is NaN with fewer than two answers
        in use or no item judged twice; % agreement is NaN without such an item.

    Raises:
        ValueError: A bad Pairs frame, or a rater who judged the same item twice.
    """
    df = oriented_pairs(pairs, both_bad=both_bad)
    keys = [c for c in ("study", "criterion") if c in df.columns] if by is None else list(by)
    require_columns(df, keys, where="pair_agreement")
    item = [*keys, "prompt_id", "model_a", "model_b",
            *[c for c in ("image_a", "image_b") if c in df.columns]]
    duplicated_keys(df, [*item, "rater"], where="pair_agreement",
                    what="a rater's judgment of one pair")
    groups = df.groupby(keys, sort=True, observed=True, dropna=False) if keys else [((), df)]
    rows = []
    for key, part in groups:
        head = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        rows.append({**head, **_agreement_row(part, item)})
    return pd.DataFrame(rows)


def _agreement_row(part: pd.DataFrame, item: list[str]) -> dict[str, float]:
    codes = part.groupby(item, sort=False, observed=True, dropna=False).ngroup().to_numpy()
    cat = pd.Categorical(part["pair_outcome"], categories=CATEGORIES).codes
    n_items, k = int(codes.max()) + 1, len(CATEGORIES)
    counts = np.bincount(codes * k + cat, minlength=n_items * k).reshape(n_items, k)
    counts = counts[counts.sum(axis=1) >= 2]
    counts = counts[:, counts.sum(axis=0) > 0]
    alpha, agree = float("nan"), percent_from_counts(counts)
    if counts.shape[1] >= 2:
        alpha = float(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal",
                                         value_domain=np.arange(counts.shape[1])))
    return {"alpha_nominal": alpha, "percent_agreement": agree, "n_items": len(counts),
            "n_raters": int(part["rater"].nunique()), "n_judgments": len(part)}


def metric_pair_accuracy(
    pairs: pd.DataFrame, scores: pd.DataFrame, *, higher_is_better: bool = True,
    tie_tolerance: float = 0.0, n_boot: int = 1000, ci: float = 0.95, seed: int = 0,
) -> dict[str, float]:
    """Share of decisive human judgments where the metric prefers the image people chose.

    For a judgment won by image w over image l, ``Δ = s(w) − s(l)`` (negated when
    ``higher_is_better=False``): agree when ``Δ > tie_tolerance``, metric tie when
    ``|Δ| ≤ tie_tolerance``, disagree otherwise. ``accuracy = (agree + ties / 2) / n``
    over the ``n`` decisive judgments whose two images both have a score; every judgment
    counts (a pair judged by three raters counts three times). Scores are matched by
    image id when the pairs have ``left_image_id, right_image_id`` and the scores
    ``image_id``, else by ``prompt_id, model`` (+ ``study`` when both frames have it).

    Args:
        pairs: Pairs frame.
        scores: One metric's scores: ``value`` and the key columns; one row per key; NaN
            values count as unscored.
        higher_is_better: The metric's direction.
        tie_tolerance: Largest |Δ| that counts as a metric tie (default exact equality).
        n_boot, ci, seed: Prompt bootstrap of the accuracy.

    Returns:
        ``accuracy, ci_low, ci_high, metric_tie_share, n_pairs, n_agree, n_disagree,
        n_metric_ties, n_unscored`` (decisive judgments lacking a score) and
        ``n_not_decisive`` (human ties and "both bad", not used); NaN when ``n_pairs = 0``.
    """
    df = check_pairs(pairs, where="metric_pair_accuracy")
    check_fraction(ci, name="ci")
    if not isinstance(tie_tolerance, int | float) or not tie_tolerance >= 0:
        raise ValueError(f"tie_tolerance must be a number >= 0, got {tie_tolerance!r}")
    outcome = df["outcome"].astype(str).to_numpy()
    decisive = (outcome == "left") | (outcome == "right")
    left, right = _pair_scores(df[decisive], scores)
    left_won = outcome[decisive] == "left"
    delta = np.where(left_won, left - right, right - left) * (1 if higher_is_better else -1)
    scored = np.isfinite(delta)
    delta = delta[scored]
    agree, tie = delta > tie_tolerance, np.abs(delta) <= tie_tolerance
    credit = agree + 0.5 * tie
    out = {"accuracy": float(credit.mean()) if len(credit) else float("nan"),
           "ci_low": float("nan"), "ci_high": float("nan"),
           "metric_tie_share": float(tie.mean()) if len(tie) else float("nan"),
           "n_pairs": int(scored.sum()), "n_agree": int(agree.sum()),
           "n_disagree": int(len(delta) - agree.sum() - tie.sum()),
           "n_metric_ties": int(tie.sum()), "n_unscored": int((~scored).sum()),
           "n_not_decisive": int((~decisive).sum())}
    if len(credit):
        prompt = pd.factorize(df["prompt_id"].astype(str).to_numpy()[decisive][scored])[0]
        out["ci_low"], out["ci_high"] = _prompt_interval(prompt, credit, n_boot, ci, seed)
    return out


def _prompt_interval(prompt: np.ndarray, values: np.ndarray, n_boot: int, ci: float,
                     seed: int) -> tuple[float, float]:
    n_prompts = int(prompt.max()) + 1
    sums, counts = unit_sums(prompt, np.zeros(len(values), dtype=np.int64), values,
                             n_prompts, 1)
    weights = bootstrap_weights(n_prompts, check_positive_int(n_boot, name="n_boot"), seed)
    low, high = percentile_interval(resampled_means(weights, sums, counts), ci)
    return float(low[0]), float(high[0])


def _pair_scores(df: pd.DataFrame, scores: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The metric score of each judgment's left and right image (NaN when unscored)."""
    where = "metric_pair_accuracy"
    require_columns(scores, ["value"], where=where)
    if {"left_image_id", "right_image_id"} <= set(df.columns) and "image_id" in scores:
        keys, sides = ["image_id"], (["left_image_id"], ["right_image_id"])
    else:
        require_columns(scores, ["prompt_id", "model"], where=where)
        shared = ["study"] if "study" in df.columns and "study" in scores.columns else []
        keys = [*shared, "prompt_id", "model"]
        sides = ([*shared, "prompt_id", "left_model"], [*shared, "prompt_id", "right_model"])
    require_nonempty(scores, where=where)
    table = scores[keys].astype(str).assign(value=numeric_values(scores, "value", where=where))
    # Keys are matched as text (as the models and prompts of the pairs), so check them so.
    duplicated_keys(table, keys, where=where, what="a metric score per image")
    found = []
    for side in sides:
        probe = df[side].astype(str).set_axis(keys, axis=1)
        found.append(probe.merge(table, on=keys, how="left")["value"].to_numpy(dtype=float))
    return found[0], found[1]
