"""Benchmark of ``import-ratings --format csv``: speed and memory on large files.

Cases, each run in a fresh process (so its peak RSS is its own):

- ``valid``: a valid file of ``--rows`` rows (default 1,000,000: 25,000 prompts × 4 models
  × 5 raters × SC/PR) imported into a new ratings-only study.
- ``again``: the same file imported again into that study (every row compared, nothing
  written).
- ``bad-last``: a large file (default 11,000,000 rows, about 200 MB like the file of
  issue 11) whose last row is bad: how long until the error, and how much memory.
- ``traced``: the valid file once more under tracemalloc (Python heap peak; slower).

Run from the repository root:
    .venv/bin/python bench/bench_ratings_import.py [--rows N] [--bad-rows N]
Prints one table: case, rows, wall s, CPU s, rows/s (wall), peak RSS MB, tracemalloc MB,
and the phases (read / check / write) of each import.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HEADER = "prompt_id,model,rater,criterion,value,sample,seconds\n"


def write_valid(path: Path, rows: int) -> int:
    """Rows of 4 models × 5 raters × SC/PR per prompt, values on the 0/0.5/1 scale."""
    n = 0
    with path.open("w", encoding="utf-8") as f:
        f.write(HEADER)
        p = 0
        while n < rows:
            for m in range(4):
                for r in range(5):
                    for c in ("SC", "PR"):
                        f.write(f"p{p:06d},model{m},rater{r},{c},{(p + m + r) % 3 / 2:g},0,"
                                f"{(p * 7 + r) % 90 / 10:g}\n")
                        n += 1
            p += 1
    return n


def write_bad_last(path: Path, rows: int) -> int:
    """Short rows (about 18 bytes each, as in issue 11), the last one with seconds -3."""
    with path.open("w", encoding="utf-8") as f:
        f.write("prompt_id,model,rater,criterion,value\n")
        block = "".join(f"{{p}},m{m},r{r},{c},1\n" for m in range(4) for r in range(5)
                        for c in ("SC", "PR"))
        for p in range(rows // 40):
            f.write(block.replace("{p}", f"p{p}"))
        f.write("p0,m0,r0,SC,-\n")
    return rows // 40 * 40 + 1


def run_case(case: str, db: Path, path: Path) -> dict:
    """One import in this process; returns its measurements."""
    from concord.errors import InputError
    from concord.services.imports.ratings import import_ratings
    from concord.store.db import open_db

    database = open_db(db)
    if case == "traced":
        tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    out: dict = {"case": case}
    try:
        s = import_ratings(database, "bench", "csv", path)
        out.update(rows=s.rows, added=s.added, unchanged=s.unchanged,
                   phases={k: [round(v, 2) for v in t] for k, t in s.seconds.items()})
    except InputError as exc:
        out.update(rows=None, error=str(exc).splitlines()[0][-90:])
    out.update(wall=time.perf_counter() - wall, cpu=time.process_time() - cpu,
               rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    if case == "traced":
        out["traced_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    database.close()
    return out


def _child(case: str, db: Path, path: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", case, str(db), str(path)],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(proc.stdout.splitlines()[-1])


def main() -> None:
    """Generate the files, run every case in its own process, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--bad-rows", type=int, default=11_000_000)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        case, db, path = args.child
        print(json.dumps(run_case(case, Path(db), Path(path))))
        return
    with tempfile.TemporaryDirectory(prefix="concord-bench-") as tmp:
        root = Path(tmp)
        valid, bad = root / "valid.csv", root / "bad.csv"
        n = write_valid(valid, args.rows)
        m = write_bad_last(bad, args.bad_rows)
        sizes = {p.name: p.stat().st_size / 2**20 for p in (valid, bad)}
        results = [_child("valid", root / "a.db", valid), _child("again", root / "a.db", valid),
                   _child("bad-last", root / "b.db", bad), _child("traced", root / "c.db", valid)]
    print(f"valid file: {n:,} rows, {sizes['valid.csv']:.0f} MB; bad-last file: {m:,} rows,"
          f" {sizes['bad.csv']:.0f} MB (last row bad)")
    print(f"{'case':<10}{'rows':>12}{'wall s':>9}{'CPU s':>8}{'rows/s':>10}{'RSS MB':>8}"
          f"{'traced MB':>10}  phases (wall, CPU s) / error")
    for r in results:
        rows = r["rows"] or (m if r["case"] == "bad-last" else 0)
        traced = f"{r['traced_mb']:.0f}" if "traced_mb" in r else ""
        print(f"{r['case']:<10}{rows:>12,}{r['wall']:>9.1f}{r['cpu']:>8.1f}"
              f"{rows / r['wall']:>10,.0f}{r['rss_mb']:>8.0f}{traced:>10}  "
              f"{r.get('phases') or r.get('error')}")


if __name__ == "__main__":
    main()
