"""Opening the database for the app: pages and ``concord.ui`` reach the store only through
services, and this is the service that hands them a connection."""

from __future__ import annotations

from pathlib import Path

from sqlite_utils import Database

from concord.store.db import DatabaseBusy, open_db

__all__ = ["DatabaseBusy", "open_database"]  # DatabaseBusy: a write waited too long


def open_database(path: str | Path, *, migrate: bool = True,
                  check_same_thread: bool = True) -> Database:
    """The store's :func:`concord.store.db.open_db` (WAL, foreign keys, migrations)."""
    return open_db(path, migrate=migrate, check_same_thread=check_same_thread)
