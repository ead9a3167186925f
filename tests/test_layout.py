"""Guards on the project's shape: pages registered, no torch in the app, tidy modules."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from tests.helpers import ROOT


def test_every_page_is_registered_in_app():
    app = (ROOT / "app.py").read_text()
    pages = sorted(p.name for p in (ROOT / "pages").glob("*.py"))
    assert pages, "no pages found"
    missing = [p for p in pages if f'"pages/{p}"' not in app]
    assert missing == []


def test_app_process_never_imports_torch_transformers_or_evaluators(tmp_path):
    """Every page registered in app.py, run through AppTest in a fresh interpreter (the
    dashboard with metric scores, so it needs the metrics' directions)."""
    out = subprocess.run([sys.executable, "-m", "tests.app.app_process_probe", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(seen["registered"]) >= 12
    assert seen["pages"] == seen["registered"]
    assert seen["exceptions"] == {}
    assert seen["loaded"] == []


def test_pages_contain_no_sql():
    for page in (ROOT / "pages").glob("*.py"):
        text = page.read_text().upper()
        for word in ("SELECT ", "INSERT ", "UPDATE ", "DELETE FROM"):
            assert word not in text, f"{page.name} contains SQL ({word.strip()})"


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_sql_lives_in_the_store():
    offenders = []
    for path in (ROOT / "concord").rglob("*.py"):
        if "store" in path.parts:
            continue
        text = path.read_text()
        if ".execute(" in text or ".query(" in text or "executemany(" in text:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_stats_do_no_io_and_no_streamlit():
    for path in (ROOT / "concord" / "stats").rglob("*.py"):
        mods = set(_imports(path))
        assert not {m for m in mods if m.split(".")[0] in {"streamlit", "sqlite3",
                                                           "sqlite_utils"}}, path
        assert "open(" not in path.read_text(), path
