"""Scoring runs: who is scoring what, how far it got, and whether it is still alive.

A run is ``running`` from its start until it ends as ``done``, ``failed`` or ``cancelled``.
While it runs, its process writes a heartbeat every few seconds and its counts after every
step. A ``running`` run whose process is gone (same host, pid not alive) or whose heartbeat
is older than :data:`STALE_AFTER` seconds is ``stale``: it was killed without a chance to
say so. Two runs of the same (study, metric, judge) on overlapping shards may not run at
once: :func:`start_run` checks and inserts in one ``BEGIN IMMEDIATE`` transaction.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from concord.errors import ConcordError
from concord.store import catalog
from concord.store.db import dumps, loads, now, transaction

STATUSES = ("running", "done", "failed", "cancelled", "stale")
HEARTBEAT_SECONDS = 5.0
STALE_AFTER = 120.0


class RunConflict(ConcordError):
    """Another live run scores the same (study, metric, judge) on an overlapping shard."""


@dataclass(frozen=True, slots=True)
class Run:
    """One row of ``runs`` with its study name."""

    id: str
    study: str
    metric: str
    judge: str
    status: str
    params: dict[str, Any]
    started_at: str
    finished_at: str | None
    heartbeat_at: str | None
    pid: int | None
    host: str | None
    n_total: int | None
    n_scored: int
    n_errors: int
    options_key: str | None
    shard: str
    error: str | None
    log_path: str | None

    @property
    def n_done(self) -> int:
        """Images finished so far (scored or errored)."""
        return self.n_scored + self.n_errors


def new_run_id() -> str:
    """A fresh run id (12 hex digits)."""
    return uuid.uuid4().hex[:12]


def this_host() -> str:
    """The host name recorded with runs (pids are only meaningful on their host)."""
    return socket.gethostname()


def pid_alive(pid: int | None) -> bool:
    """Whether process ``pid`` exists on this host and is not a zombie."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def process_started_at(pid: int) -> float | None:
    """When process ``pid`` of this host started (epoch seconds, about a second's
    precision), from ``/proc``; None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        with open("/proc/stat", encoding="ascii", errors="replace") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def runs_here(run: Run) -> bool:
    """Whether ``run``'s process is alive on this host: its pid exists and that process
    started before the run did (a pid the system gave to a later process is not the run)."""
    if run.host != this_host() or not pid_alive(run.pid):
        return False
    started = process_started_at(run.pid or 0)
    recorded = dt.datetime.fromisoformat(run.started_at).timestamp()
    return started is None or started <= recorded + 2.0  # btime has whole seconds


def database_file(db: Database) -> str:
    """The file behind a connection ("" in memory and on PostgreSQL)."""
    return catalog.database_file(db)


def shards_overlap(a: str, b: str) -> bool:
    """Whether two shard specs (``""``, ``"i/n"`` or ``"i/n:r/w"``) can share an image."""
    if not a or not b:
        return True
    pa, pb = a.split(":"), b.split(":")
    if len(pa) != len(pb) or [p.split("/")[1] for p in pa] != [p.split("/")[1] for p in pb]:
        return True  # different splits: no cheap proof that they are disjoint
    return pa == pb


_SELECT = ("SELECT r.*, s.name AS study FROM runs r JOIN studies s ON s.id = r.study_id")


def _run(row: dict[str, Any]) -> Run:
    return Run(id=row["id"], study=row["study"], metric=row["metric"], judge=row["judge"],
               status=row["status"], params=loads(row["params"], {}),
               started_at=row["started_at"], finished_at=row["finished_at"],
               heartbeat_at=row["heartbeat_at"], pid=row["pid"], host=row["host"],
               n_total=row["n_total"], n_scored=row["n_scored"], n_errors=row["n_errors"],
               options_key=row["options_key"], shard=row["shard"], error=row["error"],
               log_path=row["log_path"])


def _is_stale(run: Run, at: dt.datetime) -> bool:
    if run.host == this_host() and not runs_here(run):
        return True
    beat = dt.datetime.fromisoformat(run.heartbeat_at or run.started_at)
    return (at - beat).total_seconds() > STALE_AFTER


def mark_stale(db: Database, study_id: int | None = None) -> list[str]:
    """Turn dead ``running`` runs into ``stale``; returns their ids."""
    where = "r.status = 'running'" + (" AND r.study_id = ?" if study_id is not None else "")
    runs = [_run(r) for r in db.query(f"{_SELECT} WHERE {where}",
                                      [] if study_id is None else [study_id])]
    at = dt.datetime.now(dt.UTC)
    stale = [r.id for r in runs if _is_stale(r, at)]
    if stale:
        with transaction(db):
            for run_id in stale:
                db.execute("UPDATE runs SET status = 'stale' WHERE id = ? AND status = 'running'",
                           [run_id])
    return stale


def start_run(db: Database, *, run_id: str, study_id: int, metric: str, judge: str,
              params: dict[str, Any], options_key: str | None, shard: str, n_total: int,
              log_path: str | None = None) -> str:
    """Record a run as ``running`` (this process); refuse a live overlapping run.

    Raises:
        RunConflict: a live run of the same study, metric and judge on an overlapping shard.
    """
    mark_stale(db, study_id)
    stamp = now()
    with transaction(db):
        for other in db.query(f"{_SELECT} WHERE r.study_id = ? AND r.metric = ? AND r.judge = ?"
                              " AND r.status = 'running'", [study_id, metric, judge]):
            run = _run(other)
            if shards_overlap(shard, run.shard):
                raise RunConflict(
                    f"run {run.id} (pid {run.pid} on {run.host}, started {run.started_at[:19]})"
                    f" is already scoring {metric!r} with judge {judge or '-'!r} on study "
                    f"{run.study!r}; wait for it or cancel it")
        db.execute(
            "INSERT INTO runs (id, study_id, metric, judge, params, started_at, status, pid,"
            " host, heartbeat_at, n_total, options_key, shard, log_path)"
            " VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)",
            [run_id, study_id, metric, judge, dumps(params), stamp, os.getpid(), this_host(),
             stamp, n_total, options_key, shard, log_path])
    return run_id


def heartbeat(db: Database, run_id: str) -> None:
    """The run's process is alive now."""
    with transaction(db):
        db.execute("UPDATE runs SET heartbeat_at = ? WHERE id = ?", [now(), run_id])


def progress(db: Database, run_id: str, n_scored: int, n_errors: int) -> None:
    """Counts so far (inside the caller's transaction when there is one)."""
    with transaction(db):
        db.execute("UPDATE runs SET n_scored = ?, n_errors = ?, heartbeat_at = ? WHERE id = ?",
                   [n_scored, n_errors, now(), run_id])


def finish_run(db: Database, run_id: str, status: str, n_scored: int, n_errors: int,
               error: str | None = None) -> None:
    """Record how a run ended."""
    if status not in STATUSES or status == "running":
        raise ValueError(f"a run ends as done, failed, cancelled or stale, not {status!r}")
    with transaction(db):
        db.execute("UPDATE runs SET status = ?, finished_at = ?, n_scored = ?, n_errors = ?,"
                   " error = ? WHERE id = ?", [status, now(), n_scored, n_errors, error, run_id])


def get_run(db: Database, run_id: str) -> Run | None:
    """One run, or None."""
    rows = list(db.query(f"{_SELECT} WHERE r.id = ?", [run_id]))
    return _run(rows[0]) if rows else None


def list_runs(db: Database, study_id: int | None = None, limit: int = 100) -> list[Run]:
    """Newest first (dead ``running`` runs are marked stale first)."""
    mark_stale(db, study_id)
    where, args = ("WHERE r.study_id = ?", [study_id]) if study_id is not None else ("", [])
    return [_run(r) for r in db.query(f"{_SELECT} {where} ORDER BY r.started_at DESC LIMIT ?",
                                      [*args, limit])]


def record_imported_run(db: Database, run: dict[str, Any], study_id: int) -> None:
    """A run read from a score file (``merge-scores``). Merged again after the task
    finished, its end (status, counts) replaces the ``stale`` it was recorded with."""
    db.execute(
        "INSERT INTO runs (id, study_id, metric, judge, params, started_at, finished_at,"
        " status, host, n_total, n_scored, n_errors, options_key, shard)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET status = excluded.status,"
        " finished_at = excluded.finished_at, n_scored = excluded.n_scored,"
        " n_errors = excluded.n_errors WHERE runs.status = 'stale' AND excluded.status != 'stale'",
        [run["run_id"], study_id, run["metric"], run["judge"], dumps(run.get("params", {})),
         run["started_at"], run.get("finished_at"), run.get("status", "stale"),
         run.get("host"), run.get("n_total"), run.get("n_scored", 0), run.get("n_errors", 0),
         run.get("options_key"), run.get("shard", "")])
