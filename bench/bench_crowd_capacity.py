"""How many raters one host serves with a submit p95 under 300 ms, with 1 or more app
processes (several behind nginx with cookie-sticky sessions) on one SQLite file or one
PostgreSQL database (``--engine``).

For each number of app processes and each load level: L simulated raters work through
the service layer on the same database file (each looks at an image for ``--think``
seconds on average, then submits), while B real browser contexts (headless Chromium)
rate through the app with the keyboard; a submit's latency is measured inside each page,
from the Enter key to the progress bar showing the new count. The app processes' CPU
time per browser submit is measured too (what each extra rater costs the app).

Re-run (a bigger box: more processes, more load):
`.venv/bin/python bench/bench_crowd_capacity.py --processes 1,2 --load 0,20,40,80`
With ``--engine sqlite,postgresql`` both engines are measured, interleaved (for each
process count: SQLite, then PostgreSQL on a throw-away server, tests/support/pg_server.py).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import capacity_parts as parts  # noqa: E402
from concord.services import studies  # noqa: E402
from concord.store.db import open_db  # noqa: E402
from concord.store.raters import rater_for_token  # noqa: E402
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, start_server, stop  # noqa: E402
from tests.helpers import make_folder_study  # noqa: E402
from tests.support import loadtest  # noqa: E402

TARGET_P95 = 0.300


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _engines(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [n for n in names if n not in parts.ENGINES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"--engine {text!r}: give sqlite, postgresql or both "
                                         "(comma-separated)")
    return names


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engine", type=_engines, default=["sqlite"],
                   help="sqlite (default), postgresql, or sqlite,postgresql (interleaved)")
    p.add_argument("--processes", type=_ints, default=[1, 2], help="e.g. 1,2,4")
    p.add_argument("--load", type=_ints, default=[0, 20, 40, 80],
                   help="simulated raters per run (service layer), e.g. 0,20,40")
    p.add_argument("--browsers", type=int, default=3, help="browser contexts (probes)")
    p.add_argument("--submits", type=int, default=6, help="submits per browser per run")
    p.add_argument("--think", type=float, default=5.0,
                   help="mean seconds a simulated rater spends on an image")
    p.add_argument("--pause", type=float, default=1.0,
                   help="seconds over which the probes' submits of one round are spread "
                        "(0: all at once, a burst)")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds of load before probes")
    p.add_argument("--prompts", type=int, default=300, help="prompts (x2 models) in the study")
    p.add_argument("--baseline", type=int, default=10,
                   help="submits of a minimal Streamlit form app before and after the runs, "
                        "to show how busy the machine is (0: skip)")
    return p.parse_args()


def baseline(browser, tmp: Path, submits: int) -> str:
    """Submit -> next image of a minimal Streamlit form app (bench_rater_loop's floor)."""
    from bench import bench_rater_loop as loop

    images = tmp / "baseline-images"
    if not images.is_dir():
        images.mkdir()
        loop.make_images(images, 6)
    servers: list = []
    try:
        page = loop.baseline_page(tmp, images, browser, servers)
        times = []
        for _ in range(submits):
            page.wait_for_timeout(loop.THINK_MS)
            times.append(loop.baseline_submit(page))
        page.close()
    finally:
        for proc in servers:
            proc.terminate()
    return (f"minimal Streamlit form app, submit -> next image: p50 "
            f"{np.percentile(times, 50):.0f} ms, p95 {np.percentile(times, 95):.0f} ms "
            f"({submits} submits; load average {os.getloadavg()[0]:.1f})")


def prepare(target: Path | str, manifest: Path,
            args: argparse.Namespace) -> tuple[Path | str, list[int], list[str]]:
    """The study (k large enough not to run out) and the raters in the database at
    ``target`` (a SQLite file or a PostgreSQL URL): load ids, probe tokens."""
    db_path = target
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    n_load = max([*args.load, 1])
    load = studies.invite(db, "cap", [f"load{i:03d}" for i in range(n_load)], "x")
    probes = studies.invite(db, "cap", [f"probe{i:02d}" for i in range(args.browsers)], "x")
    ids = [rater_for_token(db, i.url.split("token=")[1]).id for i in load]
    db.close()
    return db_path, ids, [i.url.split("token=")[1] for i in probes]


def _load_worker(db_path: Path | str, ids: list[int], think: float, stop_event, out) -> None:
    # Think times uniform on (0, 2 * think): ``think`` seconds per image on average.
    r = loadtest.run(db_path, "cap", ids, seconds=600, think=(0.0, 2 * think), stop=stop_event)
    out.put({"stored": r.stored, "seconds": r.seconds, "errors": len(r.errors),
             "duplicates": r.duplicate_keys, "latencies": r.waits})


def start_load(db_path: Path | str, ids: list[int], think: float):
    """The simulated raters in their own process (their GIL is not the probes')."""
    ctx = mp.get_context("spawn")
    stop_event, out = ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=_load_worker, args=(db_path, ids, think, stop_event, out))
    proc.start()
    return proc, stop_event, out


def probe_run(browser, url: str, tokens: list[str], args, pids: list[int]) -> dict:
    """Open the probes, submit ``args.submits`` times each; latencies and app CPU."""
    probes = [parts.open_probe(browser, url, t) for t in tokens]
    for p in probes:  # each probe continues from its own count
        text = p.page.locator('[data-testid="stProgress"]').first.inner_text()
        p.done = int(text.split(" / ")[0])
    cpu0 = sum(parts.cpu_seconds(pid) for pid in pids)
    busy0 = parts.machine_busy()
    for _ in range(args.submits):
        parts.submit_all(probes, spread=args.pause)
    cpu = sum(parts.cpu_seconds(pid) for pid in pids) - cpu0
    busy1 = parts.machine_busy()
    for p in probes:
        p.page.context.close()
    lat = [x for p in probes for x in p.latencies]
    busy = (busy1[0] - busy0[0]) / max(busy1[1] - busy0[1], 1)
    return {"latencies": lat, "cpu_per_submit": cpu / max(len(lat), 1), "busy": busy}


def measure(browser, url: str, pids: list[int], db_path: Path | str, ids: list[int],
            tokens: list[str], load: int, args) -> dict:
    """One row of the table: ``load`` simulated raters plus the browser probes."""
    proc = stop_event = out = None
    if load:
        proc, stop_event, out = start_load(db_path, ids[:load], args.think)
        time.sleep(args.warmup)
    t0 = time.monotonic()
    probe = probe_run(browser, url, tokens, args, pids)
    elapsed = time.monotonic() - t0
    result = {"stored": 0, "seconds": elapsed, "errors": 0, "duplicates": 0,
              "latencies": []}
    if proc is not None:
        stop_event.set()
        result = out.get(timeout=120)
        proc.join(timeout=60)
    return {"load": load, **probe, "service": result, "loadavg": os.getloadavg()[0]}


def run_processes(browser, n: int, engine: str, db_path: Path | str, ids: list[int],
                  tokens: list[str], tmp: Path, args) -> list[dict]:
    """Start ``n`` app processes (behind nginx when more than one) and measure each load."""
    servers = [start_server(db_path, tmp) for _ in range(n)]
    proxy = None
    try:
        if n == 1:
            url = servers[0][0]
        else:
            ports = [int(u.rsplit(":", 1)[1]) for u, _ in servers]
            url, proxy = parts.start_nginx(tmp / f"nginx-{engine}-{n}", ports)
        pids = [proc.pid for _, proc in servers]
        rows = []
        for load in args.load:
            row = measure(browser, url, pids, db_path, ids, tokens, load, args)
            rows.append({"engine": engine, "processes": n, **row})
            print(_line(rows[-1], args), flush=True)
            if row["service"]["errors"] or row["service"]["duplicates"]:
                print(f"  (simulated raters: {row['service']['errors']} errors, "
                      f"{row['service']['duplicates']} duplicate ratings)", flush=True)
        return rows
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=10)
        for _, proc in servers:
            stop(proc)


def _ms(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q) * 1000:.0f}" if values else "—"


HEADER = ("| engine | app processes | simulated raters | offered submits/s | service submits/s | "
          "service p95 ms | browser submits | browser p50 ms | browser p95 ms | "
          "app CPU ms / submit | machine busy | load avg |\n|" + "---|" * 12)


def _line(row: dict, args: argparse.Namespace) -> str:
    s = row["service"]
    lat = row["latencies"]
    return (f"| {row['engine']} | {row['processes']} | {row['load']} | "
            f"{row['load'] / args.think:.1f} | "
            f"{s['stored'] / max(s['seconds'], 1e-9):.1f} | {_ms(s['latencies'], 95)} | "
            f"{len(lat)} | {_ms(lat, 50)} | {_ms(lat, 95)} | "
            f"{row['cpu_per_submit'] * 1000:.0f} | {row['busy']:.0%} | {row['loadavg']:.1f} |")


def summary(rows: list[dict], args: argparse.Namespace) -> None:
    """Per process count: the measured load (every load up to it under 300 ms p95), and
    the bound the app processes' CPU per submit sets when every rater is a browser."""
    cores = os.cpu_count() or 1
    print(f"\nraters served with browser submit p95 < {TARGET_P95 * 1000:.0f} ms "
          f"(think {args.think:g} s):")
    for engine, n in sorted({(r["engine"], r["processes"]) for r in rows}):
        mine = sorted((r for r in rows if (r["engine"], r["processes"]) == (engine, n)),
                      key=lambda r: r["load"])
        ok = None
        for r in mine:
            if not r["latencies"] or np.percentile(r["latencies"], 95) >= TARGET_P95:
                break
            ok = r["load"]
        measured = (f"{ok + args.browsers} ({ok} simulated + {args.browsers} browsers)"
                    if ok is not None else "none of the loads tried")
        cpu = float(np.median([r["cpu_per_submit"] for r in mine]))
        # Half a core per process keeps queueing low; a process never uses more than one.
        bound = min(n, cores) * 0.5 / max(cpu, 1e-6) * args.think
        print(f"  {engine}, {n} process(es): measured {measured}; app-process bound "
              f"~{bound:.0f} raters (CPU {cpu * 1000:.0f} ms/submit, half of "
              f"{min(n, cores)} core(s))")


def main() -> None:
    args = parse_args()
    from playwright.sync_api import sync_playwright

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    with (tempfile.TemporaryDirectory() as d, parts.Databases(Path(d), args.engine) as dbs,
          sync_playwright() as pw):
        tmp = Path(d)
        t0 = time.perf_counter()
        manifest = make_folder_study(tmp / "cap", prompts=args.prompts, models=("a", "b"),
                                     k=1000)
        ready = {e: prepare(dbs.target(e), manifest, args) for e in args.engine}
        print(f"study of {2 * args.prompts} images ready in {time.perf_counter() - t0:.0f} s "
              f"({', '.join(dbs.describe(e) for e in args.engine)})")
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        if args.baseline:
            print("before: " + baseline(browser, tmp, args.baseline), flush=True)
        print(HEADER, flush=True)
        rows = []
        for n in args.processes:
            for engine in args.engine:  # interleaved: the machine's noise hits both alike
                rows += run_processes(browser, n, engine, *ready[engine], tmp, args)
        if args.baseline:
            print("after: " + baseline(browser, tmp, args.baseline), flush=True)
        browser.close()
    summary(rows, args)


if __name__ == "__main__":
    main()
