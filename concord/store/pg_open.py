"""Opening a Concord database on PostgreSQL: refuse what is not one, create a new one.

A PostgreSQL database is created at the current schema in one step (``pg_schema``); its
``_sqlite_migrations`` table records the migrations that schema stands for, so a database
copied between the engines (``concord migrate-db``) carries the same record, and a newer
Concord's database is refused as on SQLite.
"""

from __future__ import annotations

import threading

from concord import __version__
from concord.store import guard, pg_schema
from concord.store.engine import WRITE_LOCK_KEY
from concord.store.pg import POOL_TIMEOUT_S, PgDatabase, sqlite_errors

# URLs whose database this process has checked (or created) already: the app opens one
# connection per page run, and the check reads the catalogue.
_CHECKED: set[str] = set()
_CHECKED_LOCK = threading.Lock()


def open_pg(url: str, *, migrate: bool = True, check_schema: bool = True) -> PgDatabase:
    """The Concord database at ``url``, created when the database holds no table.

    Raises:
        DatabaseRefused: not a Concord database, or one a newer Concord wrote (unchanged);
            or no connection could be made (the server's reason; the password not shown).
        DatabaseBusy: every connection of this process's pool stayed taken for
            ``pg.POOL_TIMEOUT_S`` (retryable).
    """
    db = _connect(url)
    try:
        if url not in _CHECKED:
            _check_or_create(db, url, migrate=migrate, check_schema=check_schema)
    except BaseException:
        db.close()
        raise
    return db


def _connect(url: str) -> PgDatabase:
    import psycopg
    from psycopg_pool import PoolTimeout

    from concord.store.db import DatabaseBusy

    try:
        return PgDatabase(url)
    except PoolTimeout as exc:
        raise DatabaseBusy(
            f"every connection to the database stayed busy for {POOL_TIMEOUT_S:g} s; "
            "nothing was saved, please try again in a minute") from exc
    except (OSError, psycopg.Error) as exc:  # refused, bad URL, no database, password
        from concord.config import mask_passwords_in

        reason = mask_passwords_in(" ".join(str(exc).split()), url)[:300]
        raise guard.DatabaseRefused(
            f"database {shown(url)}: cannot connect to PostgreSQL ({reason}); nothing "
            "was changed") from exc


def shown(url: str) -> str:
    """``url`` with its password masked, for messages."""
    from concord.config import mask_password

    return mask_password(url)


def _check_or_create(db: PgDatabase, url: str, *, migrate: bool, check_schema: bool) -> None:
    label = shown(url)
    tables = set(db.table_names())
    if not tables:
        if not migrate:
            return
        _create(db)
    else:
        _check(db, label, tables, migrate=migrate, check_schema=check_schema)
    with _CHECKED_LOCK:
        _CHECKED.add(url)


def _create(db: PgDatabase) -> None:
    """The schema and its migration record, in one transaction under the write lock (two
    processes opening a new database at once: the second finds it made)."""
    with sqlite_errors(), db.pg.raw.transaction():
        db.pg.raw.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK_KEY])
        if db.table_names():
            return
        db.pg.raw.execute(pg_schema.DDL)
        _record(db, pg_schema.BASE)
        _upgrade(db, 0)


def _check(db: PgDatabase, label: str, tables: set[str], *, migrate: bool,
           check_schema: bool) -> None:
    if guard.MIGRATIONS_TABLE not in tables:
        few = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
        raise guard.DatabaseRefused(
            f"database {label} is not a Concord database (it holds {few}); nothing was "
            "changed. Point --db (or CONCORD_DB) at a Concord database or an empty one")
    applied = [r[0] for r in db.execute(
        f"SELECT name FROM {guard.MIGRATIONS_TABLE} WHERE migration_set = 'concord'"
        " ORDER BY id")]
    known = pg_schema.MIGRATION_NAMES
    unknown = [name for name in applied if name not in known]
    if unknown:
        raise guard.DatabaseRefused(
            f"database {label} was written by a newer Concord: it has migration(s) "
            f"{', '.join(unknown)}, and this Concord ({__version__}) knows migrations up to "
            f"{known[-1]}. Upgrade Concord to open it; nothing was changed")
    if len(applied) < len(known):
        _bring_up(db, label, applied, migrate=migrate)
    if check_schema:
        _check_columns(db, label)


def _bring_up(db: PgDatabase, label: str, applied: list[str], *, migrate: bool) -> None:
    """Upgrade an older Concord's PostgreSQL database (pg_schema.UPGRADES)."""
    known = pg_schema.MIGRATION_NAMES
    if tuple(applied) != known[:len(applied)] or len(applied) < len(pg_schema.BASE):
        missing = [name for name in known if name not in applied]
        raise guard.DatabaseRefused(
            f"database {label} lacks migration(s) {', '.join(missing[:5])}: it was changed "
            "by hand; nothing was changed")
    if not migrate:
        raise guard.DatabaseRefused(
            f"database {label} was made by an older Concord; open it once with "
            "`concord init --no-demo` to upgrade it")
    with sqlite_errors(), db.pg.raw.transaction():
        db.pg.raw.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK_KEY])
        _upgrade(db, len(applied))


def _check_columns(db: PgDatabase, label: str) -> None:
    """The tables and views with their columns must be this version's (as on SQLite)."""
    expected = {(t, c) for t, c in guard.expected_schema().columns}
    actual = {(r[0], r[1]) for r in db.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema ="
        f" current_schema() AND table_name != '{guard.MIGRATIONS_TABLE}'")}
    missing = sorted(f"{t}.{c}" for t, c in expected - actual)
    extra = sorted(f"{t}.{c}" for t, c in actual - expected)
    if missing:
        raise guard.DatabaseRefused(
            f"database {label} lacks column(s) {', '.join(missing[:5])} although every "
            "migration is recorded: it was changed by hand. Nothing was changed; restore a "
            "backup")
    if extra:
        raise guard.DatabaseRefused(
            f"database {label} has column(s) or table(s) this Concord ({__version__}) does "
            f"not know: {', '.join(extra[:5])}; it was changed by hand or written by a newer "
            "Concord. Nothing was changed")


def _record(db: PgDatabase, names: tuple[str, ...] | list[str]) -> None:
    db.pg.executemany(
        f"INSERT INTO {guard.MIGRATIONS_TABLE} (migration_set, name, applied_at)"
        " VALUES ('concord', ?, CAST(now() AS TEXT))", [[name] for name in names])


def _upgrade(db: PgDatabase, applied: int) -> None:
    """Run and record the upgrades past the first ``applied`` migrations (inside the
    caller's transaction, under the write lock; a second process finds them done)."""
    done = db.execute(f"SELECT COUNT(*) FROM {guard.MIGRATIONS_TABLE}").fetchone()[0]
    for name, ddl in pg_schema.upgrades_after(max(applied, int(done))):
        db.pg.raw.execute(ddl)
        _record(db, [name])
