"""Process-wide tuning of the app server (one Streamlit process serves many raters)."""

from __future__ import annotations

import gc
import sys
import threading

_LOCK = threading.Lock()
_modules_frozen = 0


def freeze_long_lived() -> None:
    """Put every object alive now into the garbage collector's permanent generation, once
    the modules of a page are imported (again when a page imports more: a researcher's
    dashboard loads scipy).

    Why: Streamlit runs a full collection, ``gc.collect(2)``, after every script run
    (``runner.postScriptGC``), and with pandas and the app imported that walk over every
    module, class and function was about two thirds of the app's CPU per submit
    (bench/bench_submit_cpu.py, docs/benchmarks.md). Frozen objects are still freed by
    reference counting; only reference cycles among them are never collected, and nearly
    all of them live as long as the process. Garbage is collected first, so none is kept.
    """
    global _modules_frozen
    if len(sys.modules) == _modules_frozen:
        return
    with _LOCK:
        if len(sys.modules) == _modules_frozen:
            return
        gc.collect()
        gc.freeze()
        _modules_frozen = len(sys.modules)
