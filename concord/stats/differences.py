"""Is model A better than model B? Paired differences of model scores over prompts.

For every criterion (each group of ``by``) and dimension (``all`` and each prompt
dimension), a model's *prompt score* is the mean of its image means on that prompt (an
image mean is the order-independent mean over its raters, as ``mean_image_means``). For
two models, the paired difference on a prompt both have is ``score_a − score_b``; the
record reports its mean over those prompts with a prompt-bootstrap interval, a sign-flip
permutation test and the Wilcoxon signed-rank test (:mod:`concord.stats.paired`), and
both p-values adjusted for the comparisons of the same leaderboard (criterion ×
dimension) by Holm and by Benjamini–Hochberg (:mod:`concord.stats.multiple`).

Models² pairs: a leaderboard of M models has M (M − 1) / 2 pairs. Only the
``max_models`` models with the highest mean prompt score are compared (30 by default:
435 pairs); ``n_models`` and ``n_models_compared`` say when the rest were left out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from concord.stats._codes import RATING_COLUMNS, first_rows, group_codes, image_keys
from concord.stats._exact import group_means
from concord.stats._resample import prompt_codes, unit_sums
from concord.stats._validate import (
    check_fraction,
    check_positive_int,
    numeric_values,
    require_columns,
)
from concord.stats.multiple import benjamini_hochberg, holm
from concord.stats.paired import PairedColumns, paired_tests

MAX_MODELS = 30
COLUMNS = ("dimension", "model_a", "model_b", "n_prompts", "mean_a", "mean_b", "mean_diff",
           "mean_diff_ci_boot_low", "mean_diff_ci_boot_high", "mean_diff_p_perm",
           "mean_diff_p_perm_holm", "mean_diff_p_perm_bh", "p_wilcoxon", "p_wilcoxon_holm",
           "p_wilcoxon_bh", "n_models", "n_models_compared")


def model_differences(
    ratings: pd.DataFrame, *, by: Sequence[str] = ("criterion",), n_boot: int = 1000,
    n_perm: int = 1000, seed: int = 0, ci: float = 0.95, by_dimension: bool = True,
    max_models: int = MAX_MODELS,
) -> pd.DataFrame:
    """Every pair of models per group of ``by`` and dimension: the paired difference.

    Args:
        ratings: Ratings frame (``prompt_id, model, rater, criterion, value``; NaN values
            are ignored; ``dimension`` optional).
        by: Columns of one leaderboard (``model`` must not be one of them).
        n_boot, n_perm, seed, ci: Resampling (see :mod:`concord.stats.paired`).
        by_dimension: Also one family per prompt dimension (its own prompts resampled).
        max_models: Models compared per family (the best by mean prompt score).

    Returns:
        One row per family and pair (``model_a`` < ``model_b`` by name): the ``by``
        columns and :data:`COLUMNS`; ``mean_diff = mean_a − mean_b`` over the prompts
        both models have (``n_prompts``).
    """
    by = list(by)
    require_columns(ratings, [*RATING_COLUMNS, *by], where="model_differences")
    if "model" in by:
        raise ValueError("model_differences: `by` must not hold `model` (pairs are of models)")
    check_fraction(ci, name="ci")
    n_boot = check_positive_int(n_boot, name="n_boot")
    n_perm = check_positive_int(n_perm, name="n_perm")
    max_models = check_positive_int(max_models, name="max_models", minimum=2)
    cells = _image_cells(ratings, by)
    families = []
    for head, part in _families(cells, by, by_dimension):
        family = _family(part, max_models)
        if family is not None:
            families.append((head, family))
    results = paired_tests([f[1][0] for f in families], n_boot=n_boot, n_perm=n_perm,
                           seed=seed, ci=ci)
    frames = [_records(head, meta, res) for (head, (_, meta)), res in
              zip(families, results, strict=True)]
    if not frames:
        return pd.DataFrame(columns=[*by, *COLUMNS])
    return pd.concat(frames, ignore_index=True)[[*by, *COLUMNS]]


def _image_cells(ratings: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One row per (``by`` group, image): its mean over raters, prompt, model, dimension."""
    values = numeric_values(ratings, "value", where="model_differences")
    ok = ~np.isnan(values)
    df, values = (ratings[ok], values[ok]) if not ok.all() else (ratings, values)
    if df.empty:
        return pd.DataFrame(columns=[*by, "prompt_id", "model", "dimension", "value"])
    code = group_codes(df, [*by, *image_keys(df)])
    first = first_rows(code)
    carry = [*by, "prompt_id", "model", *(["dimension"] if "dimension" in df else [])]
    out = df.iloc[first][carry].reset_index(drop=True)
    out["value"], _ = group_means(code, values, len(first))
    return out


def _families(cells: pd.DataFrame, by: list[str],
              by_dimension: bool) -> list[tuple[dict, pd.DataFrame]]:
    if cells.empty:
        return []
    groups = cells.groupby(by, sort=True, observed=True) if by else [((), cells)]
    out = []
    for key, part in groups:
        head = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        out.append(({**head, "dimension": "all"}, part))
        if by_dimension and "dimension" in part.columns:
            dims = part["dimension"].astype(object)
            for dim in sorted(dims.dropna().unique().tolist(), key=str):
                out.append(({**head, "dimension": str(dim)}, part[(dims == dim).to_numpy()]))
    return out


def _family(part: pd.DataFrame, max_models: int) -> tuple[PairedColumns, dict] | None:
    """The family's paired differences (prompts × pairs) and what the records need."""
    unit, _ = prompt_codes(part["prompt_id"].astype(object))
    model, names = pd.factorize(part["model"].astype(object), sort=True)
    n_units, n_models = int(unit.max()) + 1, len(names)
    sums, counts = unit_sums(unit, model, part["value"].to_numpy(float), n_units, n_models)
    score = np.where(counts > 0, sums / np.where(counts > 0, counts, 1), np.nan)
    # Every model of the family has a prompt, so no column is all NaN.
    overall = np.nansum(score, axis=0) / (counts > 0).sum(axis=0)
    keep = np.sort(np.argsort(-overall, kind="stable")[:max_models])
    if keep.size < 2:
        return None
    a, b = (keep[idx] for idx in np.triu_indices(keep.size, 1))
    present = (counts[:, a] > 0) & (counts[:, b] > 0)
    filled = np.nan_to_num(score)
    d = np.where(present, filled[:, a] - filled[:, b], 0.0)
    n = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a, mean_b = ((np.where(present, filled[:, c], 0.0).sum(axis=0) / n)
                          for c in (a, b))
    meta = {"model_a": names[a], "model_b": names[b], "mean_a": mean_a, "mean_b": mean_b,
            "n_models": n_models, "n_models_compared": int(keep.size)}
    return PairedColumns(d, present), meta


def _records(head: dict, meta: dict, res: dict[str, np.ndarray]) -> pd.DataFrame:
    out = pd.DataFrame({**meta, **res})
    for name in ("mean_diff_p_perm", "p_wilcoxon"):
        out[f"{name}_holm"] = holm(out[name])
        out[f"{name}_bh"] = benjamini_hochberg(out[name])
    return out.assign(**head)
