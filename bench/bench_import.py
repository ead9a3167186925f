"""Benchmark of ``python -m concord import`` on 10,000 real PNG files (folder layout).

Design: 100 prompts × 100 models = 10,000 PNGs of 64×64 pixels (each one different),
written to a temporary folder, then imported into a fresh database with
``services.studies.import_manifest`` — the code path of the CLI: read the prompts, open,
verify, fully decode and hash every image, write everything in one transaction. Then the
same manifest is imported again (a no-op that still checks every file).

Run from the repository root:  .venv/bin/python bench/bench_import.py [--prompts N] [--models N]
Prints one table: step, seconds, images/s, peak MB (tracemalloc, in a separate run because
tracing slows Python code down) and the process's max RSS.
"""

from __future__ import annotations

import argparse
import csv
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from concord.services import studies
from concord.store import open_db

SIZE = 64


def make_study(root: Path, n_prompts: int, n_models: int, seed: int = 0) -> Path:
    """Write prompts.csv, the PNGs and study.yaml under ``root``; returns the manifest."""
    rng = np.random.default_rng(seed)
    with (root / "prompts.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["prompt_id", "prompt", "dimension"])
        for p in range(n_prompts):
            w.writerow([f"p{p:04d}", f"a photo of object number {p}", f"dim{p % 5}"])
    base = np.tile(np.linspace(0, 255, SIZE, dtype=np.uint8), (SIZE, 1))
    for m in range(n_models):
        folder = root / "images" / f"model_{m:03d}"
        folder.mkdir(parents=True)
        for p in range(n_prompts):
            pixels = np.stack([base, base.T, np.full_like(base, (m * 7 + p) % 256)], axis=-1)
            pixels[:8, :8] = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
            Image.fromarray(pixels, "RGB").save(folder / f"p{p:04d}.png")
    manifest = root / "study.yaml"
    manifest.write_text("name: bench\nlayout: folder\nroot: images\nprompts: prompts.csv\n"
                        "protocol: score\nraters_per_item: 3\n", encoding="utf-8")
    return manifest


def timed(fn) -> tuple[float, object]:
    """Seconds one call takes, and its result."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def traced_peak_mb(fn) -> float:
    """Peak Python heap (MB) during one call, by tracemalloc."""
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def max_rss_mb() -> float:
    """The process's peak resident set size so far (MB; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    """Generate, import, re-import; print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=100)
    ap.add_argument("--models", type=int, default=100)
    args = ap.parse_args()
    n = args.prompts * args.models
    with tempfile.TemporaryDirectory(prefix="concord-bench-") as tmp:
        root = Path(tmp)
        gen_s, manifest = timed(lambda: make_study(root, args.prompts, args.models))
        db = open_db(root / "bench.db")
        import_s, summary = timed(lambda: studies.import_manifest(db, manifest))
        assert summary.images_added == n, summary
        rss = max_rss_mb()
        again_s, again = timed(lambda: studies.import_manifest(db, manifest))
        assert not again.changed
        db.close()
        traced = open_db(root / "traced.db")
        peak = traced_peak_mb(lambda: studies.import_manifest(traced, manifest))
        traced.close()
    print(f"{n:,} PNGs of {SIZE}×{SIZE} ({args.prompts} prompts × {args.models} models), "
          f"generated in {gen_s:.1f} s")
    print(f"{'step':<24}{'seconds':>9}{'images/s':>10}{'peak MB':>9}{'max RSS MB':>12}")
    print(f"{'import (new study)':<24}{import_s:>9.2f}{n / import_s:>10,.0f}{peak:>9.1f}"
          f"{rss:>12.0f}")
    print(f"{'re-import (no-op)':<24}{again_s:>9.2f}{n / again_s:>10,.0f}{'':>9}"
          f"{max_rss_mb():>12.0f}")


if __name__ == "__main__":
    main()
