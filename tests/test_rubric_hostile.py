"""validate-rubrics on hostile folders (symlink loops, a pipe as --dir) and on checklists
with thousands of rules: one clear line each, and work that grows with the rules, not
with rules x combinations of ticks."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from concord.cli import main
from concord.rubrics import checklist_checks, validate_rubrics
from concord.rubrics.checklist import CLAUSES, Rule, combinations
from tests.helpers import ROOT
from tests.rubric_helpers import checklist_rubric


def _validate(capsys, folder) -> tuple[int, list[str]]:
    code = main(["validate-rubrics", "--dir", str(folder)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip().splitlines()


def test_a_symlink_loop_among_the_rubrics_is_one_problem(capsys, tmp_path):
    folder = tmp_path / "rubrics"
    shutil.copytree(ROOT / "rubrics", folder)
    (folder / "loop.yaml").symlink_to(folder / "loop.yaml")
    code, lines = _validate(capsys, folder)
    assert code == 1
    assert lines == [f"{folder / 'loop.yaml'}: cannot be read: Too many levels of symbolic "
                     "links", "1 problem(s)"]


@pytest.mark.parametrize("kind", ["loop", "fifo", "missing"])
def test_a_rubrics_dir_that_is_a_loop_a_pipe_or_missing_is_one_line(capsys, tmp_path, kind):
    folder = tmp_path / "rubrics"
    if kind == "loop":
        folder.symlink_to(folder)
    elif kind == "fifo":
        os.mkfifo(folder)
    code, lines = _validate(capsys, folder)
    assert code == 1
    assert len(lines) == 1
    assert lines[0].startswith(f"error: rubrics directory {'' if kind == 'loop' else 'not '}")
    assert str(folder) in lines[0]
    if kind == "loop":
        assert lines[0].endswith("cannot be read: Too many levels of symbolic links")


def test_more_rules_than_combinations_of_ticks_is_one_problem(tmp_path):
    checklist_rubric(tmp_path, "many", never=8500)
    [problem] = validate_rubrics(tmp_path)
    assert problem.key == "checklist.OK.derive"
    assert "8,501 rules for 12 conditions: at most 4,096" in problem.message


def test_rules_that_never_apply_are_found_without_trying_each_combination(tmp_path,
                                                                         monkeypatch):
    """300 dead rules before the catch-all, 4,096 combinations: tried one by one, that is
    1.2 million rule checks; on bitsets, none."""
    calls = []
    applies = Rule.applies
    monkeypatch.setattr(Rule, "applies", lambda self, t: calls.append(1) or applies(self, t))
    checklist_rubric(tmp_path, "dead", never=300)
    problems = validate_rubrics(tmp_path)
    assert [p.key for p in problems] == [f"checklist.OK.derive[{i}]" for i in range(300)]
    assert len(calls) < 4096  # fewer than one check per combination of ticks


class _Collect(list):
    def add(self, key: str, message: str) -> None:
        self.append((key, message))


def _reference(own: list[str], rules: list[Rule]) -> tuple[list[int], int, list[str] | None]:
    """Combination by combination: the rules never first, the combinations without one."""
    fired, missing = set(), []
    for ticked in combinations(tuple(own)):
        first = next((i for i, r in enumerate(rules) if r.applies(ticked)), None)
        if first is None:
            missing.append(sorted(ticked))
        else:
            fired.add(first)
    return ([i for i in range(len(rules)) if i not in fired], len(missing),
            missing[0] if missing else None)


@pytest.mark.parametrize("seed", range(40))
def test_the_bitset_coverage_agrees_with_trying_every_combination(seed):
    rng = random.Random(seed)
    own = [f"c{j}" for j in range(rng.randint(1, 6))]
    rules = []
    for _ in range(rng.randint(1, 12)):
        when = {clause: tuple(rng.sample(own, rng.randint(1, len(own))))
                for clause in CLAUSES if rng.random() < 0.35}
        rules.append(Rule(rng.choice([0, 1]), **when))
    out = _Collect()
    checklist_checks._coverage(out, "d", own, rules)
    dead, n_missing, example = _reference(own, rules)
    assert [k for k, _ in out if k != "d"] == [f"d[{i}]" for i in dead]
    gaps = [m for k, m in out if k == "d"]
    if n_missing:
        assert gaps == [f"no rule gives a value in {n_missing} of {2 ** len(own)} cases "
                        f"(e.g. ticked: {example or 'nothing'}); end with a rule without when"]
    else:
        assert gaps == []
