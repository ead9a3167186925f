"""Benchmark of the pairwise A/B statistics on a synthetic pairwise study.

Design: --prompts prompts (default 1,000) × 5 raters × 3 random model pairs of 8 models,
outcomes drawn from Davidson's model (ν = 0.5, a fifth of the ties "both bad"), so
15,000 judgments by default; plus a ranking study of the same prompts (5 raters ranking
all 8 models: 140,000 derived pairs) for ``pairs_from_rankings``.

Run from the repository root:  .venv/bin/python bench/bench_pairwise.py [--prompts N]
Prints one table: step, seconds (best of --repeat runs).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from concord.stats.pairs.agreement import metric_pair_accuracy, pair_agreement
from concord.stats.pairs.bradley_terry import bradley_terry
from concord.stats.pairs.elo import elo_ratings
from concord.stats.pairs.frame import pairs_from_rankings
from concord.stats.pairs.pairwise import pair_position_bias, win_rates

MODELS, RATERS, PAIRS_PER_RATER = 8, 5, 3
THETA = np.linspace(1.0, -1.0, MODELS)


def make_pairs(n_prompts: int, seed: int = 0) -> pd.DataFrame:
    """Davidson-model judgments, vectorised."""
    rng = np.random.default_rng(seed)
    n = n_prompts * RATERS * PAIRS_PER_RATER
    a = rng.integers(0, MODELS, n)
    b = (a + rng.integers(1, MODELS, n)) % MODELS
    pa, pb = np.exp(THETA[a]), np.exp(THETA[b])
    pt = 0.5 * np.sqrt(pa * pb)
    u = rng.random(n) * (pa + pb + pt)
    outcome = np.where(u < pa, "left", np.where(u < pa + pb, "right", "tie")).astype(object)
    outcome[(outcome == "tie") & (rng.random(n) < 0.2)] = "both_bad"
    prompt = np.repeat(np.arange(n_prompts), RATERS * PAIRS_PER_RATER)
    return pd.DataFrame({
        "study": "bench", "prompt_id": [f"p{k:05d}" for k in prompt],
        "rater": [f"r{k}" for k in np.tile(np.repeat(np.arange(RATERS), PAIRS_PER_RATER),
                                           n_prompts)],
        "left_model": [f"m{k}" for k in a], "right_model": [f"m{k}" for k in b],
        "outcome": outcome, "left_image_id": prompt * 100 + a, "right_image_id": prompt * 100 + b})


def make_rankings(n_prompts: int, seed: int = 1) -> pd.DataFrame:
    """Plackett–Luce rankings of all models by every rater."""
    rng = np.random.default_rng(seed)
    n = n_prompts * RATERS
    utility = THETA + rng.gumbel(size=(n, MODELS))
    ranks = np.argsort(np.argsort(-utility, axis=1), axis=1) + 1
    unit = np.repeat(np.arange(n), MODELS)
    return pd.DataFrame({
        "prompt_id": [f"p{k // RATERS:05d}" for k in unit],
        "rater": [f"r{k % RATERS}" for k in unit], "criterion": "overall",
        "model": [f"m{k}" for k in np.tile(np.arange(MODELS), n)],
        "rank": ranks.ravel().astype(float),
        "position": np.argsort(rng.random((n, MODELS)), axis=1).ravel()})


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    pairs, rankings = make_pairs(args.prompts), make_rankings(args.prompts)
    low = np.minimum(pairs["left_image_id"], pairs["right_image_id"])
    high = np.maximum(pairs["left_image_id"], pairs["right_image_id"])
    unique = pairs[~pairs.assign(_low=low, _high=high).duplicated(["prompt_id", "rater", "_low",
                                                                   "_high"])]
    scores = pd.DataFrame({"image_id": np.arange(args.prompts * 100)})
    scores["value"] = THETA[scores["image_id"] % 100 % MODELS] + np.random.default_rng(2).normal(
        0, 1, len(scores))
    steps = {
        "win_rates (n_boot=1000)": lambda: win_rates(pairs),
        "bradley_terry davidson (n_boot=1000)": lambda: bradley_terry(pairs),
        "bradley_terry half (n_boot=1000)": lambda: bradley_terry(pairs, tie_model="half"),
        "elo_ratings (100 orders, K=4)": lambda: elo_ratings(pairs),
        "pair_position_bias": lambda: pair_position_bias(pairs),
        # A rater may draw the same pair twice here; agreement needs one answer per item.
        "pair_agreement": lambda: pair_agreement(unique),
        "metric_pair_accuracy (n_boot=1000)": lambda: metric_pair_accuracy(pairs, scores),
        f"pairs_from_rankings ({len(rankings):,} rows)": lambda: pairs_from_rankings(rankings),
    }
    print(f"{len(pairs):,} judgments, {args.prompts:,} prompts, {MODELS} models")
    print(f"{'step':<44} {'seconds':>8}")
    for name, fn in steps.items():
        print(f"{name:<44} {best_of(fn, args.repeat):8.3f}")


if __name__ == "__main__":
    main()
