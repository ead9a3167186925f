"""Writes the small Likert example of docs/example-likert.md (re-run to regenerate).

12 prompts × 4 models; each image rated 1-5 by 2 or 3 of 4 raters (some ratings missing,
as in real studies); one automatic metric that follows the raters' quality with noise.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODELS = {"sd15": 2.4, "sdxl": 3.1, "pixart": 3.4, "flux": 4.0}  # mean quality on 1..5
RATERS = ("ana", "bo", "chen", "dara")


def main() -> None:
    rng = np.random.default_rng(7)
    with (HERE / "ratings.csv").open("w", newline="") as r, \
            (HERE / "scores.csv").open("w", newline="") as s:
        ratings, scores = csv.writer(r), csv.writer(s)
        ratings.writerow(["prompt_id", "model", "rater", "criterion", "value"])
        scores.writerow(["prompt_id", "model", "metric", "value"])
        for p in range(12):
            for model, mean in MODELS.items():
                quality = mean + rng.normal(0, 0.6)
                for rater in rng.choice(RATERS, size=rng.integers(2, 4), replace=False):
                    value = int(np.clip(np.rint(quality + rng.normal(0, 0.7)), 1, 5))
                    ratings.writerow([f"p{p:02d}", model, rater, "likert", value])
                metric = 0.2 + 0.1 * quality + rng.normal(0, 0.05)
                scores.writerow([f"p{p:02d}", model, "my-metric", f"{metric:.4f}"])


if __name__ == "__main__":
    main()
