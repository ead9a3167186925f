"""All SQL of Concord lives in this package (sqlite-utils over one SQLite file).

Modules: ``db`` (open, transaction), ``migrations`` (schema), ``studies`` (import targets),
``raters``, ``work`` (assignments, skips, flags), ``ratings`` (ratings and rankings),
``pairs`` (pairs and pairwise judgments),
``items`` (display reads), ``scores`` (metric scores), ``frames`` (tidy DataFrames).
"""

from concord.store.db import open_db, transaction

__all__ = ["open_db", "transaction"]
