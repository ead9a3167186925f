"""Helpers for the store / import / CLI / export tests (fixtures stay in conftest.py).

Import as ``from tests.foundation_helpers import ...``; the generic helpers of
``tests.helpers`` are re-exported.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from concord.errors import InputError
from concord.services import studies
from concord.services.imports.ratings import import_ratings
from concord.services.labelling import rating
from concord.services.labelling.common import new_submission
from concord.services.metrics import scores as metric_scores
from concord.store import raters as rater_store
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.helpers import ROOT, make_folder_study, shared_path, write_png  # noqa: F401

# Tables whose rows make up a study (everything but the migrations bookkeeping).
DATA_TABLES = (
    "studies", "models", "prompts", "questions", "images", "raters", "study_raters",
    "assignments", "ratings", "rankings", "ranking_items", "marks", "gold", "runs",
    "metric_scores", "audit_log", "import_batches", "import_batch_items", "pairs",
    "pair_judgments",
)


def snapshot(db: Database) -> dict[str, list[tuple]]:
    """Every row of every data table, sorted, to compare a database before and after."""
    return {
        t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in DATA_TABLES
    }


@contextmanager
def unchanged(db: Database) -> Iterator[None]:
    """Assert that the block leaves every table exactly as it was."""
    before = snapshot(db)
    yield
    assert snapshot(db) == before, "the database changed"


def import_fails(db: Database, manifest: Path) -> InputError:
    """Import ``manifest``, expect InputError, check nothing was written; return the error."""
    with unchanged(db), pytest.raises(InputError) as info:
        studies.import_manifest(db, manifest)
    return info.value


def problem_text(err: InputError) -> str:
    """All problems of an error as one string (for substring checks)."""
    return "\n".join(str(p) for p in err.problems)


def invited(db: Database, study: str, name: str = "alice") -> int:
    """Invite a rater to a study and sign in with the token; returns the rater id."""
    [inv] = studies.invite(db, study, [name], "http://x")
    token = inv.url.split("token=", 1)[1]
    return rater_store.rater_for_token(db, token).id


def rate_next(db: Database, study: str, rater_id: int, sc: float = 1, pr: float = 1,
              submission: str | None = None) -> int:
    """Serve the rater's next image and rate it; returns the image id."""
    item = rating.next_item(db, study, rater_id)
    assert item is not None
    res = rating.submit(db, study, rater_id, item.image_id, {"SC": sc, "PR": pr},
                        submission=submission or new_submission())
    assert res.stored
    return item.image_id


def study_id(db: Database, name: str) -> int:
    """Store id of a study."""
    return study_store.get_study(db, name).id


def png_header_only(path: Path, width: int, height: int) -> Path:
    """A tiny PNG file whose IHDR declares ``width`` × ``height`` (a decompression bomb)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    body = zlib.compress(b"\x00" * 64)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body)
                     + chunk(b"IEND", b""))
    return path



def study_with_raters(tmp_path: Path, db: Database, name: str, *, prompts: int, k: int,
                      raters: int, models: tuple[str, ...] = ("a", "b"),
                      protocol: str = "score", extra: str = "") -> list[int]:
    """A folder study ``name`` with raters r0, r1, ... invited to it; their ids."""
    manifest = make_folder_study(tmp_path / name, prompts=prompts, models=models, k=k,
                                 protocol=protocol, extra=extra)
    studies.import_manifest(db, manifest)
    invites = studies.invite(db, name, [f"r{i}" for i in range(raters)], "http://x")
    return [rater_store.rater_for_token(db, i.url.split("token=")[1]).id for i in invites]


# Fixtures of the bad-input tests (test_import_errors, test_hostile_inputs): a test module
# imports them to use them.
@pytest.fixture(name="db")
def good_db(db: Database, tmp_path: Path) -> Database:
    """A database that already holds a good study, so 'unchanged' means something."""
    studies.import_manifest(db, make_folder_study(tmp_path / "good", prompts=2))
    return db


@pytest.fixture(name="study")
def bad_study(tmp_path: Path) -> Path:
    """A valid folder study named 'bad' (3 prompts × m1, m2) to break in each test."""
    return make_folder_study(tmp_path / "bad", prompts=3)


# The study of the stats, dashboard and browser tests: 4 models of known quality.
MODELS = {"alpha": 0.9, "beta": 0.6, "gamma": 0.35, "delta": 0.1}
RATERS = ("ann", "ben", "cat")


def seed_study(db, root: Path, name: str = "dash", *, prompts: int = 6,
               ratings: bool = True, scores: bool = True) -> Path:
    """A folder study with SC/PR ratings by 3 raters and vqascore/gned metric values."""
    manifest = make_folder_study(root / name, prompts=prompts, models=tuple(MODELS), k=3)
    studies.import_manifest(db, manifest)
    rnd = random.Random(7)
    rating_rows = ["prompt_id,model,rater,criterion,value,seconds"]
    score_rows = ["prompt_id,model,metric,value"]
    for p in range(prompts):
        for model, quality in MODELS.items():
            for rater in RATERS:
                for crit in ("SC", "PR"):
                    noisy = quality + rnd.gauss(0, 0.3)
                    value = min((0, 0.5, 1), key=lambda x, v=noisy: abs(x - v))
                    rating_rows.append(f"p{p},{model},{rater},{crit},{value},"
                                       f"{rnd.uniform(2, 9):.2f}")
            score_rows.append(f"p{p},{model},vqascore,{quality + rnd.gauss(0, 0.2):.4f}")
            gned = min(1.0, max(0.0, 1 - quality + rnd.gauss(0, 0.2)))
            score_rows.append(f"p{p},{model},gned,{gned:.4f}")
    if ratings:
        (root / f"{name}-ratings.csv").write_text("\n".join(rating_rows) + "\n")
        import_ratings(db, name, "csv", root / f"{name}-ratings.csv")
    if scores:
        (root / f"{name}-scores.csv").write_text("\n".join(score_rows) + "\n")
        metric_scores.import_scores(db, name, "csv", root / f"{name}-scores.csv")
    return manifest


def folder_study_db(tmp_path: Path, name: str = "c.db", **study: Any) -> Path:
    """A database file ``tmp_path/name`` holding study 's' (make_folder_study(**study)),
    closed again: for tests that open it their own way (the CLI, several connections)."""
    path = tmp_path / name
    db = open_db(path)
    studies.import_manifest(db, make_folder_study(tmp_path / "s", **study))
    db.close()
    return path
