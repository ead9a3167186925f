"""Synthetic Pairs and Rankings frames drawn from known strengths (for the pairwise tests).

Import as ``from tests.stats.pairs_helpers import ...`` (pytest runs with importlib mode).
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def davidson_pairs(
    theta, nu=0.0, *, prompts=200, raters=3, per_prompt=1, seed=0, both_bad_share=0.0,
    left_bias=0.0,
) -> pd.DataFrame:
    """Judgments drawn from Davidson's model with log-strengths ``theta`` and tie rate ``nu``.

    Each rater judges ``per_prompt`` random model pairs per prompt, in random left/right
    placement. ``left_bias`` adds that much log-strength to the left image; a share
    ``both_bad_share`` of the ties is recorded as "both_bad".
    """
    rng = np.random.default_rng(seed)
    theta = np.asarray(theta, dtype=float)
    rows = []
    for p in range(prompts):
        for r in range(raters):
            for _ in range(per_prompt):
                a, b = rng.choice(len(theta), 2, replace=False)
                pa, pb = np.exp(theta[a] + left_bias), np.exp(theta[b])
                pt = nu * np.sqrt(pa * pb)
                u = rng.random() * (pa + pb + pt)
                outcome = "left" if u < pa else "right" if u < pa + pb else "tie"
                if outcome == "tie" and rng.random() < both_bad_share:
                    outcome = "both_bad"
                rows.append({"study": "s", "prompt_id": f"p{p:03d}", "rater": f"r{r}",
                             "left_model": f"m{a}", "right_model": f"m{b}",
                             "outcome": outcome, "left_image_id": p * 100 + a,
                             "right_image_id": p * 100 + b})
    return pd.DataFrame(rows)


def plackett_luce_rankings(theta, *, prompts=100, raters=2, seed=0) -> pd.DataFrame:
    """Full rankings drawn from Plackett–Luce (order of ``theta + Gumbel noise``).

    Under Plackett–Luce, P(i ranked above j) = e^θi / (e^θi + e^θj): Bradley–Terry on the
    derived pairs estimates the same strengths.
    """
    rng = np.random.default_rng(seed)
    theta = np.asarray(theta, dtype=float)
    rows = []
    for p in range(prompts):
        for r in range(raters):
            utility = theta + rng.gumbel(size=len(theta))
            ranks = np.argsort(np.argsort(-utility)) + 1
            slots = rng.permutation(len(theta))
            rows += [{"study": "s", "prompt_id": f"p{p:03d}", "rater": f"r{r}",
                      "criterion": "overall", "model": f"m{m}", "rank": float(ranks[m]),
                      "position": int(slots[m]), "image_id": p * 100 + m,
                      "dimension": f"d{p % 2}"} for m in range(len(theta))]
    return pd.DataFrame(rows)


def pairs_frame(rows) -> pd.DataFrame:
    """A Pairs frame from ``(prompt_id, rater, left_model, right_model, outcome)`` tuples."""
    return pd.DataFrame(rows, columns=["prompt_id", "rater", "left_model", "right_model",
                                       "outcome"])
