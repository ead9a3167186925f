"""Ranking page, server side: "submit → next prompt's grid rendered" with 8 × 1024×1024 PNGs.

Drives the real page script in-process with Streamlit's AppTest (one script run per
click, as in a browser session) and times the run that stores a ranking and renders
the next prompt's grid of eight images. Re-run: `.venv/bin/python bench/bench_ranking.py`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_rater_loop import make_images  # noqa: E402
from concord.services import studies  # noqa: E402
from concord.store.db import open_db  # noqa: E402

MODELS = [f"model-{i}" for i in range(8)]


def build_study(tmp: Path, prompts: int) -> Path:
    """Prompts × 8 models of 1024×1024 PNGs (16 distinct images, hard-linked around)."""
    pool = tmp / "pool"
    pool.mkdir()
    make_images(pool, 16)
    study = tmp / "rank"
    rows = ["prompt_id,prompt"] + [f"p{i},prompt number {i}" for i in range(prompts)]
    (study / "images").mkdir(parents=True)
    (study / "prompts.csv").write_text("\n".join(rows) + "\n")
    for m, model in enumerate(MODELS):
        (study / "images" / model).mkdir()
        for i in range(prompts):
            src = pool / f"p{(i * 8 + m) % 16}.png"
            (study / "images" / model / f"p{i}.png").hardlink_to(src)
    manifest = study / "study.yaml"
    manifest.write_text("name: rankbench\nprotocol: rank\nlayout: folder\nroot: images\n"
                        "prompts: prompts.csv\nraters_per_item: 1\n")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--submits", type=int, default=30)
    args = parser.parse_args()
    from streamlit.testing.v1 import AppTest

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        manifest = build_study(tmp, args.submits + 2)
        db = open_db(tmp / "rank.db")
        studies.import_manifest(db, manifest)
        (invite,) = studies.invite(db, "rankbench", ["bench"], "http://x")
        os.environ["CONCORD_DB"] = str(tmp / "rank.db")
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.query_params["token"] = invite.url.split("token=")[1]
        at.run()
        submit_ms, click_ms = [], []
        for _ in range(args.submits):
            for n in range(8):
                t0 = time.perf_counter()
                [b for b in at.button if b.key and b.key.startswith("rank_pick_")][n].click().run()
                click_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            at.button(key="rank_submit").click().run()
            submit_ms.append((time.perf_counter() - t0) * 1000)
            if at.exception:
                raise SystemExit(at.exception)
    print("\n| step (server side, AppTest script run) | n | p50 ms | p95 ms | max ms |")
    print("|---|---|---|---|---|")
    for name, xs in (("submit → next prompt's grid of 8 rendered", submit_ms),
                     ("one click (rank an image)", click_ms)):
        q = statistics.quantiles(xs, n=100)
        print(f"| {name} | {len(xs)} | {statistics.median(xs):.0f} | {q[94]:.0f} | "
              f"{max(xs):.0f} |")


if __name__ == "__main__":
    main()
