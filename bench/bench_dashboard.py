"""Benchmark of the agreement dashboard (100,000 ratings) and ``stats --json`` (1,000,000).

Design: P prompts × 8 models × 25 raters × 2 criteria (SC, PR) of current ratings on the
{0, 0.5, 1} scale with real model differences, 5 prompt dimensions, plus two metrics
(vqascore, gned) with one value per image; seeded straight into the store's tables with
``executemany`` inside one transaction (the import path is benchmarked elsewhere).
250 prompts give 100,000 ratings, 2,500 prompts 1,000,000.

* dashboard: the page's server-side render with Streamlit's AppTest: the researcher's
  sign-in, which lands on ``pages/dashboard.py``, in a fresh process (cold caches,
  modules imported on the way), again after ``st.cache_data.clear()`` and emptying the
  database's report cache (computed, warm imports), after ``st.cache_data.clear()`` only
  (the report read back from the database), and a rerun served from memory (warm).
* stats: wall time of ``python -m concord stats --study bench --json`` in a subprocess
  (interpreter start, imports, reading the frames, every statistic, the JSON), computed
  (``--no-cache``), then on the unchanged database (the report cache; the first of
  those runs computes and stores it, the others read it).

Run from the repository root:  .venv/bin/python bench/bench_dashboard.py
Targets: dashboard first render < 2 s with 100,000 ratings; stats < 3 s with 1,000,000.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from concord.store import open_db, transaction
from concord.store.db import now

ROOT = Path(__file__).resolve().parents[1]

MODELS, RATERS, DIMENSIONS, CRITERIA = 8, 25, 5, ("SC", "PR")


def setup_study(db, sid: int, n_prompts: int, stamp: str) -> None:
    """Models, prompts, images and raters of a seeded study (shared with bench_export)."""
    ex = db.conn.executemany
    ex("INSERT INTO models (id, study_id, name) VALUES (?, ?, ?)",
       [(m + 1, sid, f"model_{m}") for m in range(MODELS)])
    ex("INSERT INTO prompts (id, study_id, key, text, dimension, position)"
       " VALUES (?, ?, ?, ?, ?, ?)",
       [(p + 1, sid, f"p{p:05d}", f"a photo of object {p}", f"dim{p % DIMENSIONS}", p)
        for p in range(n_prompts)])
    ex("INSERT INTO images (id, study_id, prompt_id, model_id, sample, public_id)"
       " VALUES (?, ?, ?, ?, 0, ?)",
       [(p * MODELS + m + 1, sid, p + 1, m + 1, f"img{p}-{m}")
        for p in range(n_prompts) for m in range(MODELS)])
    ex("INSERT INTO raters (id, name, created_at) VALUES (?, ?, ?)",
       [(r + 1, f"rater_{r:02d}", stamp) for r in range(RATERS)])
    ex("INSERT INTO study_raters (study_id, rater_id, added_at) VALUES (?, ?, ?)",
       [(sid, r + 1, stamp) for r in range(RATERS)])


def seed(db, n_prompts: int, rng: np.random.Generator) -> int:
    """One study 'bench' with ratings and two metrics; returns the number of ratings."""
    stamp = now()
    n_images = n_prompts * MODELS
    latent = np.linspace(-1, 1, MODELS)[np.arange(n_images) % MODELS] + rng.normal(
        0, 1, n_images)
    with transaction(db):
        sid = db.execute("INSERT INTO studies (name, protocol, rubric, settings, created_at)"
                         " VALUES ('bench', 'score', 'imagenhub-released', '{}', ?)",
                         [stamp]).lastrowid
        setup_study(db, sid, n_prompts, stamp)
        noisy = latent[:, None, None] + rng.normal(0, 1, (n_images, RATERS, len(CRITERIA)))
        values = np.clip(np.round(noisy / 2 + 0.5) / 2, 0, 1)
        seconds = rng.gamma(2.0, 4.0, size=(n_images, RATERS)).round(3)
        db.conn.executemany(
            "INSERT INTO ratings (study_id, image_id, rater_id, criterion, value, revision,"
            " submission, action, seconds, created_at) VALUES (?, ?, ?, ?, ?, 1, ?, 'rate', ?,"
            " ?)", ((sid, i + 1, r + 1, c, float(values[i, r, k]), f"s{i}-{r}",
                     float(seconds[i, r]), stamp)
                    for i in range(n_images) for r in range(RATERS)
                    for k, c in enumerate(CRITERIA)))
        metrics = {"vqascore": 1 / (1 + np.exp(-(latent + rng.normal(0, 0.8, n_images)))),
                   "gned": 1 / (1 + np.exp(latent + rng.normal(0, 1.5, n_images)))}
        db.conn.executemany(
            "INSERT INTO metric_scores (study_id, image_id, metric, judge, question_id, value,"
            " details, created_at) VALUES (?, ?, ?, '', '', ?, '{}', ?)",
            ((sid, i + 1, name, float(v[i]), stamp)
             for name, v in metrics.items() for i in range(n_images)))
    return n_images * RATERS * len(CRITERIA)


def seeded_db(folder: Path, n_prompts: int) -> tuple[Path, int, float]:
    """A fresh database file with the bench study; (path, ratings, seconds to seed)."""
    path = folder / f"bench-{n_prompts}.db"
    db = open_db(path)
    start = time.perf_counter()
    n = seed(db, n_prompts, np.random.default_rng(0))
    elapsed = time.perf_counter() - start
    db.close()
    return path, n, elapsed


def dashboard_times(db_path: Path) -> tuple[float, float, float, float]:
    """(first render, render with both caches cleared, render with the database's report
    cache only, warm rerender) of the dashboard, in seconds."""
    os.environ["CONCORD_DB"] = str(db_path)
    os.environ["CONCORD_ADMIN_SECRET"] = "bench-secret-throw-away"  # a throw-away secret
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import through_app_always

    through_app_always()  # as a server runs pages: through app.py (sign-in, navigation)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    at.text_input(key="admin_secret").input("bench-secret-throw-away")
    start = time.perf_counter()
    at.button[0].click().run()  # a researcher lands on the dashboard
    times = [time.perf_counter() - start]
    if [t.value for t in at.title] != ["Agreement dashboard"] or at.exception:
        raise RuntimeError(f"sign-in did not show the dashboard: {at.exception}")
    for clear_memory, clear_db in ((True, True), (True, False), (False, False)):
        if clear_memory:
            st.cache_data.clear()
        if clear_db:  # the reports the database keeps (concord.store.report_cache)
            with transaction(db := open_db(db_path)):
                db.execute("DELETE FROM report_cache")
            db.close()
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
        if at.exception:
            raise RuntimeError(f"dashboard raised: {at.exception[0].value}")
    return times[0], times[1], times[2], times[3]


def stats_seconds(db_path: Path, repeat: int, *extra: str) -> list[float]:
    """Wall times of ``python -m concord stats --json`` in a fresh interpreter each."""
    cmd = [sys.executable, "-m", "concord", "--db", str(db_path), "stats", "--study",
           "bench", "--json", *extra]
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    """Seed both databases, time, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dashboard-prompts", type=int, default=250)
    ap.add_argument("--stats-prompts", type=int, default=2500)
    ap.add_argument("--repeat", type=int, default=3, help="stats runs (best and first shown)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="concord-bench-") as tmp:
        small, n_small, seed_small = seeded_db(Path(tmp), args.dashboard_prompts)
        big, n_big, seed_big = seeded_db(Path(tmp), args.stats_prompts)
        print(f"seeded {n_small:,} ratings in {seed_small:.1f} s and {n_big:,} in "
              f"{seed_big:.1f} s ({MODELS} models × {RATERS} raters × {len(CRITERIA)} "
              f"criteria, 2 metrics)")
        first, cold, stored, warm = dashboard_times(small)
        runs = stats_seconds(big, args.repeat, "--no-cache")
        cached = stats_seconds(big, args.repeat)  # the first run stores the report
    rows = [("dashboard first render (cold cache, fresh process)", n_small, first, 2.0),
            ("dashboard render, both caches cleared", n_small, cold, 2.0),
            ("dashboard render, report from the database", n_small, stored, 2.0),
            ("dashboard rerender (warm cache)", n_small, warm, None),
            ("stats --json --no-cache, first run", n_big, runs[0], 3.0),
            (f"stats --json --no-cache, best of {len(runs)}", n_big, min(runs), 3.0),
            (f"stats --json, unchanged database, best of {len(cached) - 1}", n_big,
             min(cached[1:] or cached), 3.0)]
    print(f"{'step':<54}{'ratings':>11}{'seconds':>9}{'target':>8}")
    for name, n, seconds, target in rows:
        goal = f"< {target:g}" if target else ""
        print(f"{name:<54}{n:>11,}{seconds:>9.2f}{goal:>8}")


if __name__ == "__main__":
    main()
