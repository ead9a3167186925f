"""The app server's garbage-collector tuning (concord.ui.runtime)."""

from __future__ import annotations

import gc
import sys
import types
import weakref

import pytest

from concord.ui import runtime


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


@pytest.fixture
def fresh(monkeypatch):
    """Each test starts as a new process would, and leaves nothing frozen behind."""
    monkeypatch.setattr(runtime, "_modules_frozen", 0)
    monkeypatch.setattr(runtime, "_runs", 0)
    gc.unfreeze()
    yield
    gc.unfreeze()


def _import_a_module(monkeypatch, name: str) -> None:
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))


def test_freezes_what_is_alive_once_modules_are_imported(fresh):
    runtime.freeze_long_lived()
    assert gc.get_freeze_count() > 0


def test_garbage_is_collected_before_the_freeze(fresh):
    node = _Node()
    gone = weakref.ref(node)
    del node  # unreachable, but kept alive by its own cycle until a collection
    assert gone() is not None
    runtime.freeze_long_lived()
    assert gone() is None


def test_no_new_freeze_until_a_page_imports_more(fresh, monkeypatch):
    runtime.freeze_long_lived()
    frozen = gc.get_freeze_count()
    kept = [_Node() for _ in range(100)]  # objects of a rater's run, not of a module
    runtime.freeze_long_lived()
    assert gc.get_freeze_count() == frozen
    _import_a_module(monkeypatch, "concord_test_runtime_new_module")
    runtime.freeze_long_lived()
    assert gc.get_freeze_count() >= frozen + len(kept)


def test_the_renewal_collects_cycles_that_ended_after_a_freeze(fresh, monkeypatch):
    monkeypatch.setattr(runtime, "REFREEZE_EVERY", 3)
    node = _Node()  # alive at the freeze, like a rater's session
    runtime.freeze_long_lived()
    gone = weakref.ref(node)
    del node  # the session ended: its cycle is garbage, but frozen
    gc.collect()
    assert gone() is not None  # Streamlit's collection after a run cannot free it
    runtime.freeze_long_lived()
    runtime.freeze_long_lived()
    assert gone() is not None
    runtime.freeze_long_lived()  # the third run since the freeze renews it
    assert gone() is None
    assert gc.get_freeze_count() > 0
