"""``concord.stats`` loads a statistic's module on first use: every public name still
resolves to its function, and a pandas-free module imports without pandas or scipy."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import types

import pytest

import concord.stats
from tests.helpers import ROOT

SUBMODULES = {m.name for m in pkgutil.iter_modules(concord.stats.__path__)}


@pytest.mark.parametrize("name", concord.stats.__all__)
def test_each_public_name_is_its_modules_object_not_a_module(name):
    value = getattr(concord.stats, name)
    assert not isinstance(value, types.ModuleType)
    assert name not in SUBMODULES  # a submodule of that name would shadow it once imported
    assert value.__module__.startswith("concord.stats.")


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no_such_statistic"):
        _ = concord.stats.no_such_statistic


def test_the_quality_thresholds_import_without_pandas_or_scipy():
    code = ("import sys; from concord.stats.thresholds import QualityThresholds; "
            "QualityThresholds.from_settings({'min_items': 3}); "
            "print(sorted({'pandas', 'numpy', 'scipy'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.strip() == "[]"
