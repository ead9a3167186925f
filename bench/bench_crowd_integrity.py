"""What the crowd-integrity changes cost on the rater's path, as ratios against a baseline
measured in the same run, interleaved (the machine is shared and noisy).

1. Next item + submit in a 20,000-image study with gold, with the per-rater gold schedule
   (``gold_due``: one more query per served item) against the same call with the schedule
   switched off (``gold_due`` patched to "not due").
2. Serving one image: the study's display normalisation (Lanczos to 512 px, a fixed-length
   PNG) against metadata stripping alone, first serve (no cache) and cached, and the bytes
   each sends.

Re-run: `.venv/bin/python bench/bench_crowd_integrity.py [--rounds 200]`.
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


from concord.media import strip_metadata  # noqa: E402
from concord.normalise import normalise  # noqa: E402
from concord.services import studies  # noqa: E402
from concord.services.labelling import common, rating  # noqa: E402
from concord.store import raters as rater_store  # noqa: E402
from concord.store.db import open_db  # noqa: E402
from tests.helpers import make_folder_study  # noqa: E402
from tests.metadata_images import jpeg_with_everything, png_with_everything  # noqa: E402


def _ms(call) -> float:
    t0 = time.perf_counter()
    call()
    return (time.perf_counter() - t0) * 1000


def _ratio_row(name: str, base: list[float], new: list[float]) -> str:
    b, n = statistics.median(base), statistics.median(new)
    return f"| {name} | {b:.2f} | {n:.2f} | {n / b:.2f} |"


def gold_table(rounds: int) -> str:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        gold = tmp / "g" / "gold.csv"
        gold.parent.mkdir(parents=True)
        gold.write_text("prompt_id,model,criterion,expected,tolerance\n"
                        + "".join(f"p{i},m0,SC,1,0\n" for i in range(0, 400, 40)))
        manifest = make_folder_study(tmp / "g", prompts=5_000, models=("m0", "m1", "m2", "m3"),
                                     k=3, extra="gold: gold.csv\nquality:\n  gold_every: 10\n")
        db = open_db(tmp / "g.db")
        studies.import_manifest(db, manifest)
        studies.invite(db, "g", ["a", "b"], "http://x")
        ids = [rater_store.get_rater(db, n).id for n in ("a", "b")]
        real = common.gold_due

        def step(rid: int) -> None:
            item = rating.next_item(db, "g", rid)
            rating.submit(db, "g", rid, item.image_id, {"SC": 1.0, "PR": 1.0},
                          submission=common.new_submission())

        base, new = [], []
        for _ in range(rounds):  # interleaved: one call each way, in turn
            common.gold_due = lambda *a: False  # type: ignore[assignment]
            base.append(_ms(lambda: step(ids[0])))
            common.gold_due = real
            new.append(_ms(lambda: step(ids[1])))
    return _ratio_row("next image + submit, 20,000 images, 10 gold", base, new)


def _png(size: int) -> bytes:
    return png_with_everything(size=(size, size))


def serve_table(rounds: int) -> list[str]:
    rows = []
    demo = sorted((ROOT / "data" / "demo" / "images" / "FLUX.1-schnell").iterdir())[0]
    for label, data in (("512 px demo JPEG (a real output)", demo.read_bytes()),
                        ("512 px PNG of noise", _png(512)), ("256 px PNG (upscaled)", _png(256)),
                        ("1024 px JPEG (downscaled)",
                         jpeg_with_everything(size=(1024, 1024)))):
        base = [_ms(lambda d=data: strip_metadata(d)) for _ in range(rounds)]
        new = [_ms(lambda d=data: normalise(d, 512)) for _ in range(rounds)]
        rows.append(_ratio_row(f"first serve of a {label}", base, new)
                    + f" {len(strip_metadata(data).data):,} → {len(normalise(data, 512).data):,}"
                      " bytes |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    print("| step | baseline median ms | with the change ms | ratio |\n|---|---|---|---|")
    print(gold_table(args.rounds))
    print("\n| step (baseline: metadata stripped) | strip ms | normalise ms | ratio | bytes |\n"
          "|---|---|---|---|---|")
    print("\n".join(serve_table(max(args.rounds // 10, 5))))


if __name__ == "__main__":
    main()
