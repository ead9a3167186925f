"""With CI=true, a test that would skip for want of ../shared or Chromium fails instead."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

CASES = '''
import pytest

@pytest.mark.shared
def test_needs_shared():
    pytest.skip("no data")

def test_needs_the_shared_path():
    from tests.helpers import SHARED_REASON
    pytest.skip(f"{SHARED_REASON}: somewhere")

def test_skips_for_another_reason():
    pytest.skip("a GPU is present")
'''


@pytest.mark.parametrize(("ci", "expected"), [("true", "2 failed, 1 skipped"),
                                              ("", "3 skipped")])
def test_ci_turns_missing_data_skips_into_failures(tmp_path, ci, expected):
    (tmp_path / "test_cases.py").write_text(CASES)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "tests.conftest", "-W", "ignore::pytest.PytestUnknownMarkWarning",
                          str(tmp_path / "test_cases.py")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert expected in out.stdout, out.stdout
