"""Guards on the project's shape: pages registered, no torch in the app, tidy modules."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from tests.helpers import ROOT


def test_every_page_is_registered_in_app():
    # app.py lists every page (its page table) and calls st.navigation itself.
    app = (ROOT / "app.py").read_text()
    assert "st.navigation(" in app
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


def _concord_imports(path):
    """Every ``concord...`` / ``evaluators...`` module a file imports (``from concord import
    x`` counts as ``concord.x``), with its line."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = ([f"{node.module}.{a.name}" for a in node.names]
                     if node.module == "concord" else [node.module])
        else:
            continue
        for name in names:
            if name.split(".")[0] in {"concord", "evaluators"}:
                yield node.lineno, name


# What the app process's code (app.py, pages/, concord/ui/) may import from Concord: the
# use cases and plain value modules, never the store, the statistics, the importers, the
# CLI or the evaluators.
APP_MAY_IMPORT = {"concord.services", "concord.ui", "concord.errors", "concord.config",
                  "concord.export", "concord.rubrics", "concord.names", "concord.plan",
                  "concord.questionnaire", "concord.devices"}
# What the statistics may not import: they are pure functions over frames.
STATS_MAY_NOT_IMPORT = {"concord.store", "concord.services", "concord.ui", "concord.cli",
                        "concord.importers", "evaluators"}


def _layer(name: str) -> str:
    return ".".join(name.split(".")[:2])


def test_app_pages_and_ui_go_through_services():
    files = [ROOT / "app.py", *(ROOT / "pages").glob("*.py"),
             *(ROOT / "concord" / "ui").rglob("*.py")]
    bad = [f"{path.relative_to(ROOT)}:{line} imports {name}" for path in files
           for line, name in _concord_imports(path) if _layer(name) not in APP_MAY_IMPORT]
    assert bad == []


def test_stats_import_no_store_services_or_streamlit():
    bad = [f"{path.relative_to(ROOT)}:{line} imports {name}"
           for path in (ROOT / "concord" / "stats").rglob("*.py")
           for line, name in _concord_imports(path) if _layer(name) in STATS_MAY_NOT_IMPORT]
    assert bad == []


def test_the_layer_check_sees_a_violation(tmp_path):
    page = tmp_path / "page.py"
    page.write_text("from concord.store import studies\nfrom concord import stats\n"
                    "import evaluators.registry\nfrom concord.services import report\n")
    assert [_layer(n) for _, n in _concord_imports(page)] == [
        "concord.store", "concord.stats", "evaluators.registry", "concord.services"]
