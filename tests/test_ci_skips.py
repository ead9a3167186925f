"""With CI=true, a test that would skip for want of ../shared, Chromium or PostgreSQL fails
instead."""

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

@pytest.mark.postgres
def test_marked_postgres():
    pytest.skip("no server")

def test_needs_the_pg_programs():
    from tests.support.pg_server import MISSING_REASON
    pytest.skip(MISSING_REASON)

@pytest.fixture
def pg_server():
    pytest.skip("the server is gone")

def test_uses_the_pg_server(pg_server):
    pass

def test_skips_for_another_reason():
    pytest.skip("a GPU is present")
'''


# A skip in a fixture's setup that CI=true turns into a failure counts as an error.
@pytest.mark.parametrize(("ci", "expected"), [("true", "4 failed, 1 skipped, 1 error"),
                                              ("", "6 skipped")])
def test_ci_turns_missing_data_skips_into_failures(tmp_path, ci, expected):
    (tmp_path / "test_cases.py").write_text(CASES)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "tests.conftest", "-W", "ignore::pytest.PytestUnknownMarkWarning",
                          str(tmp_path / "test_cases.py")], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert expected in out.stdout, out.stdout
