"""Pairwise A/B speed: the pair screen against the scoring screen, the service calls, the
pair design and the report's pair section.

1. Browser (headless Chromium, as bench_rater_loop.py): "choice → next pair fully shown"
   (both new 1024×1024 PNGs decoded and visible) on the pair screen, and "submit → next
   image" on the scoring screen, same machine, same run.
2. Service layer: next item + submit, pairs vs ratings (median and p99 ms).
3. The balanced design: 8 models × 10,000 prompts, 4 pairs per prompt.
4. The report's pair section (Bradley–Terry ×2 tie models with 1,000 resamples, Elo,
   win rates, agreement, …) on simulated judgments.

Re-run: `.venv/bin/python bench/bench_pairs.py [--submits 40]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# One BLAS thread: an oversubscribed pool on a shared machine only adds noise.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_rater_loop import (  # noqa: E402
    THINK_MS,
    make_images,
    run_concord,
    serve,
    summary,
)
from concord.pair_design import schedule  # noqa: E402
from concord.services import studies  # noqa: E402
from concord.services.labelling import pairs, rating  # noqa: E402
from concord.services.labelling.common import new_submission  # noqa: E402
from concord.stats.report.pair_sections import pair_sections  # noqa: E402
from concord.store import raters as rater_store  # noqa: E402
from concord.store.db import open_db  # noqa: E402
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.helpers import make_folder_study  # noqa: E402

# In-page timer: click the choice, resolve when both images of the next pair have new
# sources, are loaded and decoded.
PAIR_JS = """
async ([clickCss, imgCss]) => {
  while (!document.querySelector(clickCss)) await new Promise((r) => setTimeout(r, 5));
  const srcs = () => [...document.querySelectorAll(imgCss)].map((e) => e.getAttribute('src'))
    .join();
  const old = srcs();
  const t0 = performance.now();
  document.querySelector(clickCss).click();
  const imgs = await new Promise((resolve) => {
    const check = () => {
      const all = [...document.querySelectorAll(imgCss)];
      const ready = all.every((e) => e.complete && e.naturalWidth > 0);
      if (all.length === 2 && srcs() !== old && ready) {
        resolve(all);
      } else { requestAnimationFrame(check); }
    };
    check();
  });
  // An element Streamlit replaced while decoding rejects; its successor is loaded already.
  await Promise.all(imgs.map((e) => e.decode().catch(() => null)));
  return performance.now() - t0;
}
"""


def pair_study(tmp: Path, images: Path, n: int) -> Path:
    """``n`` prompts × 2 models (1 pair each), hard links to the benchmark PNGs."""
    study = tmp / "pairs"
    for model in ("model-a", "model-b"):
        (study / "images" / model).mkdir(parents=True)
    rows = ["prompt_id,prompt"] + [f"p{i},prompt number {i}" for i in range(n)]
    (study / "prompts.csv").write_text("\n".join(rows) + "\n")
    for i in range(n):
        (study / "images" / "model-a" / f"p{i}.png").hardlink_to(images / f"p{i}.png")
        (study / "images" / "model-b" / f"p{i}.png").hardlink_to(images / f"p{i + n}.png")
    (study / "study.yaml").write_text("name: bench-pairs\nlayout: folder\nprotocol: pair\n"
                                      "root: images\nprompts: prompts.csv\n"
                                      "raters_per_item: 1\n")
    return study / "study.yaml"


def run_pairs(tmp: Path, images: Path, submits: int, browser) -> list[float]:
    db_path = tmp / "pairs.db"
    db = open_db(db_path)
    studies.import_manifest(db, pair_study(tmp, images, submits + 5))
    (invite,) = studies.invite(db, "bench-pairs", ["bench-rater"], "http://x")
    url, proc = serve(["app.py"], {"CONCORD_DB": str(db_path)})
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/?token={invite.url.split('token=')[1]}")
        page.locator("[class*='st-key-pair_side_'] img").nth(1).wait_for(timeout=60_000)
        page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
        times = []
        for n in range(submits):
            page.wait_for_timeout(THINK_MS)
            times.append(page.evaluate(PAIR_JS, ["[class*='st-key-pair_pick_left'] button",
                                                 "[class*='st-key-pair_side_'] img"]))
            page.get_by_text(f"{n + 1} / ").first.wait_for()
        page.close()
        return times
    finally:
        proc.terminate()


def browser_table(submits: int) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as d, sync_playwright() as p:
        tmp = Path(d)
        images = tmp / "png"
        images.mkdir()
        make_images(images, 2 * (submits + 5))
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pair_times = run_pairs(tmp, images, submits, browser)
        score_times = run_concord(tmp, images, submits, browser)
        browser.close()
    print("\n| screen (1024×1024 PNGs) | choices | p50 ms | p95 ms | max ms |\n"
          "|---|---|---|---|---|")
    print(summary("pair screen: choice → both next images shown", pair_times))
    print(summary("scoring screen: submit → next image shown", score_times))


def _timed(call) -> float:
    t0 = time.perf_counter()
    call()
    return (time.perf_counter() - t0) * 1000


def _best(call, repeat: int = 3) -> float:
    """Best of ``repeat`` runs, in seconds (the machine is shared)."""
    return min(_timed(call) for _ in range(repeat)) / 1000


def service_table(n: int = 300) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        db = open_db(tmp / "svc.db")
        studies.import_manifest(db, make_folder_study(tmp / "svc", prompts=60, protocol="both",
                                                      models=("a", "b", "c", "d", "e"),
                                                      k=1, extra="pairs: {}\n"))
        studies.invite(db, "svc", ["r"], "http://x")
        rid = rater_store.get_rater(db, "r").id
        for name, step in (("pairs: next pair + submit", lambda: pairs.submit(
                db, "svc", rid, pairs.next_pair(db, "svc", rid), "left")),
                           ("ratings: next image + submit", lambda: rating.submit(
                db, "svc", rid, rating.next_item(db, "svc", rid).image_id,
                {"SC": 1, "PR": 1}, submission=new_submission()))):
            times = [_timed(step) for _ in range(n)]
            q = statistics.quantiles(times, n=100)
            rows.append(f"| {name} | {n} | {statistics.median(times):.1f} | {q[98]:.1f} |")
    print("\n| service call (600 pairs / 300 images) | calls | median ms | p99 ms |\n"
          "|---|---|---|---|")
    print("\n".join(rows))


def design_and_report_table() -> None:
    models = [f"m{i}" for i in range(8)]
    prompts = [(f"p{i}", models) for i in range(10_000)]
    t_design = _best(lambda: schedule(prompts, per_prompt=4, seed=0))
    rng = np.random.default_rng(0)
    theta = np.linspace(1, -1, 8)
    n = 15_000
    a, b = rng.integers(0, 8, n), rng.integers(0, 7, n)
    b = np.where(b >= a, b + 1, b)
    p_left = 1 / (1 + np.exp(theta[b] - theta[a]))
    roll = rng.random(n)
    outcome = np.where(roll < 0.1, "tie", np.where(rng.random(n) < p_left, "left", "right"))
    frame = pd.DataFrame({"prompt_id": [f"p{i}" for i in rng.integers(0, 1000, n)],
                          "rater": [f"r{i}" for i in rng.integers(0, 20, n)],
                          "left_model": np.array(models)[a], "right_model": np.array(models)[b],
                          "outcome": outcome, "criterion": "overall"})
    frame = frame.drop_duplicates(["prompt_id", "rater", "left_model", "right_model"])
    t_report = _best(lambda: pair_sections(frame, None, None, n_boot=1000, seed=0, ci=0.95,
                                           higher_is_better=None))
    print("\n| step (best of 3) | size | seconds |\n|---|---|---|")
    print(f"| balanced design (pair_design.schedule) | 8 models × 10,000 prompts, 4 per prompt "
          f"| {t_design:.2f} |")
    print(f"| report pair section, 1,000 resamples | {len(frame):,} judgments, 8 models, "
          f"1,000 prompts | {t_report:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--submits", type=int, default=40)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    design_and_report_table()
    service_table()
    if not args.no_browser:
        browser_table(args.submits)


if __name__ == "__main__":
    main()
