"""Benchmark of ``concord.stats.full_report`` on 1,000,000 synthetic ratings.

Design: 2,500 prompts × 8 models × 25 raters × 2 criteria (SC, PR) = 1,000,000 ratings on
a {0, 0.5, 1} scale, 5 prompt dimensions; plus 2 metrics × 20,000 images of metric scores
and a ranking study of 5 raters per prompt (100,000 ranking rows). The report also derives
the 500,000 overall (O) rows (``derived=[IMAGENHUB_O]``, as the study report does from the
ImagenHub rubric's combine), so ~1.5 M rating rows are summarised: both model scores,
agreement, rankings, human vs metric, per-model correlations, rater versus the rest for
25 raters, quality signals and disagreements.

Run from the repository root:  .venv/bin/python bench/bench_stats.py [--prompts N]
Prints one table: step, seconds (best of --repeat runs), peak MB (tracemalloc, separate
run, since tracing slows numpy-heavy code). On a shared machine, run it with
``OPENBLAS_NUM_THREADS=1``: an oversubscribed BLAS thread pool can make one 25 × 20,000
``corrcoef`` take 0.6 s instead of 2 ms.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from concord.stats import IMAGENHUB_O, bootstrap_means, full_report

MODELS = 8
RATERS = 25
DIMENSIONS = 5


def make_frames(n_prompts: int, seed: int = 0) -> tuple[pd.DataFrame, ...]:
    """Synthetic ratings, metric scores and rankings with real model differences."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(-1, 1, MODELS)
    p, m = np.meshgrid(np.arange(n_prompts), np.arange(MODELS), indexing="ij")
    p, m = p.ravel(), m.ravel()
    latent = quality[m] + rng.normal(0, 1, p.size)
    prompt_ids = np.array([f"p{k:05d}" for k in range(n_prompts)], dtype=object)
    models = np.array([f"model_{k}" for k in range(MODELS)], dtype=object)
    dims = np.array([f"dim{k}" for k in range(DIMENSIONS)], dtype=object)
    raters = np.array([f"rater_{k:02d}" for k in range(RATERS)], dtype=object)
    frames = []
    for crit in ("SC", "PR"):
        noisy = latent[:, None] + rng.normal(0, 1, (p.size, RATERS))
        value = np.clip(np.round(noisy / 2 + 0.5) / 2, 0, 1)
        frames.append(pd.DataFrame({
            "study": "bench", "prompt_id": np.repeat(prompt_ids[p], RATERS),
            "model": np.repeat(models[m], RATERS), "sample": 0,
            "rater": np.tile(raters, p.size), "criterion": crit, "value": value.ravel(),
            "dimension": np.repeat(dims[p % DIMENSIONS], RATERS)}))
    ratings = pd.concat(frames, ignore_index=True)
    scores = pd.concat([pd.DataFrame({
        "study": "bench", "prompt_id": prompt_ids[p], "model": models[m], "sample": 0,
        "metric": metric, "judge": "", "question_id": "",
        "value": latent + rng.normal(0, noise, p.size), "dimension": dims[p % DIMENSIONS]})
        for metric, noise in (("vqascore", 0.8), ("soft-tifa", 1.5))], ignore_index=True)
    return ratings, scores, _rankings(rng, latent, prompt_ids, models, dims, n_prompts)


def _rankings(rng, latent, prompt_ids, models, dims, n_prompts, n_raters=5) -> pd.DataFrame:
    grid = latent.reshape(n_prompts, MODELS)
    noisy = grid[:, None, :] + rng.normal(0, 1, (n_prompts, n_raters, MODELS))
    rank = (-noisy).argsort(axis=2).argsort(axis=2) + 1
    position = rng.permuted(np.tile(np.arange(MODELS), (n_prompts * n_raters, 1)), axis=1)
    pr = np.repeat(np.arange(n_prompts), n_raters * MODELS)
    return pd.DataFrame({
        "study": "bench", "prompt_id": prompt_ids[pr],
        "rater": np.tile(np.repeat([f"ranker_{k}" for k in range(n_raters)], MODELS), n_prompts),
        "criterion": "overall", "model": np.tile(models, n_prompts * n_raters),
        "rank": rank.ravel().astype(float), "position": position.ravel(),
        "dimension": dims[pr % DIMENSIONS]})


def timed(fn, repeat: int) -> tuple[float, float]:
    """Best wall time of ``repeat`` runs, and peak traced MB of one extra run."""
    best = min(_once(fn) for _ in range(repeat))
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return best, peak


def _once(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=2500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    ratings, scores, rankings = make_frames(args.prompts)
    gen = time.perf_counter() - start
    steps = {
        "bootstrap (1,000 resamples, SC+PR)": lambda: bootstrap_means(ratings, n_boot=1000),
        "full_report, ratings only": lambda: full_report(ratings, n_boot=1000,
                                                         derived=[IMAGENHUB_O]),
        "full_report, ratings+rankings+scores": lambda: full_report(
            ratings, rankings, scores, n_boot=1000, n_perm=1000, derived=[IMAGENHUB_O]),
    }
    print(f"ratings: {len(ratings):,} rows; rankings: {len(rankings):,}; scores: "
          f"{len(scores):,}; generated in {gen:.2f} s")
    print(f"{'step':<40} {'seconds':>8} {'peak MB':>8}")
    for name, fn in steps.items():
        seconds, peak = timed(fn, args.repeat)
        print(f"{name:<40} {seconds:>8.2f} {peak:>8.0f}")


if __name__ == "__main__":
    main()
