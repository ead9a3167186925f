"""Metric runs started from the app: one detached ``python -m concord score`` per run.

The app process never imports torch, transformers or a metric class: the metric list is the
registry's data (:mod:`evaluators.registry`, which imports neither), a run is its own
process in its own session with its own log file, and what the page shows is read from the
``runs`` table (status, heartbeat, counts) and the tail of that log. Cancelling sends
SIGTERM, which the run turns into status ``cancelled``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from concord.config import ROOT, Settings
from concord.errors import ConcordError
from concord.store import runs as run_store
from concord.store import studies as study_store
from evaluators.registry import EVALUATORS, MetricInfo, list_evaluators
from evaluators.registry import higher_is_better as registry_direction

DEVICES = ("auto", "cpu", "cuda")
_OPTION = re.compile(r"^[A-Za-z_]\w*=.*$")
_LAUNCHED: dict[str, subprocess.Popen] = {}  # runs this server process started
_STARTED: dict[str, float] = {}
_LOCK = threading.Lock()
SHOW_RECENT = 600.0  # seconds a launch from this page stays in view after it ends


def metric_catalog() -> tuple[MetricInfo, ...]:
    """Every metric with its direction, judge and questions, sorted by name.

    Read from the registry's data in this process: no metric class, torch or transformers
    is imported.
    """
    return tuple(EVALUATORS[name] for name in list_evaluators())


def higher_is_better(metric: str) -> bool:
    """The direction of ``metric`` (True for a metric not registered: scores imported under
    a name of their own)."""
    return registry_direction(metric)


@dataclass(frozen=True, slots=True)
class RunRequest:
    """A run as the page asks for it."""

    study: str
    metric: str
    judge: str = ""
    device: str = "auto"
    batch_size: str = "auto"
    options: tuple[str, ...] = ()


def check(db: Database, req: RunRequest) -> None:
    """Refuse a request that cannot start, with one line (before any process starts)."""
    if req.study not in study_store.list_study_names(db):
        raise ConcordError(f"no study named {req.study!r}")
    if req.metric not in {m.name for m in metric_catalog()}:
        raise ConcordError(f"unknown metric {req.metric!r}")
    if req.device not in DEVICES and not re.fullmatch(r"cuda:\d+", req.device):
        raise ConcordError(f"device must be auto, cpu, cuda or cuda:N, got {req.device!r}")
    size = req.batch_size.strip().lower()
    if size != "auto" and not (size.isdigit() and int(size) >= 1):
        raise ConcordError(f"batch size must be a number >= 1 or auto, got {req.batch_size!r}")
    for option in req.options:
        if not _OPTION.match(option):
            raise ConcordError(f"options are KEY=VALUE, one per line; got {option!r}")


def log_dir(settings: Settings) -> Path:
    """Where run logs go: ``logs/`` beside the database."""
    return settings.db_path.resolve().parent / "logs"


def command(settings: Settings, req: RunRequest, run_id: str, log: Path) -> list[str]:
    """The ``python -m concord score`` command line of a request."""
    # A PostgreSQL URL is not put on the command line (``ps`` shows it, password and all):
    # the child reads it from CONCORD_DB, which :func:`start` sets.
    where = [] if settings.db_url else ["--db", str(settings.db_path.resolve())]
    argv = [sys.executable, "-m", "concord", *where, "score", "--study", req.study,
            "--metric", req.metric, "--device", req.device, "--batch-size",
            req.batch_size.strip().lower(), "--no-progress",
            "--run-id", run_id, "--log-path", str(log)]
    if req.judge.strip():
        argv += ["--model", req.judge.strip()]
    for option in req.options:
        argv += ["--option", option]
    return argv


def start(db: Database, settings: Settings, req: RunRequest) -> str:
    """Start a detached scoring process; returns its run id (the page watches it)."""
    check(db, req)
    run_id = run_store.new_run_id()
    log = log_dir(settings) / f"{run_id}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if settings.db_url:  # the child scores this database, whichever way it was chosen
        env["CONCORD_DB"] = settings.db_url
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(command(settings, req, run_id, log), cwd=ROOT, env=env,
                                stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    with _LOCK:
        _LAUNCHED[run_id] = proc
        _STARTED[run_id] = time.monotonic()
    # reap the child when it ends, so a finished run is never a zombie "still alive"
    threading.Thread(target=proc.wait, name=f"concord-reap-{run_id}", daemon=True).start()
    return run_id


@dataclass(frozen=True, slots=True)
class RunView:
    """What the page shows of one run."""

    run_id: str
    status: str           # a run status, or "starting" / "exited" before the run row exists
    study: str = ""
    metric: str = ""
    judge: str = ""
    done: int = 0
    errors: int = 0
    total: int | None = None
    error: str | None = None
    log: str = ""

    @property
    def fraction(self) -> float:
        """Progress in [0, 1] (0 while the total is unknown)."""
        return min(1.0, self.done / self.total) if self.total else 0.0


def view(db: Database, settings: Settings, run_id: str, lines: int = 20) -> RunView:
    """Status, counts and log tail of a run (also one that has not written its row yet)."""
    run = run_store.get_run(db, run_id)
    log = Path(run.log_path) if run is not None and run.log_path else \
        log_dir(settings) / f"{run_id}.log"
    tail = log_tail(log, lines)
    if run is None:
        proc = _LAUNCHED.get(run_id)
        status = "starting" if proc is not None and proc.poll() is None else "exited"
        return RunView(run_id, status, log=tail)
    if run.status == "running":
        run_store.mark_stale(db)
        run = run_store.get_run(db, run_id) or run
    return RunView(run.id, run.status, run.study, run.metric, run.judge, run.n_done,
                   run.n_errors, run.n_total, run.error, tail)


def active(db: Database) -> list[str]:
    """Runs to watch: every running one, and this server's launches of the last minutes
    (still starting, finished, or exited before writing their run row: the log says why)."""
    ids = [r.id for r in run_store.list_runs(db) if r.status == "running"]
    recent = time.monotonic() - SHOW_RECENT
    with _LOCK:
        launched = [rid for rid, p in _LAUNCHED.items()
                    if (p.poll() is None or _STARTED[rid] > recent) and rid not in ids]
    return ids + launched


def cancel(db: Database, run_id: str) -> str:
    """Stop a run: SIGTERM to its process on this host (the run records itself as
    cancelled), or, when its process is gone, mark it stale. Returns what was done.

    Raises:
        ConcordError: no such run, a run that already ended, or one whose process lives on
            another host (the message names it).
    """
    run = run_store.get_run(db, run_id)
    if run is None:
        proc = _LAUNCHED.get(run_id)  # launched from this page, its run row not written yet
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            return f"asked run {run_id} (pid {proc.pid}) to stop before it started scoring"
        raise ConcordError(f"no run {run_id!r} (python -m concord runs list shows the runs)")
    if run.status != "running":
        raise ConcordError(f"run {run_id} is {run.status}, not running")
    if run_id in run_store.mark_stale(db):
        return (f"run {run_id} had no live process (pid {run.pid} on {run.host}); "
                "marked stale, what it scored is kept")
    if not run.pid or not run_store.runs_here(run):  # runs_here: the pid is alive here
        raise ConcordError(f"run {run_id} runs on {run.host} (pid {run.pid}); cancel it there")
    os.kill(run.pid, signal.SIGTERM)
    return f"asked run {run_id} (pid {run.pid}) to stop; it records itself as cancelled"


def past_runs(db: Database, study: str | None = None) -> list[dict[str, Any]]:
    """The runs table for the page, newest first."""
    study_id = study_store.get_study(db, study).id if study else None
    return [{"run": r.id, "study": r.study, "metric": r.metric, "judge": r.judge,
             "status": r.status, "scored": r.n_scored, "errors": r.n_errors,
             "of": r.n_total, "started": r.started_at[:19].replace("T", " "),
             "finished": (r.finished_at or "")[:19].replace("T", " "),
             "options": " ".join(r.params.get("options") or []), "shard": r.shard,
             "error": r.error or ""}
            for r in run_store.list_runs(db, study_id)]


def log_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file ("" when there is none)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16_384))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.replace("\r", "\n").splitlines()[-lines:])
