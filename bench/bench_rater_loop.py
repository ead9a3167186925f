"""Rater loop speed: "submit → next item fully shown", end to end in headless Chromium.

Starts Concord on a fresh database with N 1024×1024 PNGs, signs a rater in through an
invite link, and times, inside the page, the span from the submit click to the next
image decoded and visible with its prompt on the page. The same measurement runs
against a plain Streamlit form app (st.form + st.radio + st.image PNG + SQLite
insert) in the same run, submits interleaved.
Re-run: `.venv/bin/python bench/bench_rater_loop.py [--submits 75]`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from concord.services import studies  # noqa: E402
from concord.store.db import open_db  # noqa: E402
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, _free_port, _wait_healthy  # noqa: E402

# A rater looks at the image before choosing; the app is idle meanwhile (as in the anchors
# of ../shared/research/perf-anchors.md).
THINK_MS = 800

# In-page timer: click the submit button, resolve when a new image is decoded and shown.
MEASURE_JS = """
async ([submitCss, imgCss, detail]) => {
  while (!document.querySelector(submitCss)) {  // the page may still be settling
    await new Promise((r) => setTimeout(r, 5));
  }
  const oldSrc = document.querySelector(imgCss)?.getAttribute('src');
  const t0 = performance.now();
  let tSrc = null;
  document.querySelector(submitCss).click();
  const img = await new Promise((resolve, reject) => {
    const check = () => {
      if (performance.now() - t0 > 30000) { reject(new Error('no new image in 30 s')); return; }
      const el = document.querySelector(imgCss);
      if (el && el.getAttribute('src') !== oldSrc && tSrc === null) tSrc = performance.now();
      if (el && el.getAttribute('src') !== oldSrc && el.complete && el.naturalWidth > 0) {
        resolve(el);
      } else { requestAnimationFrame(check); }
    };
    check();
  });
  const tLoad = performance.now();
  await img.decode();
  const t = performance.now() - t0;
  return detail ? [t, tSrc - t0, tLoad - t0] : t;
}
"""

# The plain floor: a Streamlit app as anyone would write it (st.form + st.radio +
# st.image with output_format="PNG" + one SQLite insert), one rerun per submit.
BASELINE_APP = textwrap.dedent('''
    import sqlite3, sys
    from pathlib import Path
    import streamlit as st
    files = sorted(Path(sys.argv[1]).glob("*.png"))
    db = sqlite3.connect(sys.argv[2], check_same_thread=False)  # callbacks: another thread
    db.execute("CREATE TABLE IF NOT EXISTS r (i INTEGER, sc REAL, pr REAL)")

    def save():
        i = st.session_state.setdefault("i", 0)
        db.execute("INSERT INTO r VALUES (?, ?, ?)", (i, st.session_state.sc, st.session_state.pr))
        db.commit()
        st.session_state.i = i + 1

    i = st.session_state.setdefault("i", 0)
    st.write(f"prompt {i}")
    st.image(files[i % len(files)].read_bytes(), output_format="PNG")
    with st.form("f"):
        st.radio("SC", [0, 0.5, 1, 2], index=2, horizontal=True, key="sc")
        st.radio("PR", [0, 0.5, 1, 2], index=2, horizontal=True, key="pr")
        st.form_submit_button("Submit", on_click=save)
''')


def make_images(folder: Path, n: int) -> None:
    """N distinct 1024×1024 PNGs of about 1.2 MB (smooth gradients plus noise)."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:1024, 0:1024]
    for i in range(n):
        base = np.stack([(x + i * 7) % 256, (y + i * 13) % 256, (x + y) // 8 % 256], axis=-1)
        noise = rng.integers(0, 6, size=(1024, 1024, 3))
        Image.fromarray((base + noise).clip(0, 255).astype(np.uint8)).save(folder / f"p{i}.png")


def serve(args: list[str], env: dict) -> tuple[str, subprocess.Popen]:
    import os

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", *args[:1],
                             "--server.port", str(port), "--server.headless", "true",
                             "--server.fileWatcherType", "none", "--", *args[1:]],
                            cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    _wait_healthy(url, proc)
    return url, proc


def concord_page(tmp: Path, images: Path, submits: int, browser, servers: list,
                 checklist: bool = False):
    """Concord on a fresh study of ``submits + 5`` images, signed in as a rater."""
    study = tmp / "study"
    (study / "images" / "model-a").mkdir(parents=True)
    rows = ["prompt_id,prompt"] + [f"p{i},prompt number {i}" for i in range(submits + 5)]
    (study / "prompts.csv").write_text("\n".join(rows) + "\n")
    for i in range(submits + 5):
        # A hard link: a symlink out of the study root would be refused by the importer.
        (study / "images" / "model-a" / f"p{i}.png").hardlink_to(images / f"p{i}.png")
    (study / "study.yaml").write_text("name: bench\nlayout: folder\nroot: images\n"
                                      "prompts: prompts.csv\nraters_per_item: 1\n"
                                      + ("checklist: true\n" if checklist else ""))
    db_path = tmp / "bench.db"
    db = open_db(db_path)
    studies.import_manifest(db, study / "study.yaml")
    (invite,) = studies.invite(db, "bench", ["bench-rater"], "http://x")
    url, proc = serve(["app.py"], {"CONCORD_DB": str(db_path)})
    servers.append(proc)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/?token={invite.url.split('token=')[1]}")
    page.locator('[data-testid="stImage"] img').first.wait_for(timeout=60_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached")
    return page


def concord_submit(page, n: int, checklist: bool = False,
                   detail: bool = False) -> float | list[float]:
    """Choose both scores with the keyboard, then time submit → next image shown."""
    # Checklist: tick three conditions (each a rerun that re-derives the value);
    # otherwise choose SC and PR levels.
    keys = ("1", "2", "4") if checklist else ("3", "w")
    for key in keys:
        page.keyboard.press(key)
    # Every tick (a rerun each) must have landed before the timed click, which bypasses
    # the key queue.
    ticked = len(keys) if checklist else 0
    page.wait_for_function(
        "() => document.querySelectorAll('[role=radiogroup] input:checked').length === 2"
        f" && document.querySelectorAll('input[type=checkbox]:checked').length === {ticked}"
        " && !window.__concordKeys.busy && window.__concordKeys.queue.length === 0"
        " && document.querySelector('[data-testid=stApp]')"
        ".getAttribute('data-test-script-state') === 'notRunning'")
    t = page.evaluate(MEASURE_JS, ["[class*='st-key-rate_submit'] button",
                                   '[data-testid="stImage"] img', detail])
    page.get_by_text(f"{n + 1} / ").first.wait_for()
    return t


def baseline_page(tmp: Path, images: Path, browser, servers: list):
    """The plain Streamlit app on the same images."""
    app = tmp / "baseline.py"
    app.write_text(BASELINE_APP)
    url, proc = serve([str(app), str(images), str(tmp / "baseline.db")], {})
    servers.append(proc)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    page.locator('[data-testid="stImage"] img').first.wait_for(timeout=60_000)
    return page


def baseline_submit(page, detail: bool = False) -> float | list[float]:
    return page.evaluate(MEASURE_JS, ['[data-testid="stFormSubmitButton"] button',
                                      '[data-testid="stImage"] img', detail])


def run_all(tmp: Path, images: Path, submits: int, browsers: tuple,
            detail: bool = False) -> list[list]:
    """Submits alternate between the two apps, so a change in the machine's load (a shared
    machine) weighs on all alike; each waits ``THINK_MS`` before its submit. A third browser
    times Concord with the rubric checklist on."""
    servers: list = []
    try:
        pages = [concord_page(tmp, images, submits, browsers[0], servers),
                 baseline_page(tmp, images, browsers[1], servers)]
        if len(browsers) > 2:
            pages.append(concord_page(tmp / "c", images, submits, browsers[2], servers,
                                      checklist=True))
        times: list[list] = [[] for _ in pages]
        for n in range(submits):
            for i, page in enumerate(pages):
                page.wait_for_timeout(THINK_MS)
                times[i].append(baseline_submit(page, detail) if i == 1 else
                                concord_submit(page, n, checklist=i == 2, detail=detail))
        return times
    finally:
        for proc in servers:
            proc.terminate()


def phases(results: list[list[list[float]]]) -> None:
    """Medians of: click → new image address in the page, → image loaded, → decoded."""
    names = ["Concord", "plain app", "Concord, checklist on"]
    print("\n| app | address ms | loaded ms | decoded ms |\n|---|---|---|---|")
    for name, times in zip(names, results, strict=False):
        src, load, total = (statistics.median(t[k] for t in times) for k in (1, 2, 0))
        print(f"| {name} | {src:.0f} | {load:.0f} | {total:.0f} |")


def summary(name: str, times: list[float]) -> str:
    q = statistics.quantiles(times, n=100)
    return (f"| {name} | {len(times)} | {statistics.median(times):.0f} | {q[94]:.0f} | "
            f"{max(times):.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--submits", type=int, default=75)
    parser.add_argument("--checklist", action="store_true",
                        help="also time the scoring page with the rubric checklist on")
    parser.add_argument("--phases", action="store_true",
                        help="also print, per app, the median time to the new image's "
                             "address, to its load, and to its decode")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as d, sync_playwright() as p:
        tmp = Path(d)
        images = tmp / "png"
        images.mkdir()
        t0 = time.perf_counter()
        make_images(images, args.submits + 5)
        size = sum(f.stat().st_size for f in images.glob("*.png")) / (args.submits + 5) / 1e6
        print(f"made {args.submits + 5} PNGs of 1024×1024, {size:.2f} MB each, "
              f"in {time.perf_counter() - t0:.0f} s")
        # One browser per app: a second tab of one browser is a background tab, which gets
        # no animation frames.
        browsers = tuple(p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                         for _ in range(3 if args.checklist else 2))
        results = run_all(tmp, images, args.submits, browsers, detail=args.phases)
        if args.phases:
            phases(results)
            results = [[t[0] for t in times] for times in results]
        concord, baseline, *listed = results
        for browser in browsers:
            browser.close()
    print("\n| app | submits | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|")
    print(summary("Concord scoring page", concord))
    if listed:
        print(summary("Concord scoring page, checklist on (3 ticks per image)", listed[0]))
    print(summary("plain Streamlit form app (same run, submits interleaved)", baseline))
    ratio = [statistics.quantiles(t, n=100)[94] for t in (concord, baseline)]
    print(f"\np95 ratio Concord / plain app: {ratio[0] / ratio[1]:.2f} "
          f"(p50 ratio {statistics.median(concord) / statistics.median(baseline):.2f})")


if __name__ == "__main__":
    main()
