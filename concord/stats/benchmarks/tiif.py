"""TIIF-Bench summary: accuracy per (model, dimension, variant) and the group tables.

Input: one row per judged yes/no question with ``model, dimension, variant, correct``
(bool), or ``answer`` and ``pred`` instead of ``correct`` (compared after strip/lower).
``variant`` is ``"short"`` or ``"long"`` (the prompt description used).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from concord.stats._validate import require_columns, require_nonempty

BASIC = {
    "Attribute": ("shape+color", "color+texture", "texture+color", "shape+texture"),
    "Relation": ("2d_spatial_relation", "3d_spatial_relation", "action+2d", "action+3d"),
    "Reasoning": ("numeracy", "negation", "differentiation", "comparison"),
}
_REASONING = ("numeracy", "comparison", "differentiation", "negation")
ADVANCED = {
    "Attribute+Relation": ("action+color", "action+texture", "color+2d", "color+3d",
                           "shape+2d", "shape+3d", "texture+2d", "texture+3d"),
    "Attribute+Reasoning": tuple(f"{r}+{a}" for r in _REASONING for a in ("color", "texture")),
    "Relation+Reasoning": tuple(f"{r}+{d}" for r in _REASONING for d in ("2d", "3d")),
    "Text Generation": ("text",),
    "Style Control": ("style",),
}
REAL = {"Complex": ("real_world",)}
LEVELS = {"Basic": BASIC, "Advanced": ADVANCED, "Real_World": REAL}
VARIANTS = ("short", "long")


def _fmt4(x: float) -> float:
    # The reference writes f"{x:.4f}" strings and reads them back: round half-even on the
    # exact binary value, which np.round (scale, rint, unscale) does not always reproduce.
    return float(f"{x:.4f}")


def tiif_accuracy(judged: pd.DataFrame, *, decimals: int | None = 4) -> pd.DataFrame:
    """Micro accuracy over questions per (model, dimension, variant).

    Args:
        judged: Per-question rows (see module docstring).
        decimals: 4 reproduces the reference's 4-dp values; ``None`` keeps full precision.

    Returns:
        Columns ``model, dimension, variant, accuracy, n_questions, n_correct``.
    """
    where = "tiif_accuracy"
    require_columns(judged, ["model", "dimension", "variant"], where=where)
    require_nonempty(judged, where=where)
    if "correct" in judged.columns:
        correct = judged["correct"]
        if correct.isna().any() or not correct.isin([True, False, 0, 1]).all():
            raise ValueError(f"{where}: column 'correct' must be boolean, got "
                             f"{sorted(map(repr, set(correct.tolist())))[:5]}")
        correct = correct.astype(bool)
    else:
        require_columns(judged, ["answer", "pred"], where=f"{where} (no 'correct' column)")
        norm = [judged[c].astype(str).str.strip().str.lower() for c in ("answer", "pred")]
        correct = norm[0] == norm[1]
    bad = sorted(set(judged["variant"]) - set(VARIANTS))
    if bad:
        raise ValueError(f"{where}: variant must be 'short' or 'long', got {bad}")
    df = judged[["model", "dimension", "variant"]].assign(correct=correct.to_numpy())
    out = df.groupby(["model", "dimension", "variant"], sort=True)["correct"].agg(
        n_questions="size", n_correct="sum").reset_index()
    acc = out["n_correct"] / out["n_questions"]
    out.insert(3, "accuracy", [_fmt4(a) for a in acc] if decimals == 4 else
               (acc.round(decimals) if decimals is not None else acc))
    return out


def tiif_summary(accuracy: pd.DataFrame) -> pd.DataFrame:
    """Group means, level overalls and the Overall score of ``summary_dimension_results``.

    For each model and variant: each group = mean of its dimensions present; each
    ``<Level>_Following_Overall`` = flat mean over the level's dimensions present (not a
    mean of groups); ``Overall`` = mean of the 9 group means, skipping empty groups (NaN).
    Unknown dimensions are ignored. Group and level means add left to right in the
    reference's dimension order and Overall uses pandas ``Series.mean``: with the 4-dp
    per-dimension values this reproduces every printed 4-dp value of the reference.

    Args:
        accuracy: Output of :func:`tiif_accuracy` (``model, dimension, variant, accuracy``).

    Returns:
        Columns ``model, variant, group, score, n_dimensions``; ``group`` names follow the
        reference section titles (``Basic_Attribute``, ..., ``Overall``).
    """
    require_columns(accuracy, ["model", "dimension", "variant", "accuracy"],
                    where="tiif_summary")
    wide = accuracy.pivot_table(index=["model", "variant"], columns="dimension",
                                values="accuracy", aggfunc="first", sort=True)
    rows = []
    for (model, variant), rec in wide.iterrows():
        rows.extend({"model": model, "variant": variant, **r} for r in _summary_rows(rec))
    return pd.DataFrame(rows, columns=["model", "variant", "group", "score", "n_dimensions"])


def _mean(rec: pd.Series, dims: tuple[str, ...]) -> tuple[float, int]:
    present = [d for d in dims if d in rec.index and pd.notna(rec[d])]
    if not present:
        return float("nan"), 0
    # Left-to-right accumulation in the reference's dimension order: the reference's
    # row-wise DataFrame mean adds sequentially, and at 4-dp rounding boundaries the
    # order decides the last digit (pairwise summation differs in 7 of 1,200 cells).
    total = np.add.accumulate(np.array([rec[d] for d in present], dtype=float))[-1]
    return float(total / len(present)), len(present)


def _summary_rows(rec: pd.Series) -> list[dict]:
    rows, groups = [], []
    for level, table in LEVELS.items():
        flat = tuple(d for dims in table.values() for d in dims)
        score, n = _mean(rec, flat)
        rows.append({"group": f"{level}_Following_Overall", "score": score, "n_dimensions": n})
        for name, dims in table.items():
            score, n = _mean(rec, dims)
            prefix = "Real" if level == "Real_World" else level
            rows.append({"group": f"{prefix}_{name}", "score": score, "n_dimensions": n})
            groups.append(score)
    overall = pd.Series(groups, dtype=float).mean(skipna=True)
    n = int(np.isfinite(groups).sum())
    rows.append({"group": "Overall", "score": float(overall), "n_dimensions": n})
    return rows
