"""Derived criteria: one score per rater and image combined from several criteria.

ImagenHub's overall score ``O = sqrt(SC · PR)`` is the best-known case; a rubric's
``combine`` (``docs/rubrics.md``) declares it as data: a method (``geometric_mean`` or
``arithmetic_mean``) over listed criteria. The combination is taken per rater and image
BEFORE any averaging, so every statistic sees a derived criterion as if it was rated.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from concord.stats._codes import (
    RATING_COLUMNS,
    distinct_text,
    first_rows,
    group_codes,
    image_keys,
)
from concord.stats._validate import check_choice, numeric_values, require_columns

METHODS = ("geometric_mean", "arithmetic_mean")


@dataclass(frozen=True, slots=True)
class Derived:
    """A derived criterion: ``name`` = ``method`` over ``criteria`` per rater and image.

    ``dimensions`` limits it to prompts of those dimensions (a per-dimension rubric);
    ``None`` applies it to every dimension that no other spec of the same name lists.
    """

    name: str
    method: str
    criteria: tuple[str, ...]
    dimensions: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        check_choice(self.method, METHODS, name="Derived.method")
        if not self.criteria or len(set(self.criteria)) != len(self.criteria):
            raise ValueError(f"Derived {self.name!r}: criteria must be distinct and not "
                             f"empty, got {list(self.criteria)}")
        if self.name in self.criteria:
            raise ValueError(f"Derived {self.name!r}: the name is one of its own criteria")


IMAGENHUB_O = Derived("O", "geometric_mean", ("SC", "PR"))


def _parts(ratings: pd.DataFrame, criteria: Sequence[str],
           where: str) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, list[str]]:
    """``(rows, group per row, values[criterion, group], keys)`` for (image, rater) groups."""
    require_columns(ratings, RATING_COLUMNS, where=where)
    wanted = ratings["criterion"].isin(criteria).to_numpy()
    sub = ratings if wanted.all() else ratings[wanted]
    keys = [*image_keys(sub), "rater"]
    gid = group_codes(sub, keys)
    n_groups = int(gid.max()) + 1 if len(gid) else 0
    values = numeric_values(sub, "value", where=where)
    parts = np.full((len(criteria), n_groups), np.nan)
    for k, name in enumerate(criteria):
        # Series comparison: on a categorical column it compares codes, not strings.
        mask = (sub["criterion"] == name).to_numpy()
        if mask.any() and np.bincount(gid[mask], minlength=n_groups).max() > 1:
            raise ValueError(f"{where}: a rater rated the same image twice on {name!r}")
        parts[k, gid[mask]] = values[mask]
    return sub, gid, parts, keys


def _rows(sub: pd.DataFrame, gid: np.ndarray, keys: list[str], combined: np.ndarray,
          keep: np.ndarray, output: str) -> pd.DataFrame:
    carry = keys + (["dimension"] if "dimension" in sub.columns else [])
    out = sub.iloc[first_rows(gid)[keep]][carry].reset_index(drop=True)
    out["criterion"] = output
    out["value"] = combined[keep]
    return out


def _combine(parts: np.ndarray, method: str, where: str) -> np.ndarray:
    if method == "arithmetic_mean":
        total = parts[0].copy()
        for row in parts[1:]:  # in the listed order, so the bits never depend on the data
            total = total + row
        return total / len(parts)
    if np.nanmin(parts, initial=0.0) < 0:
        raise ValueError(f"{where}: negative value {np.nanmin(parts)} has no geometric mean")
    if len(parts) == 2:
        return np.sqrt(parts[0] * parts[1])  # correctly rounded: ImagenHub's exact O
    return np.prod(parts, axis=0) ** (1.0 / len(parts))


def derive(ratings: pd.DataFrame, spec: Derived) -> pd.DataFrame:
    """The rows of one derived criterion (for every (image, rater) with all its criteria).

    Returns:
        The image key columns, ``rater``, ``dimension`` if present, ``criterion``
        (= ``spec.name``) and ``value``.

    Raises:
        ValueError: Missing columns, a negative value for a geometric mean, or a rater who
            rated the same image and criterion twice.
    """
    where = f"derive({spec.name})"
    sub, gid, parts, keys = _parts(ratings, spec.criteria, where)
    keep = np.flatnonzero(~np.isnan(parts).any(axis=0))
    combined = np.full(parts.shape[1], np.nan)
    if keep.size:
        combined[keep] = _combine(parts[:, keep], spec.method, where)
    return _rows(sub, gid, keys, combined, keep, spec.name)


def overall_scores(
    ratings: pd.DataFrame,
    *,
    criteria: tuple[str, str] = ("SC", "PR"),
    output: str = "O",
    weights: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """ImagenHub's overall score: ``O = sqrt(SC · PR)`` per rater and image.

    ``weights=(0.7, 0.3)`` gives ImagenHub's unused linear alternative
    ``0.7 · SC + 0.3 · PR``; otherwise this is :func:`derive` with a geometric mean.

    Returns:
        As :func:`derive`.
    """
    if weights is None:
        return derive(ratings, Derived(output, "geometric_mean", tuple(criteria)))
    sub, gid, parts, keys = _parts(ratings, criteria, "overall_scores")
    keep = np.flatnonzero(~np.isnan(parts).any(axis=0))
    return _rows(sub, gid, keys, weights[0] * parts[0] + weights[1] * parts[1], keep, output)


def _applies(spec: Derived, specs: Sequence[Derived], dims: pd.Series) -> np.ndarray:
    """Rows of ``dims`` the spec covers (explicit dimensions, or those no sibling lists)."""
    if spec.dimensions is not None:
        return dims.isin(spec.dimensions).to_numpy()
    claimed = {d for s in specs if s.name == spec.name and s.dimensions for d in s.dimensions}
    return ~dims.isin(claimed).to_numpy() if claimed else np.ones(len(dims), dtype=bool)


def with_derived(ratings: pd.DataFrame, specs: Sequence[Derived]) -> pd.DataFrame:
    """``ratings`` plus the rows of every derived criterion whose criteria are rated.

    A spec is skipped when one of its criteria has no rating or its name is already a
    rated criterion. Categorical columns stay categorical (with sorted categories).
    """
    present = distinct_text(ratings["criterion"])
    extra = []
    for spec in specs:
        if spec.name in present or not set(spec.criteria) <= present:
            continue
        rows = ratings
        if "dimension" in ratings.columns and (spec.dimensions is not None
                                               or any(s.dimensions for s in specs)):
            rows = ratings[_applies(spec, specs, ratings["dimension"].astype(object))]
        if not rows.empty:
            extra.append(derive(rows, spec))
    extra = [e for e in extra if not e.empty]
    return _append(ratings, extra) if extra else ratings


def _append(ratings: pd.DataFrame, extra: list[pd.DataFrame]) -> pd.DataFrame:
    added = pd.concat(extra, ignore_index=True)
    if not isinstance(ratings["criterion"].dtype, pd.CategoricalDtype):
        return pd.concat([ratings, added], ignore_index=True)
    # Give both parts the same categories so concat keeps the columns categorical
    # (re-encoding 1.5 M strings afterwards costs more than the statistic). Derived rows
    # come from the ratings, so every key value is already a category of theirs.
    new = sorted(distinct_text(added["criterion"]) - set(ratings["criterion"].cat.categories))
    crit = ratings["criterion"].cat.add_categories(new)
    with contextlib.suppress(TypeError):  # keep categories sorted: groups come out sorted
        crit = crit.cat.reorder_categories(sorted(crit.cat.categories))
    ratings = ratings.assign(criterion=crit)
    same = {c: added[c].cat.set_categories(ratings[c].cat.categories)
            if isinstance(added[c].dtype, pd.CategoricalDtype)
            else pd.Categorical(added[c], categories=ratings[c].cat.categories)
            for c in added.columns
            if c in ratings.columns and isinstance(ratings[c].dtype, pd.CategoricalDtype)
            and added[c].dtype != ratings[c].dtype}
    return pd.concat([ratings, added.assign(**same)], ignore_index=True)
