"""bench/bench_evaluators.py's agreement check can fail: a path read one position early is
caught on every pair, in a normalised quantity (log P, the yes/no ratio), with a relative
tolerance; the correct paths pass it."""

from __future__ import annotations

import sys

import pytest
import torch

from bench import bench_evaluators as bench

SMALL = ["--widths", "tiny", "--sizes", "64", "--images", "2", "--rounds", "2",
         "--loop-pairs", "3"]


def _run(monkeypatch, capsys, *extra):
    monkeypatch.setattr(sys, "argv", ["bench_evaluators.py", *SMALL, *extra])
    code = bench.main()
    return code, capsys.readouterr().out


def test_every_path_agrees_and_is_timed_interleaved(monkeypatch, capsys):
    code, out = _run(monkeypatch, capsys)
    assert code == 0, out
    assert "scores agree with the naive pass on every pair" in out
    for key in bench.PATHS:
        assert bench.PATHS[key][0] in out
    assert "28 layers" in out  # the FLOP table: what the 2-layer ratios predict


@pytest.mark.parametrize("path", ["naive-last", "generate", "batched", "shared"])
def test_a_path_read_one_position_early_fails_the_check(monkeypatch, capsys, path):
    code, out = _run(monkeypatch, capsys, "--paths", f"naive,{path}", "--misread", path)
    assert code == 1
    assert "scores DISAGREE" in out


def test_the_check_compares_a_normalised_quantity_not_tiny_probabilities():
    """P(Yes) over 152k tokens is ~7e-6 for a random model: an absolute tolerance of 1e-4
    on it passes any path. The check compares log-probabilities and the yes/no ratio."""
    ref = torch.log(torch.tensor([[7e-6, 6e-6], [5e-6, 8e-6]], dtype=torch.float64))
    swapped = ref.flip(1)  # a path that read the wrong token's probabilities
    assert (swapped.exp() - ref.exp()).abs().max() < 1e-4  # the old check would pass
    assert bench.disagreement(swapped, ref) > 0.1
    assert bench.disagreement(ref * (1 + 1e-7), ref) < 1e-4
