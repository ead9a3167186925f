"""The store's SQL as PostgreSQL takes it: placeholders and the import stage's schema.

The store writes sqlite3's placeholders (``?``, ``:name``) and SQLite's schema names for a
connection's databases (``main.``, and ``stage.`` for an import's attached stage); psycopg's
raw cursor takes PostgreSQL's numbered ``$1, $2, …``. Everything inside quotes is left as
written. Translations are cached per query text (the store's queries are a few hundred).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any


@functools.lru_cache(maxsize=4096)
def translate(sql: str) -> tuple[str, tuple[str, ...]]:
    """``sql`` as PostgreSQL takes it, and the names of its ``:name`` placeholders in order.

    Outside quotes: ``?`` becomes ``$1, $2, …`` in order and ``:name`` one ``$n`` per name;
    the two schema names SQLite gives a connection's databases become PostgreSQL's: ``main.``
    (the database itself) is dropped and ``stage.`` (an import's private attached database,
    concord.store.imports.staging) is the session's own temporary schema ``pg_temp``.
    """
    out: list[str] = []
    names: list[str] = []
    n = 0
    for quoted, part in _parts(sql):
        if quoted:
            out.append(part)
            continue
        part = _SCHEMAS.sub(lambda m: _SCHEMA_NAMES[m.group(1).lower()], part)
        part = _INDEX_IN_STAGE.sub(r"\1", part).replace(" WITHOUT ROWID", "")
        for piece in _PLACEHOLDER.split(part):
            if piece == "?":
                n += 1
                piece = f"${n}"
            elif piece.startswith(":") and not piece.startswith("::") and len(piece) > 1:
                if piece[1:] not in names:
                    names.append(piece[1:])
                piece = f"${names.index(piece[1:]) + 1}"
            out.append(piece)
    return "".join(out), tuple(names)


_PLACEHOLDER = re.compile(r"(\?|::|:[A-Za-z_][A-Za-z0-9_]*)")
_SCHEMAS = re.compile(r"(?<![\w.$])(main|stage)\.(?=[A-Za-z_\"])", re.IGNORECASE)
_SCHEMA_NAMES = {"main": "", "stage": "pg_temp."}
# PostgreSQL puts an index in its table's schema and refuses a schema in its name.
_INDEX_IN_STAGE = re.compile(r"(INDEX\s+)pg_temp\.", re.IGNORECASE)


def _parts(sql: str) -> Iterator[tuple[bool, str]]:
    """``sql`` cut into (quoted, text) runs: '…' literals and "…" names are quoted."""
    start, quote = 0, ""
    for i, ch in enumerate(sql):
        if quote:
            if ch == quote:
                yield True, sql[start:i + 1]
                start, quote = i + 1, ""
        elif ch in ("'", '"'):
            if i > start:
                yield False, sql[start:i]
            start, quote = i, ch
    if start < len(sql):
        yield bool(quote), sql[start:]


def args_of(names: tuple[str, ...], params: Any) -> list[Any] | None:
    if params is None:
        return None
    if names:
        return [params[name] for name in names]
    return list(params)
