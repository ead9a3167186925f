"""The examples in the docstrings of ``concord.stats`` run, and print what they say."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import concord.stats

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(concord.stats.__path__,
                                                         prefix="concord.stats."))


def _examples(name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(name)
    return [t for t in doctest.DocTestFinder().find(module) if t.examples]


WITH_EXAMPLES = [name for name in _modules() if _examples(name)]


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_the_examples_of_a_module_run(name):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in _examples(name):
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0 and failed == 0, f"{failed} of {attempted} examples of {name} failed"


def test_the_documented_examples_are_found():
    names = {t.name for m in WITH_EXAMPLES for t in _examples(m)}
    assert {"concord.stats.human.model_scores", "concord.stats.agreement.matrices.kendalls_w",
            "concord.stats.agreement.matrices.krippendorff_alpha",
            "concord.stats.agreement.matrices.fleiss_kappa"} <= names
