"""Validating a rubric whose checklist has many derivation rules that can never apply.

Each rubric has one criterion with 12 conditions (4,096 combinations of ticks) and N rules
that ask for a condition both ticked and not, before the catch-all rule: the worst case of
the check that every rule applies first somewhere. The table times, interleaved per
repetition, the coverage check tried combination by combination for every rule (the check
before this bench, rewritten here as the reference) and the bitset check Concord runs now
(concord.rubrics.checklist_checks), with their ratio; then `validate-rubrics` on the whole
file (YAML parsing included), as a ratio to validating the repository's rubrics/ folder.
Re-run: `.venv/bin/python bench/bench_rubrics.py [--rules 250 500 1000] [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from concord.rubrics import checklist_checks, parse, validate_rubrics  # noqa: E402
from concord.rubrics.checklist import Rule, combinations  # noqa: E402
from tests.rubric_helpers import checklist_rubric  # noqa: E402


class _Count:
    def __init__(self) -> None:
        self.n = 0

    def add(self, key: str, message: str) -> None:
        self.n += 1


def per_combination(own: list[str], rules: list[Rule]) -> int:
    """The former check: for every combination, the first rule that applies."""
    fired = [False] * len(rules)
    for ticked in combinations(tuple(own)):
        first = next((i for i, rule in enumerate(rules) if rule.applies(ticked)), None)
        if first is not None:
            fired[first] = True
    return fired.count(False)


def bitsets(own: list[str], rules: list[Rule]) -> int:
    out = _Count()
    checklist_checks._coverage(out, "derive", own, rules)
    return out.n


def _rules(path: Path) -> tuple[list[str], list[Rule]]:
    entry = parse(path)["checklist"]["OK"]
    own = [c["id"] for c in entry["conditions"]]
    return own, [Rule(r["value"], **{k: tuple(v) for k, v in r.get("when", {}).items()})
                 for r in entry["derive"]]


def _time(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", type=int, nargs="+", default=[250, 500, 1000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'rules':>6} {'per combination s':>18} {'bitsets s':>10} {'ratio':>8}")
        for n in args.rules:
            own, rules = _rules(checklist_rubric(Path(tmp) / f"r{n}", "many", never=n))
            old, new = [], []
            for _ in range(args.repeat):  # interleaved: the machine's noise hits both
                t, dead_old = _time(per_combination, own, rules)
                old.append(t)
                t, dead_new = _time(bitsets, own, rules)
                new.append(t)
                assert dead_old == dead_new == n, (dead_old, dead_new)
            o, w = statistics.median(old), statistics.median(new)
            print(f"{n:>6,} {o:>18.3f} {w:>10.5f} {o / w:>8,.0f}")
        print(f"\n{'validate-rubrics on':>34} {'s':>7} {'x rubrics/':>11}")
        folders = {f"{n:,} never-applying rules": checklist_rubric(
            Path(tmp) / f"v{n}", "many", never=n).parent for n in (4000, 8500)}
        base, found = [], {name: [] for name in folders}
        for _ in range(args.repeat):
            base.append(_time(validate_rubrics, ROOT / "rubrics")[0])
            for name, folder in folders.items():
                found[name].append(_time(validate_rubrics, folder)[0])
        b = statistics.median(base)
        print(f"{'the repository rubrics/ (baseline)':>34} {b:>7.3f} {1:>11.1f}")
        for name, times in found.items():
            t = statistics.median(times)
            print(f"{name:>34} {t:>7.3f} {t / b:>11.1f}")


if __name__ == "__main__":
    main()
