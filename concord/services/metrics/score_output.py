"""Where a scoring run's rows go: the study's database, or a score file (JSONL).

A score file is what a Slurm array task writes (SQLite cannot be shared over NFS or
Lustre): one ``run`` line, then ``score`` lines appended step by step (one ``write`` and an
``fsync`` per step), then an ``end`` line with the final status. A rerun of the task appends
to the same file and skips what it already holds; ``merge-scores`` brings the files into
the study exactly once. Format: docs/evaluators.md, reader:
:mod:`concord.importers.score_jsonl`.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from concord import atomic
from concord.errors import ConcordError
from concord.store import runs as run_store
from concord.store.db import dumps, now, open_db, transaction
from concord.store.scores import ScoreRow, ScoringItem, write_scores

FORMAT = "concord-scores/1"
logger = logging.getLogger(__name__)


class DatabaseSink:
    """Rows go straight into ``metric_scores``, with the run's counts, one transaction a step."""

    def __init__(self, db: Database, study_id: int) -> None:
        self.db, self.study_id = db, study_id

    def done_keys(self, metric: str, judge: str, key: str | None) -> set[tuple[int, str]]:
        """Nothing beyond what the database holds."""
        return set()

    def open(self, run: dict[str, Any]) -> None:
        """Nothing to write before the first rows."""

    def write(self, rows: list[ScoreRow], run_id: str, n_scored: int, n_errors: int) -> int:
        """Store one step's rows and the counts so far, atomically."""
        with transaction(self.db):
            n = write_scores(self.db, self.study_id, rows, run_id)
            run_store.progress(self.db, run_id, n_scored, n_errors)
        return n

    def close(self, end: dict[str, Any]) -> None:
        """Nothing to finish."""


class FileSink:
    """Rows appended to a JSONL score file; counts still go to the (local) database."""

    def __init__(self, db: Database, path: Path, items: list[ScoringItem]) -> None:
        if path.is_dir():
            raise ConcordError(f"cannot write {path}: it is a folder")
        atomic.refuse_special(path)  # appended to and read back: a regular file only
        self.db, self.path = db, path
        self.keys = {it.image_id: (it.prompt_id, it.model, it.sample) for it in items}
        self.by_key = {v: k for k, v in self.keys.items()}

    def done_keys(self, metric: str, judge: str, key: str | None) -> set[tuple[int, str]]:
        """(image, question) pairs the file already holds a value for (same options)."""
        if not self.path.exists():
            return set()
        from concord.importers.score_jsonl import read_score_file

        _repair_torn_tail(self.path)
        found = set()
        for row in read_score_file(self.path).rows:
            image = self.by_key.get((row["prompt_id"], row["model"], row["sample"]))
            if (image is not None and row["value"] is not None and row["metric"] == metric
                    and row["judge"] == judge and row["options_key"] == key):
                found.add((image, row["question_id"]))
        return found

    def open(self, run: dict[str, Any]) -> None:
        """Start (or continue) the file with this run's header line."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _repair_torn_tail(self.path)
        self._append([{"type": "run", "format": FORMAT, **run}])

    def write(self, rows: list[ScoreRow], run_id: str, n_scored: int, n_errors: int) -> int:
        """Append one step's rows (one write, fsync), then record the counts."""
        self._append([self._line(r, run_id) for r in rows])
        run_store.progress(self.db, run_id, n_scored, n_errors)
        return len(rows)

    def close(self, end: dict[str, Any]) -> None:
        """The ``end`` line: how the run finished."""
        self._append([{"type": "end", **end}])

    def _line(self, row: ScoreRow, run_id: str) -> dict[str, Any]:
        prompt_id, model, sample = self.keys[row.image_id]
        return {"type": "score", "prompt_id": prompt_id, "model": model, "sample": sample,
                "metric": row.metric, "judge": row.judge, "question_id": row.question_id,
                "value": row.value, "details": row.details, "error": row.error,
                "run_id": run_id, "options_key": row.options_key}

    def _append(self, records: list[dict[str, Any]]) -> None:
        data = "".join(dumps(r) + "\n" for r in records).encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def _repair_torn_tail(path: Path) -> None:
    """Drop a last line without its newline (a task killed mid-write) before appending."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        f.seek(0)
        data = f.read()
        f.truncate(data.rfind(b"\n") + 1)


class Heartbeat:
    """A thread that stamps the run's heartbeat every few seconds on its own connection
    (a long forward pass must not make a live run look dead)."""

    def __init__(self, db: Database, run_id: str) -> None:
        self.run_id = run_id
        self.path = run_store.database_file(db)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True,
                                       name="concord-heartbeat")

    def __enter__(self) -> Heartbeat:
        if self.path:  # an in-memory database has no other connections to tell
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)

    def _beat(self) -> None:
        db = open_db(self.path, migrate=False)
        try:
            while not self.stop.wait(run_store.HEARTBEAT_SECONDS):
                try:
                    run_store.heartbeat(db, self.run_id)
                except sqlite3.Error as exc:  # a busy database: beat again next time
                    logger.debug("heartbeat of run %s skipped: %s", self.run_id, exc)
        finally:
            db.close()


def run_header(run_id: str, study: str, metric: str, judge: str, key: str | None,
               shard: str, params: dict[str, Any]) -> dict[str, Any]:
    """What the score file records about its run."""
    return {"run_id": run_id, "study": study, "metric": metric, "judge": judge,
            "options_key": key, "shard": shard, "params": params,
            "host": run_store.this_host(), "started_at": now()}
