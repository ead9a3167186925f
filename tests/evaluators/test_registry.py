"""The registry: names, lazy imports, helpful errors, and no torch in the app process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evaluators.base import Evaluator
from evaluators.registry import (
    EVALUATORS,
    UnknownEvaluatorError,
    create_evaluator,
    evaluator_class,
    higher_is_better,
    list_evaluators,
    metric_info,
)

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parents[1]


def test_list_evaluators_is_sorted_and_complete():
    names = list_evaluators()
    assert names == sorted(EVALUATORS)
    assert {"vqascore", "paircomp", "geneval2-vqascore", "geneval2-tifa", "soft-tifa", "tiif",
            "gned", "consistency"} <= set(names)


@pytest.mark.parametrize("name", sorted(EVALUATORS))
def test_every_entry_imports_and_declares_its_metadata(name):
    cls = evaluator_class(name)
    assert cls.name == name
    for attr in ("higher_is_better", "needs_judge", "has_questions"):
        assert isinstance(getattr(cls, attr), bool)
    assert hasattr(cls, "default_model")


@pytest.mark.parametrize("name", sorted(EVALUATORS))
def test_every_entry_carries_its_class_attributes_as_data(name):
    info = metric_info(name)
    cls = info.load_class()
    assert (info.name, info.higher_is_better, info.needs_judge, info.has_questions,
            info.default_model) == (cls.name, cls.higher_is_better, cls.needs_judge,
                                    cls.has_questions, cls.default_model)
    first_line = (cls.__doc__ or "").strip().splitlines()[0]
    assert info.about.split(":")[0] == first_line.split(":")[0]  # the same metric


def test_the_app_reads_the_catalog_in_process(monkeypatch):
    """No child process (it took 0.4-0.5 s per server process): the registry's data."""
    from concord.services.metrics import runs as metric_runs

    def no_child(*args, **kwargs):
        raise AssertionError(f"a child process was started: {args}")

    monkeypatch.setattr(subprocess, "run", no_child)
    monkeypatch.setattr(subprocess, "Popen", no_child)
    catalog = metric_runs.metric_catalog()
    assert [m.name for m in catalog] == list_evaluators()
    assert {m.name: m.higher_is_better for m in catalog}["gned"] is False
    assert metric_runs.higher_is_better("gned") is False


@pytest.mark.parametrize("name", sorted(EVALUATORS))
def test_every_entry_has_its_own_test_file(name):
    assert (TESTS / f"test_{name.replace('-', '_')}.py").is_file()


def test_unknown_name_suggests_close_names_and_lists_all():
    with pytest.raises(UnknownEvaluatorError) as info:
        evaluator_class("vqascor")
    message = str(info.value)
    assert "did you mean 'vqascore'" in message
    assert "valid metrics: consistency, geneval2-tifa, geneval2-vqascore, gned" in message
    assert isinstance(info.value, KeyError)


def test_unknown_name_without_close_match_still_lists_names():
    with pytest.raises(UnknownEvaluatorError, match="unknown metric 'zzz'; valid metrics: "):
        create_evaluator("zzz")


def test_created_evaluators_meet_the_protocol():
    from evaluators.gned import GNED

    evaluator = create_evaluator("gned", ocr=lambda image: [])
    assert isinstance(evaluator, GNED)
    assert isinstance(evaluator, Evaluator)
    assert evaluator.judge == ""


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(sorted(sys.modules))"],
                         cwd=REPO, capture_output=True, text=True, check=True, timeout=120)
    return set(eval(out.stdout.strip().splitlines()[-1]))


def test_importing_the_package_and_registry_loads_no_torch():
    modules = _modules_after("import evaluators, evaluators.registry")
    assert "torch" not in modules
    assert "transformers" not in modules


def test_listing_metric_classes_loads_no_torch():
    # the app may show each metric's direction; the classes must come without torch
    code = ("from evaluators.registry import EVALUATORS, evaluator_class\n"
            "[evaluator_class(n).higher_is_better for n in EVALUATORS]")
    modules = _modules_after(code)
    assert "torch" not in modules
    assert "transformers" not in modules


def test_metric_classes_load_without_the_metrics_packages():
    # `make run` installs requirements.txt only; the stats still need every direction
    code = ("import sys\n"
            "for m in ('torch', 'transformers', 'rapidocr', 'onnxruntime', 'rapidfuzz'):\n"
            "    sys.modules[m] = None\n"
            "from evaluators.registry import EVALUATORS, evaluator_class, higher_is_better\n"
            "[evaluator_class(n) for n in EVALUATORS]\n"
            "print({n: higher_is_better(n) for n in EVALUATORS})")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True, timeout=120)
    assert eval(out.stdout.strip().splitlines()[-1])["gned"] is False


def test_the_app_learns_each_direction_from_the_classes():
    """The report's directions: the classes in the CLI, the metric catalog in the app."""
    from concord.services.metrics import runs as metric_runs

    for name in EVALUATORS:
        expected = evaluator_class(name).higher_is_better
        assert higher_is_better(name) is expected
        assert metric_runs.higher_is_better(name) is expected
    assert higher_is_better("my-own-metric") is True
    assert metric_runs.higher_is_better("my-own-metric") is True


def test_torch_is_imported_only_in_evaluators():
    """README: torch (and transformers) are imported only under evaluators/."""
    import ast

    sources = [*(REPO / "concord").rglob("*.py"), *(REPO / "pages").rglob("*.py"),
               REPO / "app.py"]
    found = []
    for path in sources:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        found += [f"{path.relative_to(REPO)}: {m}" for m in names
                  if m.split(".")[0] in ("torch", "transformers")]
    assert found == []


def test_without_torch_the_evaluator_tests_skip_with_the_reason():
    """Where requirements-metrics.txt is not installed, collecting tests/evaluators skips
    every module that needs torch (saying so) instead of failing to import it."""
    code = ("import sys\n"
            "for m in ('torch', 'transformers'):\n"
            "    sys.modules[m] = None  # what `import torch` sees when it is absent\n"
            "import pytest\n"
            "sys.exit(pytest.main(['--co', '-q', '-rs', '-p', 'no:cacheprovider', "
            "'tests/evaluators']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "error" not in out.stdout.lower()
    skipped = [line for line in out.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skipped and all("needs the metrics packages (torch, transformers not installed): "
                           "pip install -r requirements-metrics.txt" in s for s in skipped)
