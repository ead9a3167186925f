"""Study reports served from the database while nothing they depend on has changed.

A report depends on three things, and its cache key covers each:

* the database: its fingerprint (:mod:`concord.store.report_cache`) changes with any row of
  any table, so a new rating, an exclusion or a re-imported score all recompute;
* the options (study, filters, resamples, seed, ...): part of the key;
* the code and the files it reads: the size and modification time of every source file of
  Concord and the evaluators, of every rubric file (the derived criterion comes from the
  rubric's ``combine``), and of numpy, pandas and scipy, plus the Python version. Source
  files are looked at once per process, as Python imports them once: a server started
  before an upgrade keys its reports by the code it runs. Rubric files are looked at on
  every report, and a process parses a rubric again when its file changes
  (``concord.services.labelling.common.rubric``), so both follow an edited rubric.

A report is stored as its compact JSON, compressed; reading it back gives the same text, so
``stats --json`` prints byte for byte what a fresh computation prints.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import zlib
from collections.abc import Callable
from functools import cache
from pathlib import Path

from sqlite_utils import Database

from concord.config import ROOT
from concord.services.report.request import ReportOptions, ReportRequest
from concord.store import report_cache as store

# Folders of the report's code, and of its data (rubrics: the derived criteria).
_SOURCES = ("concord", "evaluators")
_RUBRICS = "rubrics"
_SUFFIXES = (".py", ".yaml", ".yml", ".json", ".js")
_LIBRARIES = ("numpy", "pandas", "scipy", "krippendorff", "sqlite_utils")
# A stored report may expand at most this many times its size (plus _FLOOR bytes).
MAX_RATIO = 200
_FLOOR = 1 << 20
def report_json(db: Database, request: ReportRequest, compute: Callable[[], str],
                *, use_cache: bool = True) -> tuple[str, bool]:
    """The report's JSON text: from the cache when the database, the options and the code
    are those it was computed with, else ``compute()`` (stored for next time).

    Args:
        db: The database.
        request: The study and the options (both part of the key).
        compute: Builds the report and returns its JSON text; called at most once.
        use_cache: False computes without reading or writing the cache.

    Returns:
        ``(text, from_cache)``.
    """
    if not use_cache:
        return compute(), False
    fp = store.fingerprint(db)  # before the data is read: see concord.store.report_cache
    key = cache_key(request.study.name, request.options)
    if fp is not None:
        text = _decoded(store.get(db, key, fp))
        if text is not None:
            return text, True
    text = compute()
    if fp is not None:
        store.put(db, key, fp, zlib.compress(text.encode("utf-8"), 1))
    return text, False


def _decoded(body: bytes | None) -> str | None:
    """The stored text, or None for no entry or one that does not decode (damaged by hand:
    it is computed again and overwritten).

    Decompression stops at :data:`MAX_RATIO` times the stored size (a report's JSON
    compresses about 15 times), so an entry written by hand to expand to gigabytes costs a
    recomputation, not the machine's memory.
    """
    if body is None:
        return None
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(body, MAX_RATIO * len(body) + _FLOOR)
        if inflate.unconsumed_tail or not inflate.eof:
            return None
        return raw.decode("utf-8")
    except (zlib.error, UnicodeDecodeError):
        return None


def cache_key(study_name: str, options: ReportOptions) -> str:
    """The key of one study's report under these options and this code."""
    text = json.dumps({"study": study_name, "options": options.key(),
                       "code": code_fingerprint()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def code_fingerprint() -> str:
    """Changes when a rubric file, a source file (as this process first saw it), a library
    the statistics use, or Python changes (milliseconds: file metadata only)."""
    parts = [sys.version, *_sources(ROOT), *_tree(ROOT / _RUBRICS)]
    parts += [_library(name) for name in _LIBRARIES]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


@cache
def _sources(root: Path) -> tuple[str, ...]:
    """The source folders' files, once per process (modules are imported once)."""
    return tuple(line for folder in _SOURCES for line in _tree(root / folder))


def _tree(folder: Path) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(_SUFFIXES):
                path = os.path.join(dirpath, name)
                try:
                    st = os.stat(path)
                except OSError:  # a dangling link (an editor's lock file), or just deleted
                    found.append(f"{path}:missing")
                    continue
                found.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    return found


@cache
def _library(name: str) -> str:
    """Where a library is installed and when its top module was written (not imported)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return f"{name}:absent"
    st = os.stat(spec.origin)
    return f"{name}:{spec.origin}:{st.st_size}:{st.st_mtime_ns}"
