"""``migrate-db``: copy a whole Concord database to another engine, and check the copy."""

from __future__ import annotations

import argparse

from sqlite_utils import Database

from concord.config import Settings, database_target, mask_password
from concord.errors import ConcordError
from concord.store import copy, engine
from concord.store.db import open_db


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the ``migrate-db`` parser (help in ``concord.cli.COMMANDS``)."""
    p.description = (
        "Copy every table of the database FROM (every study, rater, rating revision, "
        "audit row and the report cache) into the empty database TO, in one transaction, "
        "then compare each table's row count and checksum on both sides. FROM and TO "
        "are SQLite files (a path or sqlite:///...) or PostgreSQL URLs "
        "(postgresql://user@host/database). TO must hold no data; it is created (with "
        "Concord's schema) when new. FROM is only read, in one snapshot.")
    p.add_argument("--from", dest="source", required=True, metavar="FROM",
                   help="the database to copy")
    p.add_argument("--to", dest="target", required=True, metavar="TO",
                   help="the empty database to copy into")
    p.set_defaults(func=_migrate)


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    source_at = database_target(args.source, None)
    target_at = database_target(args.target, None)
    shown_source, shown_target = _shown(source_at), _shown(target_at)
    if str(source_at) == str(target_at):
        raise ConcordError(f"migrate-db: --from and --to are the same database ({shown_source})")
    if not isinstance(source_at, str) and not source_at.is_file():
        raise ConcordError(f"migrate-db: no database at {source_at} to copy")
    source = open_db(source_at, migrate=False)
    try:
        _refuse_old(source, shown_source)
        target = open_db(target_at)
        try:
            busy = copy.occupied(target)
            if busy:
                few = ", ".join(f"{t} ({n:,} rows)" for t, n in list(busy.items())[:4])
                raise ConcordError(f"migrate-db: {shown_target} is not empty: {few}; copy "
                                   "into a new, empty database (nothing was changed)")
            try:
                checks = copy.copy_all(source, target)
            except ConcordError as exc:
                raise ConcordError(f"migrate-db: {exc}; nothing was written") from exc
        finally:
            target.close()
    finally:
        source.close()
    _report(checks, shown_source, shown_target)
    return 0


def _refuse_old(db: Database, shown: str) -> None:
    """An older SQLite database is not upgraded by a copy (open_pg refuses such a
    PostgreSQL one)."""
    from concord.store.migrations import migrations

    if not engine.is_postgres(db) and migrations.pending(db):
        raise ConcordError(f"migrate-db: {shown} is a database of an older Concord; open it "
                           "once with this version (concord --db ... init --no-demo) first")


def _report(checks: list[copy.TableCheck], source: str, target: str) -> None:
    bad = [c for c in checks if not c.same]
    for c in checks:
        mark = "ok" if c.same else "DIFFERS"
        print(f"{c.table:24} {c.rows:>10,} rows  {c.checksum[:16]}  "
              f"{c.target_rows:>10,} rows  {c.target_checksum[:16]}  {mark}")
    if bad:
        raise ConcordError(f"migrate-db: {len(bad)} table(s) differ after the copy "
                           f"({', '.join(c.table for c in bad)}); do not use {target}")
    total = sum(c.rows for c in checks)
    print(f"copied {source} to {target}: {len(checks)} tables, {total:,} rows; row counts "
          "and checksums match on both sides")


def _shown(at: object) -> str:
    return mask_password(at) if isinstance(at, str) else str(at)
