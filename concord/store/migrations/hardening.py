"""Migrations of the hardening branch, numbered from 1101."""

from __future__ import annotations

from sqlite_utils import Database

from concord.store.migrations.script import run_script

# Failed researcher sign-ins (concord.store.signins): the client (an address) and when
# (seconds since the epoch). Not report data: no change triggers, not fingerprinted
# (concord.store.report_cache keeps it with its own tables).
_SIGNIN_FAILURES = """
CREATE TABLE signin_failures (
    id INTEGER PRIMARY KEY,
    client TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX signin_failures_at ON signin_failures(at)
"""


def m1101_signin_failures(db: Database) -> None:
    """Failed researcher sign-ins, counted per client and in all to limit guessing."""
    run_script(db, _SIGNIN_FAILURES)
