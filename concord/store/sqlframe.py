"""A query's rows as a pandas DataFrame, on either engine (pandas reads a ``sqlite3``
connection itself; a PostgreSQL one goes through the store's cursor, so that the query's
placeholders and types are those of every other query)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from sqlite_utils import Database

from concord.store import engine


def read_frame(db: Database, sql: str,
               params: Sequence[Any] | Mapping[str, Any] = ()) -> pd.DataFrame:
    """The rows of ``sql`` with its column names, typed as ``pd.read_sql_query`` types
    them (numbers as numbers, everything else as objects; no rows: object columns)."""
    args: Any = dict(params) if isinstance(params, Mapping) else list(params)
    if not engine.is_postgres(db):
        return pd.read_sql_query(sql, db.conn, params=args)
    cursor = db.execute(sql, args)
    columns = [d[0] for d in cursor.description]
    return pd.DataFrame.from_records(cursor.fetchall(), columns=columns, coerce_float=True)
