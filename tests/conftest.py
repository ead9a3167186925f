"""Shared fixtures: a fresh database, synthetic images and small studies."""

from __future__ import annotations

import os

# No test may reach a model hub: an accidental hub id fails in seconds, not minutes.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from collections.abc import Callable
from pathlib import Path

import pytest

from concord.store.db import open_db
from tests.helpers import (  # noqa: F401 - re-exported for older imports
    ROOT,
    SHARED,
    SHARED_REASON,
    make_folder_study,
    shared_path,
    write_png,
)


@pytest.fixture
def db(tmp_path: Path):
    """A fresh, migrated database file."""
    database = open_db(tmp_path / "concord.db")
    yield database
    database.close()


@pytest.fixture
def study_factory(tmp_path: Path) -> Callable[..., Path]:
    """Build folder studies under tmp_path: ``study_factory("name", prompts=3, ...)``."""
    def build(name: str = "s1", **kw) -> Path:
        return make_folder_study(tmp_path / name, **kw)
    return build
