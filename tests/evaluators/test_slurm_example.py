"""The Slurm recipe of docs/evaluators.md, run as written: snapshot, two array tasks, merge."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from concord.store.db import open_db

REPO = Path(__file__).resolve().parents[2]


def _blocks() -> list[str]:
    doc = (REPO / "docs" / "evaluators.md").read_text(encoding="utf-8")
    section = doc.split("### Slurm arrays across nodes", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"```bash\n(.*?)```", section, flags=re.S)


def _bash(script: str, cwd: Path, **env: str) -> str:
    full = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO),
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", **env}
    out = subprocess.run(["bash", "-c", script], cwd=cwd, env=full, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_the_documented_slurm_array_scores_and_merges_exactly_once(tmp_path, study_maker,
                                                                   tiny_dirs):
    snapshot_block, sbatch, merge_block = _blocks()
    assert sbatch.startswith("#!/bin/bash\n#SBATCH --array=") or "#SBATCH --array" in sbatch
    shared = tmp_path / "shared"
    shared.mkdir()
    db = open_db(tmp_path / "data" / "concord.db")
    study_maker(db, tmp_path / "images")
    db.close()
    _bash(snapshot_block.replace("/shared/", f"{shared}/"), tmp_path)
    for task in ("0", "1"):
        (tmp_path / "node").mkdir(exist_ok=True)
        _bash(sbatch, tmp_path, SLURM_ARRAY_TASK_ID=task, SLURM_ARRAY_TASK_COUNT="2",
              SLURM_JOB_ID="77", TMPDIR=str(tmp_path / "node"),
              SNAPSHOT=str(shared / "concord-snapshot.db"), MODEL=str(tiny_dirs["qwen2_5_vl"]),
              STUDY="tiny", METRIC="tiif", OUT=str(shared / "scores"))
    assert list((tmp_path / "node").iterdir()) == []  # the local copies are gone
    files = sorted(p.name for p in (shared / "scores").glob("*.jsonl"))
    assert files == ["tiny-tiif-0.jsonl", "tiny-tiif-1.jsonl"]
    merge = merge_block.replace("/shared/", f"{shared}/").replace("--study tiif", "--study tiny")
    out = _bash(merge, tmp_path)
    assert "18 scores read from 2 file(s), 18 stored" in out
    assert "18 scores read from 2 file(s), 0 stored" in _bash(merge, tmp_path)
    db = open_db(tmp_path / "data" / "concord.db")
    rows = db.execute("SELECT COUNT(*), COUNT(DISTINCT image_id) FROM metric_scores"
                      " WHERE metric = 'tiif'").fetchone()
    runs = db.execute("SELECT COUNT(*) FROM runs WHERE status = 'done'").fetchone()[0]
    db.close()
    assert tuple(rows) == (18, 6) and runs == 2
