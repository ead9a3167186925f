"""Benchmark of ``concord.stats.full_report`` on crowd studies: many raters, few ratings each.

Design: P prompts × 8 models, each image rated on SC and PR by 3 raters drawn from R
(a Prolific-style study: R in the thousands, each rater rating a few dozen images), with
the ImagenHub overall score derived; 1,000 bootstrap resamples. Each size runs in a fresh
interpreter (``subprocess``) so that its peak memory (``ru_maxrss``, imports included) is
its own.

Run from the repository root:  .venv/bin/python bench/bench_crowd_stats.py
Prints one table: raters, prompts, ratings, seconds of ``full_report``, peak MB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = ((1_000, 500), (3_000, 1_500), (10_000, 5_000))

_CHILD = """
import json, resource, sys, time
import numpy as np, pandas as pd
sys.path.insert(0, {root!r})
from concord.stats import IMAGENHUB_O, full_report
raters, prompts = {raters}, {prompts}
rng = np.random.default_rng(0)
n_images = prompts * 8
image = np.repeat(np.arange(n_images), 3)
rater = np.concatenate([rng.choice(raters, 3, replace=False) for _ in range(n_images)])
latent = np.linspace(-1, 1, 8)[image % 8]
frames = [pd.DataFrame({{
    "prompt_id": [f"p{{i // 8:05d}}" for i in image], "model": [f"m{{i % 8}}" for i in image],
    "rater": [f"r{{r:05d}}" for r in rater], "criterion": crit, "image_id": image, "sample": 0,
    "value": np.clip(np.round((latent + rng.normal(0, 1, image.size)) / 2 + 0.5) / 2, 0, 1)}})
    for crit in ("SC", "PR")]
ratings = pd.concat(frames, ignore_index=True)
start = time.perf_counter()
full_report(ratings, n_boot=1000, derived=[IMAGENHUB_O])
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"ratings": len(ratings), "seconds": seconds, "peak_mb": peak}}))
"""


def run(raters: int, prompts: int, timeout: float) -> dict:
    """One size in a fresh interpreter; ``seconds`` is None when it ran past ``timeout``."""
    code = _CHILD.format(root=str(ROOT), raters=raters, prompts=prompts)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return {"ratings": prompts * 8 * 3 * 2, "seconds": None, "peak_mb": None}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Time every size and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=900, help="seconds per size")
    args = ap.parse_args()
    print(f"{'raters':>8}{'prompts':>9}{'ratings':>10}{'seconds':>10}{'peak MB':>10}")
    for raters, prompts in SIZES:
        out = run(raters, prompts, args.timeout)
        seconds = "timeout" if out["seconds"] is None else f"{out['seconds']:.2f}"
        peak = "" if out["peak_mb"] is None else f"{out['peak_mb']:.0f}"
        print(f"{raters:>8,}{prompts:>9,}{out['ratings']:>10,}{seconds:>10}{peak:>10}")


if __name__ == "__main__":
    main()
