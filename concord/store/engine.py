"""Which engine a database runs on, without importing either driver: the SQLite default
must not pay for psycopg (``concord.store.pg``) at start-up, nor the reverse."""

from __future__ import annotations

import re

# Transaction-scoped advisory lock every PostgreSQL write transaction takes first: writers
# take turns as SQLite's BEGIN IMMEDIATE makes them (every invariant of the store, from the
# last free slot of an item to exactly-once imports, was written for one writer at a
# time), while readers never wait (MVCC). The number is arbitrary; it names Concord's lock.
WRITE_LOCK_KEY = 0x434F4E43  # "CONC"
_URL = re.compile(r"postgres(?:ql)?(?:\+[a-z0-9]+)?://", re.IGNORECASE)


def is_url(target: object) -> bool:
    """Whether ``target`` (a --db value) names a PostgreSQL database."""
    return isinstance(target, str) and _URL.match(target) is not None


def is_postgres(db: object) -> bool:
    """Whether ``db`` is a PostgreSQL database (concord.store.pg.PgDatabase)."""
    return getattr(db, "engine", "sqlite") == "postgresql"
