"""Where a judge runs: ranks of torchrun/accelerate, --device-map/--max-memory, and a hub that
cannot be reached failing at once instead of after tens of seconds of retries."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from concord.services.metrics.score_request import rank_output
from evaluators import hub
from evaluators.base import ModelLoadError
from evaluators.placement import Ranks, max_memory_for, parse_max_memory, rank_device

REPO = Path(__file__).resolve().parents[2]


def test_ranks_come_from_the_launcher_environment(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert Ranks.from_env() == Ranks(0, 1, 0, 1)
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert Ranks.from_env() == Ranks(3, 4, 1, 2)
    monkeypatch.setenv("RANK", "4")
    with pytest.raises(ModelLoadError, match="RANK=4 WORLD_SIZE=4"):
        Ranks.from_env()
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(ModelLoadError, match="bad torchrun/accelerate environment"):
        Ranks.from_env()


def test_each_rank_gets_its_own_device():
    one = Ranks()
    assert rank_device("cuda:3", one) == "cuda:3" and rank_device("auto", one) == "auto"
    two = Ranks(1, 2, 1, 2)
    assert rank_device("cpu", two) == "cpu"
    import torch

    if torch.cuda.is_available():
        assert rank_device("auto", two) == f"cuda:{1 % torch.cuda.device_count()}"
    else:
        assert rank_device("auto", two) == "cpu"
        with pytest.raises(ModelLoadError, match="no CUDA device"):
            rank_device("cuda", two)


@pytest.mark.parametrize(("text", "expected"), [
    ("75GiB", {"*": "75GiB"}),
    ("0=75GiB, 1=70GB,cpu=200GiB", {"0": "75GiB", "1": "70GB", "cpu": "200GiB"}),
])
def test_max_memory_spec(text, expected):
    assert parse_max_memory(text) == expected


@pytest.mark.parametrize("text", ["", "lots", "0=75", "gpu0=75GiB", "0=-3GiB"])
def test_bad_max_memory_spec_is_named(text):
    with pytest.raises(ValueError, match="--max-memory"):
        parse_max_memory(text)


def test_a_rank_spreads_its_judge_over_its_own_gpus():
    limits = {"*": "70GiB", "cpu": "200GiB"}
    assert max_memory_for(limits, Ranks(), 4) == {0: "70GiB", 1: "70GiB", 2: "70GiB",
                                                  3: "70GiB", "cpu": "200GiB"}
    assert max_memory_for({"0": "10GiB", "1": "20GiB"}, Ranks(), 2) == {0: "10GiB",
                                                                        1: "20GiB"}
    assert max_memory_for(None, Ranks(), 4) is None
    # two ranks on a node of 4 GPUs: rank 1 takes GPUs 2 and 3
    assert max_memory_for(limits, Ranks(1, 2, 1, 2), 4) == {2: "70GiB", 3: "70GiB",
                                                            "cpu": "200GiB"}
    with pytest.raises(ModelLoadError, match="2 processes per node needs at least"):
        max_memory_for(limits, Ranks(1, 2, 1, 2), 1)


def test_each_rank_writes_its_own_score_file():
    assert rank_output(Path("s.jsonl"), Ranks()) == Path("s.jsonl")
    assert rank_output(Path("out/s.jsonl"), Ranks(1, 2, 1, 2)) == Path("out/s.rank1.jsonl")
    assert rank_output(Path("s-{rank}.jsonl"), Ranks(3, 4, 1, 2)) == Path("s-3.jsonl")


def test_hub_probe_gives_up_quickly():
    hub.reachable.cache_clear()
    start = time.monotonic()
    assert hub.reachable("http://127.0.0.1:9", timeout=1.0) is False  # discard port: refused
    assert time.monotonic() - start < 3


def test_unreachable_hub_fails_in_one_line_without_retries(tmp_path, study_maker):
    from concord.store.db import open_db

    db_path = tmp_path / "c.db"
    db = open_db(db_path)
    study_maker(db, tmp_path / "images")
    db.close()
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT="http://127.0.0.1:9", HF_HOME=str(tmp_path / "hf-home"))
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "concord", "--db", str(db_path), "score",
                          "--study", "tiny", "--metric", "vqascore", "--model",
                          "concord-test/not-cached", "--device", "cpu", "--no-progress"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - start
    assert out.returncode == 1, out.stderr
    assert out.stderr.startswith("error: ") and out.stderr.count("\n") == 1, out.stderr
    assert "not found locally and the hub (http://127.0.0.1:9) is unreachable" in out.stderr
    assert elapsed < 40  # imports only; transformers' own retries would add tens of seconds
