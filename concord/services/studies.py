"""Study-level use cases: import a manifest, load the demo, list, delete, invite raters."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from concord.config import DEMO_MANIFEST
from concord.errors import InputError, NotFoundError
from concord.names import check_name
from concord.plan import ImportSummary
from concord.store import exclusions as exclusion_store
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
    # Imported here: the manifest readers load PIL and yaml, which no other use case needs.
    from concord.importers.build import plan_from_manifest

    plan = plan_from_manifest(path, progress=progress)
    return study_store.apply_plan(db, plan, actor=actor)


def check_manifest(path: Path) -> None:
    """Raise :class:`InputError` when ``path`` is not a readable regular file (checked
    before the database is opened and the manifest readers load)."""
    from concord.importers.tables import regular_file_problem

    problem = regular_file_problem(Path(path))
    if problem is not None:
        raise InputError([problem])


def get(db: Database, study_name: str) -> study_store.Study:
    """The study called ``study_name``; NotFoundError names the studies there are."""
    return study_store.get_study(db, study_name)


def names(db: Database) -> list[str]:
    """Every study's name."""
    return study_store.list_study_names(db)


def check_exists(db: Database, study_name: str) -> None:
    """Raise NotFoundError, naming the studies there are, when there is no such study."""
    study_store.get_study(db, study_name)


def filter_options(db: Database, study_name: str) -> dict[str, list]:
    """What a study can be filtered by: ``dimensions`` and ``metrics`` ((metric, judge))."""
    study = study_store.get_study(db, study_name)
    return {"dimensions": study_store.dimensions(db, study.id),
            "metrics": study_store.metric_judges(db, study.id)}


def check_filters(db: Database, study_name: str, *, dimension: str | None = None,
                  metric: str | None = None) -> None:
    """Raise :class:`NotFoundError` for a study, ``dimension`` or ``metric`` that does not
    exist (without pandas: a typo answers at once)."""
    options = filter_options(db, study_name)
    _check_choice(dimension, options["dimensions"], "dimension", study_name)
    _check_choice(metric, sorted({m for m, _ in options["metrics"]}), "metric", study_name)


def _check_choice(value: str | None, known: list[str], what: str, study: str) -> None:
    if value is not None and value not in known:
        raise NotFoundError(f"study {study!r} has no {what} {value!r} "
                            f"({what}s: {', '.join(known) or 'none'})")


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


def label_counts(db: Database, study_name: str) -> dict[str, Any]:
    """The study's counts as its statistics see them (``study_counts`` without the labels
    of raters excluded from the study), with ``excluded``: those raters' names."""
    study = study_store.get_study(db, study_name)
    return {**study_store.study_counts(db, study.id, skip_excluded=True),
            "excluded": sorted(exclusion_store.excluded_names(db, study.id))}


def rater_progress(db: Database, study_name: str) -> list[dict[str, Any]]:
    """Per rater and unit: done, open, skipped, and whether the rater is excluded from the
    study's statistics (the researcher's progress page)."""
    study = study_store.get_study(db, study_name)
    left_out = exclusion_store.excluded_names(db, study.id)
    out = []
    for unit, name in (("image", "scoring"), ("prompt", "ranking"), ("pair", "pairs")):
        for row in work.coverage_summary(db, study.id, unit):
            out.append({"unit": name, **row, "excluded": row["rater"] in left_out})
    return out


def flags_and_skips(db: Database, study_name: str) -> list[dict[str, Any]]:
    """Every skip and flag raters left in a study, newest first: ``kind, rater, note``
    (the reason), ``unit`` (image, prompt or pair), ``prompt_id, prompt, model`` and
    ``image_path`` (absolute; None for a ranking set, a pair or an image without a
    file)."""
    study = study_store.get_study(db, study_name)
    base = Path(study.root or ".")
    return [{**row, "image_path": base / row.pop("path") if row.get("path") else None}
            for row in work.marks(db, study.id)]


def raters(db: Database, study_name: str | None = None) -> list[dict[str, Any]]:
    """Raters (of one study, or all) with ``link`` ("active", "revoked" or "none"),
    studies, ``rated_images``, ``rating_values`` (SC and PR count apart) and ``rankings``
    (in that study, or in all), and when they were created."""
    study_id = study_store.get_study(db, study_name).id if study_name else None
    out = []
    for r in rater_store.list_raters(db, study_id):
        link = "revoked" if r["revoked_at"] else "active" if r["has_link"] else "none"
        out.append({"name": r["name"], "role": r["role"], "link": link,
                    "studies": r["studies"], "rated_images": r["rated_images"],
                    "rating_values": r["rating_values"], "rankings": r["rankings"],
                    "created_at": r["created_at"]})
    return out


def revoke(db: Database, name: str, *, actor: str = "cli") -> None:
    """Revoke a rater's invite link: it stops working at once, in open tabs too."""
    rater_store.revoke(db, name, actor=actor)


def with_links(db: Database, names: list[str]) -> list[str]:
    """The names among ``names`` that already have a working invite link."""
    return [r["name"] for r in rater_store.list_raters(db)
            if r["name"] in set(names) and r["has_link"] and not r["revoked_at"]]


def delete(db: Database, study_name: str, *, actor: str = "cli") -> dict[str, int]:
    """Delete a study and everything in it (explicit and total)."""
    return study_store.delete_study(db, study_name, actor=actor)
