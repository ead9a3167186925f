"""The PostgreSQL engine: the same store API as sqlite-utils' ``Database`` over psycopg.

Every query of ``concord/store`` is written once, in SQL both engines accept; this module
does only what differs between the engines and cannot be written in the query:

- placeholders: the store writes ``?`` (sqlite3's style); psycopg's raw cursor takes
  PostgreSQL's own ``$1, $2, …`` (so a ``%`` in a query is an ordinary character);
- connections: one ``psycopg_pool.ConnectionPool`` per database URL and process, checked
  before it is handed out (a restarted server's dead connections are replaced, not used);
- results: ``numeric`` (what PostgreSQL's SUM and AVG of integers return) is read as an
  ``int`` when whole and a ``float`` otherwise, as SQLite returns them.

Connections run in autocommit mode; ``concord.store.db.transaction`` opens each write
transaction and takes the write lock (:data:`WRITE_LOCK_KEY`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
from collections.abc import Generator, Iterable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg import RawCursor
from psycopg.adapt import Dumper, Loader, PyFormat
from psycopg.rows import dict_row
from psycopg.types.numeric import IntDumper
from psycopg_pool import ConnectionPool
from sqlite_utils import Database

from concord.errors import ConcordError
from concord.store.engine import WRITE_LOCK_KEY, is_postgres, is_url
from concord.store.pg_sql import args_of, translate

__all__ = ["WRITE_LOCK_KEY", "PgDatabase", "is_postgres", "is_url", "pool", "translate"]
POOL_MAX = 10
# How long a page run waits for a free connection of this process's pool, and for a new
# connection to the server (CONCORD_PG_CONNECT_TIMEOUT seconds, default 10).
POOL_TIMEOUT_S = 30.0
_POOLS: dict[str, ConnectionPool] = {}
_POOLS_LOCK = threading.Lock()
_ANSWERED: set[str] = set()  # URLs whose server this process has reached


def libpq_url(url: str) -> str:
    """``url`` as libpq takes it (SQLAlchemy's ``postgresql+psycopg://`` form is read)."""
    return re.sub(r"^postgres(?:ql)?(?:\+[a-z0-9]+)?://", "postgresql://", url, flags=re.I)


@contextlib.contextmanager
def sqlite_errors() -> Iterator[None]:
    """psycopg's errors as the ``sqlite3`` errors the store catches (one copy of each
    ``except`` for both engines): a constraint broken is an ``IntegrityError``, anything
    the server refused or could not do an ``OperationalError``; the original is chained."""
    try:
        yield
    except psycopg.IntegrityError as exc:
        raise PgIntegrityError(str(exc).strip(), exc) from exc
    except psycopg.OperationalError as exc:
        if _connection_lost(exc):
            from concord.store.db import DatabaseUnavailable

            raise DatabaseUnavailable(
                "the connection to the database was lost (its server may be restarting);"
                " nothing was saved, please try again in a minute") from exc
        raise PgOperationalError(str(exc).strip(), exc) from exc
    except (psycopg.DataError, psycopg.ProgrammingError, psycopg.InternalError,
            psycopg.NotSupportedError) as exc:
        raise PgOperationalError(str(exc).strip(), exc) from exc


def _connection_lost(exc: psycopg.OperationalError) -> bool:
    """A client-side connection failure (no SQLSTATE), a connection exception (class 08)
    or the server shutting down / not yet accepting connections (57P01-57P03)."""
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


class PgIntegrityError(sqlite3.IntegrityError):
    """A PostgreSQL constraint violation (``.pg`` is psycopg's error, ``.sqlstate`` its code)."""

    def __init__(self, message: str, pg: psycopg.Error) -> None:
        super().__init__(message)
        self.pg, self.sqlstate = pg, pg.sqlstate


class PgOperationalError(sqlite3.OperationalError):
    """A PostgreSQL error other than a constraint (``.pg``, ``.sqlstate`` as above)."""

    def __init__(self, message: str, pg: psycopg.Error) -> None:
        super().__init__(message)
        self.pg, self.sqlstate = pg, pg.sqlstate


class _NumericLoader(Loader):
    """``numeric`` as SQLite would return it: an int when whole, else a float."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        if "." in text or "e" in text.lower() or "N" in text:
            return float(text)
        return int(text)


def _configure(conn: psycopg.Connection) -> None:
    conn.adapters.register_loader("numeric", _NumericLoader)
    conn.adapters.register_dumper(int, _IntDumper)


class _IntDumper(IntDumper):
    """Python ints as integer or bigint, never smallint: psycopg sends a small one as
    smallint, and ``:lo + :rows`` of two smallints overflows past 32,767 (a million-row
    import failed so). Not bigint always: substr(), lpad() and their kin take integer."""

    def upgrade(self, obj: int, format: PyFormat) -> Dumper:
        found = super().upgrade(obj, format)
        return self._int4_dumper if found is self._int2_dumper else found


def connect_timeout() -> int:
    """Seconds a new connection may take (CONCORD_PG_CONNECT_TIMEOUT, 1 to 600; default 10).

    Raises:
        ConcordError: the setting is not a whole number of seconds in that range.
    """
    text = os.environ.get("CONCORD_PG_CONNECT_TIMEOUT", "10").strip()
    if not (text.isascii() and text.isdigit() and 1 <= int(text[:4]) <= 600 and len(text) < 4):
        raise ConcordError(f"CONCORD_PG_CONNECT_TIMEOUT={text[:40]!r}: give a whole number "
                           "of seconds from 1 to 600 (default 10)")
    return int(text)


def pool(url: str) -> ConnectionPool:
    """This process's connection pool for ``url`` (made on first use, after one direct
    connection whose error, if any, is the server's own: refused, unknown database,
    password)."""
    with _POOLS_LOCK:
        found = _POOLS.get(url)
        if found is None or found.closed:
            kwargs = {"autocommit": True, "connect_timeout": connect_timeout()}
            _probe(url, kwargs)
            found = ConnectionPool(
                libpq_url(url), min_size=1, max_size=POOL_MAX, open=True, kwargs=kwargs,
                configure=_configure, check=ConnectionPool.check_connection,
                timeout=POOL_TIMEOUT_S, name="concord")
            _POOLS[url] = found
        return found


# A first wait for a pooled connection; past it, a pool that has been failing to reconnect
# (its server was down) is replaced by a fresh one once the server answers again.
FIRST_WAIT_S = 3.0


def checkout(url: str) -> tuple[ConnectionPool, psycopg.Connection]:
    """A connection of this process's pool for ``url`` (and that pool).

    After an outage psycopg_pool retries its lost connections with a growing back-off (1,
    2, 4 … s), so a pool can stay empty for a while after the server is back. When the
    first wait runs out and the pool has failed to connect meanwhile, a direct connection
    tells whether the server is back: then a fresh pool takes over (connections of the old
    one are closed when given back). A pool that is merely busy is waited for
    (:data:`POOL_TIMEOUT_S` in all); it is never multiplied.
    """
    from psycopg_pool import PoolTimeout

    home = pool(url)
    try:
        return home, home.getconn(timeout=FIRST_WAIT_S)
    except PoolTimeout:
        if not home.pop_stats().get("connections_errors"):
            return home, home.getconn(timeout=POOL_TIMEOUT_S - FIRST_WAIT_S)
    with _POOLS_LOCK:
        if _POOLS.get(url) is home:
            del _POOLS[url]
    home.close(timeout=0)
    fresh = pool(url)  # connects once directly first (still down: DatabaseUnavailable)
    return fresh, fresh.getconn(timeout=POOL_TIMEOUT_S - FIRST_WAIT_S)


def _probe(url: str, kwargs: dict[str, Any]) -> None:
    """One direct connection: the server's own error when it cannot be made. For a server
    this process reached before, that is an outage (a restart, a failover): the retryable
    DatabaseUnavailable rather than a configuration error."""
    try:
        psycopg.connect(libpq_url(url), **kwargs).close()
    except psycopg.OperationalError as exc:
        if url not in _ANSWERED:
            raise
        from concord.store.db import DatabaseUnavailable

        raise DatabaseUnavailable(
            "the database cannot be reached (its server may be restarting); nothing was "
            "saved, please try again in a minute") from exc
    _ANSWERED.add(url)


def close_pool(url: str) -> None:
    """Close this process's pool for ``url`` (before its database is dropped)."""
    with _POOLS_LOCK:
        found = _POOLS.pop(url, None)
    if found is not None:
        found.close()


def close_pools() -> None:
    """Close every pool of this process (tests; the app keeps its pool for its life)."""
    with _POOLS_LOCK:
        for found in _POOLS.values():
            found.close()
        _POOLS.clear()


class PgCursor:
    """The part of ``sqlite3.Cursor`` the store uses, over a psycopg cursor."""

    def __init__(self, cursor: psycopg.Cursor) -> None:
        self._cur = cursor

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    @property
    def description(self) -> Any:
        return self._cur.description

    @property
    def lastrowid(self) -> None:
        return None  # PostgreSQL has none: the store writes INSERT … RETURNING id

    def fetchone(self) -> Any:
        return self._cur.fetchone() if self._cur.description else None

    def fetchall(self) -> list[Any]:
        return self._cur.fetchall() if self._cur.description else []

    def fetchmany(self, size: int = 1) -> list[Any]:
        return self._cur.fetchmany(size) if self._cur.description else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class PgConnection:
    """The part of ``sqlite3.Connection`` the store uses (``db.conn``)."""

    def __init__(self, conn: psycopg.Connection, url: str, home: ConnectionPool) -> None:
        self._raw: psycopg.Connection | None = conn
        self.url, self._home = url, home

    @property
    def raw(self) -> psycopg.Connection:
        """The psycopg connection; an error once given back (it may serve another user)."""
        if self._raw is None:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
        return self._raw

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def execute(self, sql: str, params: Sequence[Any] | None = None, *,
                row_factory: Any = None) -> PgCursor:
        raw = self.settled()
        cur = RawCursor(raw, row_factory=row_factory) if row_factory else RawCursor(raw)
        text, names = translate(sql)
        with sqlite_errors():
            cur.execute(text, args_of(names, params))
        return PgCursor(cur)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        cur = RawCursor(self.settled())
        text, names = translate(sql)
        with sqlite_errors():
            cur.executemany(text, [args_of(names, r) or [] for r in rows])
        return PgCursor(cur)

    def command(self, sql: str) -> None:
        """A statement without parameters (BEGIN, COMMIT, SAVEPOINT …), errors translated."""
        raw = self.settled()
        with sqlite_errors():
            raw.execute(sql)

    def settled(self) -> psycopg.Connection:
        """The psycopg connection, with no command of an interrupted call still running.

        A signal handler that raises (a metric run's SIGTERM) can stop a call between
        sending a query and reading its answer; libpq then refuses every later command
        ("another command is already in progress"). The query is cancelled on the server
        and its results read, so an open transaction is left failed (its ROLLBACK works)
        rather than the connection unusable."""
        raw, active = self.raw, psycopg.pq.TransactionStatus.ACTIVE
        if raw.closed or raw.pgconn.transaction_status != active:
            return raw
        # under psycopg's lock: another thread's query in flight is waited for, not cancelled
        with sqlite_errors(), raw.lock:
            if raw.pgconn.transaction_status == active:
                raw.cancel_safe(timeout=5.0)
                while raw.pgconn.get_result() is not None:
                    pass
        return raw

    def rollback(self) -> None:
        """Roll back an open transaction; nothing on a connection the server dropped (its
        transaction is gone with it, and the error that broke it is the one to report)."""
        if self.raw.broken or self.raw.closed:
            return
        self.settled()
        if self.in_transaction:
            self.command("ROLLBACK")

    def commit(self) -> None:
        if self.in_transaction:
            self.command("COMMIT")

    def __enter__(self) -> PgConnection:  # ``with conn:`` as sqlite3: one transaction
        if not self.in_transaction:
            self.command("BEGIN")
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.rollback()

    def close(self) -> None:
        """Give the connection back to its pool (rolled back if left in a transaction);
        a second close does nothing."""
        raw, self._raw = self._raw, None
        if raw is None or raw.closed:
            return
        if self._home.closed:  # the pool went first (its database was dropped)
            raw.close()
            return
        if not raw.broken and raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with contextlib.suppress(psycopg.Error):
                raw.execute("ROLLBACK")
        self._home.putconn(raw)


class PgDatabase(Database):
    """A Concord database on PostgreSQL, with the methods of sqlite-utils' ``Database``
    that the store calls (``execute``, ``query``, ``conn``, ``atomic``, ``close``).
    ``conn`` is the :class:`PgConnection` (typed as sqlite-utils' for its callers);
    ``pg`` is the same object, typed as what it is."""

    engine = "postgresql"

    def __init__(self, url: str) -> None:
        self.url = url
        home, raw = checkout(url)
        self.pg = PgConnection(raw, url, home)
        self.conn = self.pg  # type: ignore[assignment]
        self._savepoints = 0

    def execute(self, sql: str, parameters: Any = None) -> Any:
        return self.pg.execute(sql, parameters)

    def query(self, sql: str, params: Any = None) -> Generator[dict[str, Any], None, None]:
        yield from self.pg.execute(sql, params, row_factory=dict_row).fetchall()

    @contextlib.contextmanager
    def atomic(self) -> Iterator[PgDatabase]:
        """A savepoint inside the caller's transaction."""
        self._savepoints += 1
        name = f"concord_sp{self._savepoints}"
        self.pg.command(f"SAVEPOINT {name}")
        try:
            yield self
        except BaseException:
            self.pg.command(f"ROLLBACK TO SAVEPOINT {name}")
            raise
        finally:
            self._savepoints -= 1
        self.pg.command(f"RELEASE SAVEPOINT {name}")

    def table_names(self, fts4: bool = False, fts5: bool = False) -> list[str]:
        from concord.store.catalog import PG_TABLES

        return [r[0] for r in self.pg.execute(PG_TABLES)]

    def close(self) -> None:
        self.pg.close()
