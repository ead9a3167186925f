"""Peak memory of reading and importing a Label Studio JSON export, by file size.

Synthetic exports shaped like Label Studio's own (every task with its ids, timestamps,
drafts, predictions and three annotations of SC and PR choices) are written at each size,
and "dense" ones whose tasks also carry 3,000 empty draft objects each (what costs most
memory per byte when a document is parsed whole);
each is then read (every chunk of rows of ``concord.importers.label_studio.read_chunks``)
and imported (``import_ratings`` into a new study) in a fresh process that reports
its peak resident memory. The floor is a process that imports the same modules and reads
nothing; the table shows each peak above it, and as a multiple of the file size.
Re-run: `.venv/bin/python bench/bench_label_studio.py [--sizes 30 120] [--read-only]`.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MIB = 1 << 20


def task(i: int) -> dict:
    """One task as Label Studio exports it (three raters, SC and PR as choices)."""
    stamp = "2025-03-04T10:11:12.123456Z"
    anns = [{
        "id": 3 * i + r, "completed_by": {"id": r + 1, "email": f"rater{r}@lab.example",
                                          "first_name": "", "last_name": ""},
        "result": [{"value": {"choices": [f"{(i + r + k) % 3 / 2:g}"]}, "id": f"r{i}x{r}{k}",
                    "from_name": crit, "to_name": "image", "type": "choices",
                    "origin": "manual"} for k, crit in enumerate(("SC", "PR"))],
        "was_cancelled": False, "ground_truth": False, "created_at": stamp,
        "updated_at": stamp, "draft_created_at": None, "lead_time": 12.5 + r, "prediction": {},
        "result_count": 0, "unique_id": f"{i:08x}-{r:04x}-4bcd-9ef0-123456789abc",
        "import_id": None, "last_action": None, "task": i, "project": 1, "updated_by": r + 1,
        "parent_prediction": None, "parent_annotation": None, "last_created_by": None,
    } for r in range(3)]
    return {"id": i, "annotations": anns, "drafts": [], "predictions": [],
            "data": {"image": f"/data/local-files/?d=images/m{i % 4}/p{i // 4}.png",
                     "prompt": f"a photo of object {i // 4} on a wooden table, studio light",
                     "prompt_id": f"p{i // 4}", "model": f"m{i % 4}", "sample": 0},
            "meta": {}, "created_at": stamp, "updated_at": stamp, "inner_id": i + 1,
            "total_annotations": 3, "cancelled_annotations": 0, "total_predictions": 0,
            "comment_count": 0, "unresolved_comment_count": 0, "last_comment_updated_at": None,
            "project": 1, "updated_by": 1, "comment_authors": [], "file_upload": "tasks.json"}


def write_export(path: Path, mib: float, kind: str) -> int:
    """A JSON array of tasks of about ``mib`` MiB (one task per line); returns the tasks."""
    n = 0
    with path.open("w", encoding="utf-8") as out:
        out.write("[\n")
        while out.tell() < mib * MIB:
            one = task(n)
            if kind == "dense":
                one["drafts"] = [{}] * 3000
            out.write(("" if n == 0 else ",\n") + json.dumps(one))
            n += 1
        out.write("\n]\n")
    return n


CHILD = """
import resource, sys, tempfile
from collections import Counter
from pathlib import Path
sys.path.insert(0, {root!r})
from concord.errors import ProblemLog
from concord.importers import label_studio
from concord.services import labels
from concord.services.imports.ratings import import_ratings
from concord.store.db import open_db
mode, path = sys.argv[1], Path(sys.argv[2])
if mode == "read":
    log, rows = ProblemLog(), 0
    for chunk in label_studio.read_chunks(path, log, skipped=Counter()):
        rows += len(chunk[0])
    assert not log, log.shown
elif mode == "import":
    with tempfile.TemporaryDirectory() as tmp:
        rows = import_ratings(open_db(Path(tmp) / "c.db"), "ls", "label-studio",
                                     path).rows
else:
    rows = 0
print(rows, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak(mode: str, path: Path) -> tuple[int, float, float]:
    """(rows, peak MiB, seconds) of one run in a fresh process."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT)), mode,
                          str(path)], capture_output=True, text=True, check=True).stdout
    rows, kib = map(int, out.split())
    return rows, kib / 1024, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[30, 120], metavar="MIB")
    ap.add_argument("--kinds", nargs="+", default=["label-studio", "dense"],
                    choices=["label-studio", "dense"])
    ap.add_argument("--read-only", action="store_true", help="skip the full imports")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        floor = peak("floor", Path(tmp))[1]
        print(f"floor (modules loaded, nothing read): {floor:,.0f} MiB\n")
        print(f"{'kind':>12} {'file':>9} {'tasks':>8} {'step':>7} {'rows':>9} "
              f"{'peak MiB':>9} {'above floor':>12} {'x file':>7} {'s':>6}")
        for kind in args.kinds:
            for mib in args.sizes:
                path = Path(tmp) / f"ls-{kind}-{mib:g}.json"
                n = write_export(path, mib, kind)
                size = path.stat().st_size / MIB
                for mode in ("read",) if args.read_only else ("read", "import"):
                    rows, top, secs = peak(mode, path)
                    print(f"{kind:>12} {size:>6.1f}MiB {n:>8,} {mode:>7} {rows:>9,} "
                          f"{top:>9,.0f} {top - floor:>12,.0f} {(top - floor) / size:>7.1f} "
                          f"{secs:>6.1f}")
                path.unlink()
    print(f"\n(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f}"
          " MiB)")


if __name__ == "__main__":
    main()
