"""Fixtures for the concord.stats tests: shared benchmark data and synthetic frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def _make_ratings(
    seed: int = 0,
    *,
    prompts: int = 12,
    models: int = 4,
    raters: int = 3,
    criteria: tuple[str, ...] = ("SC", "PR"),
    levels: tuple[float, ...] = (0.0, 0.5, 1.0),
    missing: float = 0.0,
) -> pd.DataFrame:
    """Random Ratings frame with model effects; ``missing`` drops that share of rows."""
    rng = np.random.default_rng(seed)
    rows = []
    quality = rng.normal(0, 1, models)
    for p in range(prompts):
        for m in range(models):
            latent = quality[m] + rng.normal()
            for r in range(raters):
                for c in criteria:
                    k = int(np.clip(np.round(latent + rng.normal() + 1), 0, len(levels) - 1))
                    rows.append({"study": "s", "prompt_id": f"p{p:02d}", "model": f"m{m}",
                                 "sample": 0, "image_id": p * models + m, "rater": f"r{r}",
                                 "criterion": c, "value": levels[k],
                                 "dimension": f"d{p % 2}"})
    df = pd.DataFrame(rows)
    if missing:
        df = df[rng.random(len(df)) >= missing].reset_index(drop=True)
    return df


@pytest.fixture
def make_ratings():
    """Factory of random Ratings frames (see ``_make_ratings``)."""
    return _make_ratings


@pytest.fixture
def ratings() -> pd.DataFrame:
    """A small complete ratings frame (12 prompts × 4 models × 3 raters × SC, PR)."""
    return _make_ratings()
