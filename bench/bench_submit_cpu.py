"""App CPU per submit on the scoring, ranking and pair screens, against a plain Streamlit app.

Starts one Concord server per screen (a fresh study of 512×512 PNGs each, one rater signed
in through an invite link in headless Chromium) and the plain Streamlit form app of
bench_rater_loop.py, then submits by keyboard on each in turn (interleaved, so a change in
the shared machine's load weighs on all alike). Per server it reads the process's user +
system CPU time (psutil) before and after its submits: CPU ms per submit is that
difference over the submits, after a few warm-up submits that are not counted. Each
submit waits for the next item to be on screen before the next one starts.

Re-run: `.venv/bin/python bench/bench_submit_cpu.py [--submits 40] [--profile rate]`
(`--profile SCREEN` also records that server with py-spy into /tmp/concord-<screen>.txt,
one line per stack with its sample count, for finding where a rerun spends its time).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psutil
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_rater_loop import BASELINE_APP, serve  # noqa: E402
from concord.services import studies  # noqa: E402
from concord.store.db import open_db  # noqa: E402
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

WARMUP = 3
MODELS = ("model-a", "model-b", "model-c", "model-d")
SCREENS = {  # screen -> (manifest extra, page path, progress noun)
    "rate": ("protocol: score\n", "", "rated"),
    "rank": ("protocol: rank\n", "rank", "prompts ranked"),
    "pair": ("protocol: pair\npairs:\n  pairs_per_prompt: 1\n", "pair", "pairs judged"),
}


def make_images(folder: Path, n: int) -> None:
    """``n`` distinct 512×512 PNGs per model (gradients plus noise, about 0.3 MB)."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:512, 0:512]
    for m, model in enumerate(MODELS):
        (folder / model).mkdir(parents=True)
        for i in range(n):
            base = np.stack([(x + i * 7 + m * 31) % 256, (y + i * 13) % 256,
                             (x + y) // 8 % 256], axis=-1)
            noise = rng.integers(0, 6, size=(512, 512, 3))
            Image.fromarray((base + noise).clip(0, 255).astype(np.uint8)).save(
                folder / model / f"p{i}.png")


def concord_server(tmp: Path, images: Path, screen: str, prompts: int):
    """A Concord server with a study for ``screen``; returns (url with token, process)."""
    extra, _, _ = SCREENS[screen]
    study = tmp / screen
    study.mkdir()
    rows = ["prompt_id,prompt"] + [f"p{i},prompt number {i}" for i in range(prompts)]
    (study / "prompts.csv").write_text("\n".join(rows) + "\n")
    for model in MODELS:
        (study / "images" / model).mkdir(parents=True)
        for i in range(prompts):
            (study / "images" / model / f"p{i}.png").hardlink_to(images / model / f"p{i}.png")
    (study / "study.yaml").write_text(f"name: {screen}\nlayout: folder\nroot: images\n"
                                      f"prompts: prompts.csv\nraters_per_item: 1\n{extra}")
    db_path = tmp / f"{screen}.db"
    db = open_db(db_path)
    studies.import_manifest(db, study / "study.yaml")
    (invite,) = studies.invite(db, screen, ["bench-rater"], "http://x")
    db.close()
    url, proc = serve(["app.py"], {"CONCORD_DB": str(db_path)})
    token = invite.url.split("token=")[1]
    path = SCREENS[screen][1]
    return f"{url}/{path}?token={token}", proc


def _idle(page) -> None:
    page.wait_for_function("() => document.querySelector('[data-testid=stApp]')"
                           ".getAttribute('data-test-script-state') === 'notRunning'"
                           " && window.__concordKeys && !window.__concordKeys.busy"
                           " && window.__concordKeys.queue.length === 0")


def concord_submit(screen: str) -> Callable:
    """One submit by keyboard on ``screen``, waiting for the next item's progress."""
    noun = SCREENS[screen][2]

    def submit(page, n: int) -> None:
        keys = {"rate": ["3", "w", "Enter"], "pair": ["1"],
                "rank": [str(i + 1) for i in range(len(MODELS))] + ["Enter"]}[screen]
        for key in keys:
            page.keyboard.press(key)
        page.get_by_text(f"{n + 1} / ").filter(has_text=noun).first.wait_for(timeout=60_000)
        _idle(page)
    return submit


def baseline_submit(page, n: int) -> None:
    page.wait_for_function("() => document.querySelector('[data-testid=stApp]')"
                           ".getAttribute('data-test-script-state') === 'notRunning'")
    page.locator('[data-testid="stFormSubmitButton"] button').click()
    try:
        page.get_by_text(f"prompt {n + 1}", exact=True).wait_for(timeout=60_000)
    except Exception:
        page.screenshot(path="/tmp/bench-plain-failed.png")
        raise RuntimeError(f"plain app: no 'prompt {n + 1}' after submit; page: "
                           f"{page.inner_text('body')[:300]!r}") from None
    page.wait_for_function("() => document.querySelector('[data-testid=stApp]')"
                           ".getAttribute('data-test-script-state') === 'notRunning'")


def cpu_seconds(proc: subprocess.Popen) -> float:
    times = psutil.Process(proc.pid).cpu_times()
    return times.user + times.system


def start_apps(p, tmp: Path, screens: list[str], total: int,
               servers: dict) -> tuple[dict, dict]:
    """One Concord server per screen and the plain app, each with its browser page signed
    in; fills ``servers`` as they start (so the caller stops them all whatever fails) and
    returns (pages, submit functions), keyed by app name like ``servers``."""
    make_images(tmp / "png", total + 2)
    pages, submits = {}, {}
    for screen in screens:
        url, servers[screen] = concord_server(tmp, tmp / "png", screen, total + 2)
        pages[screen] = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS
                                          ).new_page(viewport={"width": 1400, "height": 1000})
        pages[screen].goto(url)
        pages[screen].locator("html[data-concord-keys='ready']").wait_for(
            state="attached", timeout=60_000)
        _idle(pages[screen])
        submits[screen] = concord_submit(screen)
    app = tmp / "baseline.py"
    app.write_text(BASELINE_APP)
    url, servers["plain"] = serve([str(app), str(tmp / "png" / MODELS[0]),
                                   str(tmp / "baseline.db")],
                                  {"STREAMLIT_RUNNER_POST_SCRIPT_GC": "true"})
    pages["plain"] = p.chromium.launch(executable_path=CHROMIUM,
                                       args=CHROMIUM_ARGS).new_page()
    pages["plain"].goto(url)
    pages["plain"].get_by_text("prompt 0", exact=True).wait_for(timeout=60_000)
    submits["plain"] = baseline_submit
    return pages, submits


def measure(servers: dict, pages: dict, submits: dict, total: int) -> tuple[dict, dict]:
    """Submits in turn on every app; (CPU seconds after the warm-up, RSS samples) per app."""
    used = dict.fromkeys(servers, 0.0)
    rss: dict[str, list[int]] = {name: [] for name in servers}
    for n in range(total):
        for name, submit in submits.items():
            before = cpu_seconds(servers[name])
            submit(pages[name], n)
            if n >= WARMUP:
                used[name] += cpu_seconds(servers[name]) - before
            if n in (WARMUP, total - 1):
                rss[name].append(psutil.Process(servers[name].pid).memory_info().rss)
    return used, rss


def profiler(pid: int, screen: str) -> subprocess.Popen:
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("py-spy")), "record", "--format", "raw", "-o",
         f"/tmp/concord-{screen}.txt", "--nonblocking", "--pid", str(pid), "--rate", "200"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def report(used: dict, rss: dict, submits: int) -> None:
    base = used["plain"] / submits * 1000
    print(f"\n{submits} submits per app after {WARMUP} warm-up ones, interleaved; "
          "app process user + system CPU\n")
    print("| app | CPU ms / submit | ratio to the plain app | RSS MB after warm-up → end |"
          "\n|---|---|---|---|")
    for name, seconds in used.items():
        ms = seconds / submits * 1000
        label = "plain Streamlit form app" if name == "plain" else f"Concord {name} screen"
        grew = " → ".join(f"{b / 2**20:.0f}" for b in rss[name])
        print(f"| {label} | {ms:.1f} | {ms / base:.2f} | {grew} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--submits", type=int, default=40)
    parser.add_argument("--screens", nargs="+", default=list(SCREENS), choices=list(SCREENS))
    parser.add_argument("--profile", choices=list(SCREENS), default=None)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    total = args.submits + WARMUP
    with tempfile.TemporaryDirectory() as d, sync_playwright() as p:
        servers: dict = {}
        try:
            pages, submits = start_apps(p, Path(d), args.screens, total, servers)
            spy = profiler(servers[args.profile].pid, args.profile) if args.profile else None
            used, rss = measure(servers, pages, submits, total)
            if spy is not None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
                spy.wait(timeout=60)
        finally:
            for proc in servers.values():
                proc.terminate()
    report(used, rss, args.submits)


if __name__ == "__main__":
    main()
