"""Helpers shared by test modules: paths, synthetic images, small studies on disk.

Import them as ``from tests.helpers import ...`` (pytest runs with --import-mode=importlib).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SHARED_REASON = "../shared benchmark data not present (only in the development workspace)"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, skipping the test with a clear reason when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{SHARED_REASON}: {path}")
    return path


def write_png(path: Path, size: tuple[int, int] = (32, 32), color: tuple = (200, 30, 30),
              mode: str = "RGB", fmt: str = "PNG") -> Path:
    """Write a small solid image (with a gradient so pixels differ) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    im = Image.new(mode, size, color)
    if mode == "RGB":
        px = im.load()
        for x in range(min(size[0], 16)):
            px[x, 0] = (x * 10 % 256, 0, 0)
    im.save(path, format=fmt)
    return path


def make_folder_study(root: Path, *, prompts: int = 3, models: tuple[str, ...] = ("m1", "m2"),
                      samples: int = 1, protocol: str = "score", k: int = 2,
                      extra: str = "") -> Path:
    """A folder-layout study on disk; returns its manifest path."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / "prompts.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["prompt_id", "prompt", "dimension"])
        for i in range(prompts):
            w.writerow([f"p{i}", f"a photo of object {i}", "color" if i % 2 else "count"])
    for mi, model in enumerate(models):
        for i in range(prompts):
            for s in range(samples):
                name = f"p{i}.png" if samples == 1 else f"p{i}_{s}.png"
                write_png(root / "images" / model / name, color=(mi * 60, i * 40, s * 90))
    manifest = root / "study.yaml"
    manifest.write_text(
        f"name: {root.name}\nprotocol: {protocol}\nlayout: folder\nroot: images\n"
        f"prompts: prompts.csv\nraters_per_item: {k}\n{extra}", encoding="utf-8")
    return manifest
