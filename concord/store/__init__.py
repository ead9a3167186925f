"""All SQL of Concord lives in this package (sqlite-utils over one SQLite file).

Modules: ``db`` (open, transaction), ``migrations`` (schema), ``studies`` (import targets),
``raters``, ``work`` (assignments, skips, flags), ``ratings`` (ratings and rankings),
``pairs`` (pairs and pairwise judgments),
``items`` (display reads), ``scores`` (metric scores), ``frames`` (tidy DataFrames),
``report_cache`` (stored reports and the database's fingerprint); packages ``imports``
(import batches and the staging of ratings, labels and scores) and ``crowd`` (study
links, participants, onboarding).
"""

from concord.store.db import open_db, transaction

__all__ = ["open_db", "transaction"]
