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


# The five cells where ImagenHub's published results table differs from its own rating
# files by more than 0.005 (rounding or copy errors in the table; each within 0.01).
IMAGENHUB_KNOWN_ERRORS = {
    ("Mask-Guided_IE", "BlendedDiffusion", "SC_mean"),    # published 0.12, data 0.1145
    ("Text-Guided_IE", "InstructPix2Pix", "SC_mean"),     # published 0.29, data 0.2849
    ("Multi-Subject_IG", "DreamBooth", "SC_mean"),        # published 0.11, data 0.1046
    ("Mask-Guided_IE", "SDXLInpaint", "fleiss_kappa_O"),  # published 0.50, data 0.5051
    ("Text-Guided_IE", "Text2Live", "fleiss_kappa_O"),    # published 0.10, data 0.1071
}


def check_imagenhub_paper_cells(ours: dict, expected_csv: Path) -> None:
    """Assert ≥ 251 of the 256 paper cells match within 0.005 and the rest are the known
    errors (within 0.01). ``ours`` maps (task, model column, statistic) to a number."""
    import pandas as pd

    expected = pd.read_csv(expected_csv)
    paper = expected[expected["source"].str.startswith("ImagenHub paper")]
    assert len(paper) == 256
    diffs = {(r.task_dir, r.model_column, r.statistic):
             abs(ours[(r.task_dir, r.model_column, r.statistic)] - r.published)
             for r in paper.itertuples()}
    within = {k for k, d in diffs.items() if d <= 0.005 + 1e-9}
    assert len(within) >= 251
    assert set(diffs) - within == IMAGENHUB_KNOWN_ERRORS
    assert all(diffs[k] <= 0.01 for k in IMAGENHUB_KNOWN_ERRORS)


def study_report(db, study: str, **options) -> dict:
    """``concord.services.report.study.study_report`` of ``study`` under ``options`` (fields of
    ``ReportOptions``), the request resolved as the CLI resolves it."""
    from concord.services.report import request as report_request
    from concord.services.report import study as report

    request = report_request.resolve(db, study, report_request.ReportOptions(**options))
    return report.study_report(db, request)


def target_of(db) -> str:
    """Where an open database is, to open more connections to it: the PostgreSQL URL, or
    the SQLite file."""
    url = getattr(db, "url", None)
    if url:
        return url
    return db.conn.execute("PRAGMA database_list").fetchone()[2]


def sqlite_only(engine: str, why: str) -> None:
    """Skip a both-engines test on PostgreSQL: what it checks is SQLite's own (``why``)."""
    import pytest

    if engine != "sqlite":
        pytest.skip(f"SQLite only: {why}")


class WriteLockHolder:
    """Holds a database's write lock from another connection, as a restore does: SQLite's
    BEGIN IMMEDIATE on the file, or Concord's advisory lock on PostgreSQL."""

    def __init__(self, target) -> None:
        self.target = target
        self._conn = None

    def __enter__(self) -> WriteLockHolder:
        if isinstance(self.target, str) and self.target.startswith("postgresql"):
            import psycopg

            from concord.store.engine import WRITE_LOCK_KEY

            self._conn = psycopg.connect(self.target, autocommit=True)
            self._conn.execute("BEGIN")
            self._conn.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK_KEY])
        else:
            import sqlite3

            self._conn = sqlite3.connect(self.target)
            self._conn.execute("BEGIN IMMEDIATE")
        return self

    def __exit__(self, *_: object) -> None:
        self._conn.rollback()
        self._conn.close()


def edit_settings(db, study: str, edit) -> None:
    """Change a study's stored settings by hand (as an edited manifest would): ``edit`` gets
    the parsed settings and changes them in place. Python, not SQLite's json_set, so that it
    works on both engines."""
    import json

    [text] = db.execute("SELECT settings FROM studies WHERE name = ?", [study]).fetchone()
    settings = json.loads(text)
    edit(settings)
    with db.conn:
        db.execute("UPDATE studies SET settings = ? WHERE name = ?",
                   [json.dumps(settings), study])
