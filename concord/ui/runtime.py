"""Process-wide tuning of the app server (one Streamlit process serves many raters)."""

from __future__ import annotations

import gc
import sys
import threading

# Page runs between two renewals of the freeze: a full collection (tens of milliseconds)
# once per that many runs, a small fraction of a millisecond a run.
REFREEZE_EVERY = 2_000

_LOCK = threading.Lock()
_modules_frozen = 0
_runs = 0


def freeze_long_lived() -> None:
    """Put every object alive now into the garbage collector's permanent generation, once
    the modules of a page are imported (again when a page imports more: a researcher's
    dashboard loads scipy), and renew it every ``REFREEZE_EVERY`` page runs.

    Why: Streamlit runs a full collection, ``gc.collect(2)``, after every script run
    (``runner.postScriptGC``), and with pandas and the app imported that walk over every
    module, class and function was about three quarters of the app's CPU per submit
    (bench/bench_submit_cpu.py, docs/scale.md). Frozen objects are still freed by
    reference counting; only reference cycles among them are not collected. Garbage is
    collected before each freeze, so none is kept; the renewal unfreezes first, so the
    cycles of sessions that were alive at a freeze and have ended since are collected then
    (without it each freeze would keep them for the life of the process).
    """
    global _modules_frozen, _runs
    _runs += 1  # a lost increment between threads only delays a renewal
    if len(sys.modules) == _modules_frozen and _runs < REFREEZE_EVERY:
        return
    with _LOCK:
        if len(sys.modules) == _modules_frozen and _runs < REFREEZE_EVERY:
            return
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _modules_frozen, _runs = len(sys.modules), 0
