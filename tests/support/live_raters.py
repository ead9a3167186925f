"""Rater threads that keep submitting through the rating service while a maintenance
command (backup, restore) runs, each on its own connection as the app's pages are; what
each rater was told is kept (tests/test_restore_live.py, tests/test_pg_backup.py)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from concord.errors import ConcordError
from concord.services.labelling import rating
from concord.services.labelling.common import new_submission
from concord.store import open_db

# Generous bounds on waiting for the raters: on a loaded machine they only make the test
# slower, never fail it while the raters still progress.
PROGRESS_WAIT_S = 120


class Raters:
    """Rater threads that submit until stopped; what each was told is kept."""

    def __init__(self, path: Path | str, ids: dict[str, int]) -> None:
        self.stop = threading.Event()
        self.acked: list[str] = []  # submission ids the service said it stored
        self.messages: list[str] = []  # ConcordError messages shown to raters
        self.errors: list[str] = []  # anything else: a traceback on a rater's screen
        self.threads = [threading.Thread(target=self._rate, args=(path, rid), daemon=True)
                        for rid in ids.values()]

    def _rate(self, path: Path | str, rater_id: int) -> None:
        db = open_db(path)
        try:
            while not self.stop.is_set():
                self._once(db, rater_id)
        finally:
            db.close()

    def _once(self, db, rater_id: int) -> None:
        try:
            item = rating.next_item(db, "s", rater_id)
            if item is None:
                time.sleep(0.01)
                return
            sub = new_submission()
            if rating.submit(db, "s", rater_id, item.image_id, {"SC": 1, "PR": 0.5},
                             submission=sub).stored:
                self.acked.append(sub)
        except ConcordError as exc:  # the page shows it in one line: fine
            self.messages.append(str(exc))
        except Exception as exc:  # what the test is looking for: a traceback
            self.errors.append(repr(exc))

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + PROGRESS_WAIT_S
        while len(self.acked) < count and time.monotonic() < deadline and not self.errors:
            time.sleep(0.01)


def submissions_in(path: Path) -> set[str]:
    """The submissions of every rating in the SQLite file ``path`` (a backup, a safety
    copy, a database)."""
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT DISTINCT submission FROM ratings")}
    finally:
        conn.close()
