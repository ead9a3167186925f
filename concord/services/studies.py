"""Study-level use cases: import a manifest, load the demo, list, delete, invite raters."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from concord.config import DEMO_MANIFEST
from concord.importers.build import plan_from_manifest
from concord.names import check_name
from concord.plan import ImportSummary
from concord.store import raters as rater_store
from concord.store import studies as study_store
from concord.store import work


@dataclass(frozen=True, slots=True)
class Invite:
    """A rater name and the URL that signs them in (shown once)."""

    name: str
    url: str


def import_manifest(db: Database, path: Path, *, progress: Any = None,
                    actor: str = "cli") -> ImportSummary:
    """Validate everything a manifest names, then write it in one transaction."""
    plan = plan_from_manifest(path, progress=progress)
    return study_store.apply_plan(db, plan, actor=actor)


def ensure_demo(db: Database, manifest: Path = DEMO_MANIFEST) -> ImportSummary | None:
    """Load the demo study when the database holds no study yet."""
    if study_store.list_study_names(db) or not manifest.is_file():
        return None
    return import_manifest(db, manifest, actor="init")


def invite(db: Database, study_name: str, names: list[str], base_url: str, *,
           role: str = "rater", actor: str = "cli") -> list[Invite]:
    """Create (or re-invite) raters for a study; returns one invite URL each."""
    study = study_store.get_study(db, study_name)
    # every name is checked first: a token issued but never shown would be lost
    clean = [check_name(name, "rater") for name in names]
    out = []
    for name in clean:
        token = rater_store.issue_token(db, name, role=role, study_id=study.id, actor=actor)
        out.append(Invite(name, f"{base_url}/?token={token}"))
    return out


def overview(db: Database) -> list[dict[str, Any]]:
    """One row per study with its counts (the researcher's study list)."""
    rows = []
    for s in study_store.list_studies(db):
        rows.append({"study": s.name, "protocol": s.protocol, "rubric": s.rubric,
                     "raters_per_item": s.k, **study_store.study_counts(db, s.id)})
    return rows


def rater_progress(db: Database, study_name: str) -> list[dict[str, Any]]:
    """Per rater and unit: done, open, skipped (the researcher's progress page)."""
    study = study_store.get_study(db, study_name)
    out = []
    for unit in ("image", "prompt"):
        for row in work.coverage_summary(db, study.id, unit):
            out.append({"unit": "scoring" if unit == "image" else "ranking", **row})
    return out


def flags_and_skips(db: Database, study_name: str) -> list[dict[str, Any]]:
    """Every skip and flag raters left in a study."""
    study = study_store.get_study(db, study_name)
    return work.marks(db, study.id)


def delete(db: Database, study_name: str, *, actor: str = "cli") -> dict[str, int]:
    """Delete a study and everything in it (explicit and total)."""
    return study_store.delete_study(db, study_name, actor=actor)
