"""Helpers of the long imports: time per phase, and reading without the cyclic GC."""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator


class Timer:
    """Wall and CPU seconds per phase (the benchmark prints them)."""

    def __init__(self) -> None:
        self.seconds: dict[str, tuple[float, float]] = {}

    @contextlib.contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.seconds[phase] = (time.perf_counter() - wall, time.process_time() - cpu)


@contextlib.contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Reading makes millions of short-lived lists and tuples (no cycles); the cyclic
    collector's passes over them made reading three times slower."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
