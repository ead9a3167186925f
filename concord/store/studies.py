"""Studies, models, prompts, questions, images and gold items."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from concord.crowd_settings import study_units
from concord.errors import ConcordError, InputError, NotFoundError, Problem
from concord.plan import DEFAULT_LEASE_MINUTES, ImportSummary, PromptSpec, StudyPlan
from concord.store import pairs as pair_store
from concord.store.db import audit, dumps, inserted_id, loads, now, transaction
from concord.store.imports.batches import HIDDEN_STUDY_IDS


@dataclass(frozen=True, slots=True)
class Study:
    """A study row with its settings parsed."""

    id: int
    name: str
    protocol: str
    rubric: str | None
    root: str | None
    settings: dict[str, Any]

    @property
    def k(self) -> int:
        """Raters wanted per item."""
        return int(self.settings.get("raters_per_item", 3))

    @property
    def has_pairs(self) -> bool:
        """Whether raters judge pairs (protocol ``pair``, or a ``pairs`` section)."""
        return self.protocol == "pair" or bool(self.settings.get("pairs"))

    @property
    def units(self) -> tuple[str, ...]:
        """The units its raters work on (``image``, ``prompt``, ``pair``)."""
        return study_units(self.protocol, self.has_pairs)

    def k_for(self, unit: str) -> int:
        """Raters wanted per item of a unit (``pairs.raters_per_pair`` for pairs)."""
        if unit == "pair":
            return int(self.settings.get("pairs", {}).get("raters_per_pair", self.k))
        return self.k

    @property
    def lease_minutes(self) -> float:
        """How long an opened item stays reserved for the rater who opened it."""
        return float(self.settings.get("lease_minutes", DEFAULT_LEASE_MINUTES))


# A study that a still pending ratings import is creating does not exist yet for anyone.
_SHOWN = f"id NOT IN ({HIDDEN_STUDY_IDS})"


def _study_from_row(row: dict[str, Any]) -> Study:
    return Study(id=row["id"], name=row["name"], protocol=row["protocol"], rubric=row["rubric"],
                 root=row["root"], settings=loads(row["settings"], {}))


def get_study(db: Database, name: str) -> Study:
    """The study called ``name``; NotFoundError lists the studies there are."""
    rows = list(db.query(f"SELECT * FROM studies WHERE name = ? AND {_SHOWN}", [name]))
    if not rows:
        known = ", ".join(list_study_names(db)) or "none"
        raise NotFoundError(f"no study named {name!r} (studies: {known})")
    return _study_from_row(rows[0])


def get_study_by_id(db: Database, study_id: int) -> Study:
    """The study with this id."""
    rows = list(db.query("SELECT * FROM studies WHERE id = ?", [study_id]))
    if not rows:
        raise NotFoundError(f"no study with id {study_id}")
    return _study_from_row(rows[0])


def list_study_names(db: Database) -> list[str]:
    """Names of all studies, oldest first."""
    return [r["name"] for r in db.query(f"SELECT name FROM studies WHERE {_SHOWN} ORDER BY id")]


def list_studies(db: Database) -> list[Study]:
    """All studies, oldest first."""
    return [_study_from_row(r) for r in db.query(f"SELECT * FROM studies WHERE {_SHOWN}"
                                                 " ORDER BY id")]


def study_counts(db: Database, study_id: int, *, skip_excluded: bool = False) -> dict[str, int]:
    """How many models, prompts and images a study holds, and of its current labels:
    ``rated_images`` (images with a rating), ``rating_values`` (one per image, rater and
    criterion: SC and PR count apart), ``raters_who_rated``, ``rankings`` (one per prompt,
    rater and criterion), ``pair_judgments`` and ``metric_scores``; with
    ``skip_excluded``, the labels of raters excluded from the study are left out (as the
    statistics leave them out)."""
    out = " AND rater_id NOT IN (SELECT rater_id FROM rater_exclusions WHERE study_id = ?)" \
        if skip_excluded else ""
    labels = {"rated_images": "COUNT(DISTINCT image_id) FROM current_ratings",
              "rating_values": "COUNT(*) FROM current_ratings",
              "raters_who_rated": "COUNT(DISTINCT rater_id) FROM current_ratings",
              "rankings": "COUNT(*) FROM current_rankings",
              "pair_judgments": "COUNT(*) FROM current_pair_judgments"}
    sql = {
        "models": "SELECT COUNT(*) FROM models WHERE study_id = ?",
        "prompts": "SELECT COUNT(*) FROM prompts WHERE study_id = ?",
        "images": "SELECT COUNT(*) FROM images WHERE study_id = ?",
        **{k: f"SELECT {q} WHERE study_id = ?{out}" for k, q in labels.items()},
        "metric_scores": "SELECT COUNT(*) FROM metric_scores WHERE study_id = ?",
    }
    return {k: db.execute(q, [study_id] * q.count("?")).fetchone()[0] for k, q in sql.items()}


def dimensions(db: Database, study_id: int) -> list[str]:
    """The dimensions of the study's prompts that have images, sorted."""
    return sorted(str(r[0]) for r in db.execute(
        "SELECT DISTINCT p.dimension FROM images i JOIN prompts p ON p.id = i.prompt_id"
        " WHERE i.study_id = ? AND p.dimension IS NOT NULL", [study_id]).fetchall())


def metric_judges(db: Database, study_id: int) -> list[tuple[str, str]]:
    """The (metric, judge) pairs a study has scores for, sorted."""
    return [tuple(r) for r in db.execute(
        "SELECT DISTINCT metric, judge FROM metric_scores WHERE study_id = ?"
        " ORDER BY metric, judge", [study_id]).fetchall()]


def delete_study(db: Database, name: str, *, actor: str = "cli") -> dict[str, int]:
    """Delete a study and everything that belongs to it; returns what was removed."""
    study = get_study(db, name)
    counts = study_counts(db, study.id)
    with transaction(db):
        db.execute("DELETE FROM studies WHERE id = ?", [study.id])
        audit(db, actor, "delete_study", name, **counts)
    return counts


def apply_plan(db: Database, plan: StudyPlan, *, actor: str = "cli") -> ImportSummary:
    """Write a validated plan in one transaction: adds what is new, changes nothing else.

    Raises:
        InputError: the plan conflicts with what the database holds (a prompt whose
            text changed, an image whose file changed); nothing is written.
    """
    summary = ImportSummary(study=plan.name, warnings=list(plan.warnings),
                            appearance=dict(plan.appearance))
    with transaction(db):
        study_id, summary.created = _ensure_study(db, plan)
        model_ids = _ensure_models(db, study_id, plan.models, summary)
        prompt_ids = _ensure_prompts(db, study_id, plan.prompts, summary)
        _ensure_images(db, study_id, plan, prompt_ids, model_ids, summary)
        _ensure_gold(db, study_id, plan, summary)
        pair_store.ensure_pairs(db, study_id, plan, summary)
        if summary.changed:
            audit(db, actor, "import", plan.name, **_summary_detail(summary))
    return summary


def _summary_detail(summary: ImportSummary) -> dict[str, Any]:
    return {
        "models": summary.models_added,
        "prompts": summary.prompts_added,
        "images": summary.images_added,
        "questions": summary.questions_added,
        "gold": summary.gold_added,
        "pairs": summary.pairs_added,
    }


def _ensure_study(db: Database, plan: StudyPlan) -> tuple[int, bool]:
    rows = list(db.query("SELECT * FROM studies WHERE name = ?", [plan.name]))
    if rows and not list(db.query(f"SELECT 1 FROM studies WHERE id = ? AND {_SHOWN}",
                                  [rows[0]["id"]])):
        raise ConcordError(f"study {plan.name!r} is being created by a ratings import right "
                           "now (or one was killed: the next import-ratings removes it)")
    if not rows:
        cur = db.execute(
            "INSERT INTO studies (name, protocol, rubric, root, settings, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
            [plan.name, plan.protocol, plan.rubric, plan.root, dumps(plan.settings), now()],
        )
        return inserted_id(cur), True
    row = rows[0]
    new = (plan.protocol, plan.rubric, plan.root, dumps(plan.settings))
    old = (row["protocol"], row["rubric"], row["root"], row["settings"])
    if new != old:
        # Settings may evolve between imports (more raters per item, a new rubric).
        db.execute(
            "UPDATE studies SET protocol = ?, rubric = ?, root = ?, settings = ? WHERE id = ?",
            [*new, row["id"]],
        )
        audit(db, "import", "update_study", plan.name, before=old, after=new)
    return int(row["id"]), False


def _ensure_models(
    db: Database, study_id: int, names: list[str], summary: ImportSummary
) -> dict[str, int]:
    existing = {
        r["name"]: r["id"]
        for r in db.query("SELECT id, name FROM models WHERE study_id = ?", [study_id])
    }
    for name in names:
        if name not in existing:
            cur = db.execute(
                "INSERT INTO models (study_id, name) VALUES (?, ?) RETURNING id", [study_id, name]
            )
            existing[name] = inserted_id(cur)
            summary.models_added += 1
    return existing


_PROMPT_FIELDS = ("text", "benchmark", "dimension", "atom_count", "paraphrase_group", "variant",
                  "source_image", "instruction")


def _prompt_row(study_id: int, p: PromptSpec, position: int) -> list[Any]:
    return [
        study_id,
        p.key,
        *[getattr(p, f) for f in _PROMPT_FIELDS],
        dumps(p.skills) if p.skills is not None else None,
        dumps(p.meta),
        position,
        int(p.rank_set),
    ]


def _ensure_prompts(
    db: Database, study_id: int, prompts: list[PromptSpec], summary: ImportSummary
) -> dict[str, int]:
    existing = {
        r["key"]: r
        for r in db.query("SELECT id, key, text FROM prompts WHERE study_id = ?", [study_id])
    }
    problems = [
        Problem("manifest", f"prompt text differs from the imported one ({row['text']!r})",
                field=f"prompt {p.key}")
        for p in prompts
        if (row := existing.get(p.key)) is not None and row["text"] != p.text
    ]
    if problems:
        raise InputError(problems)
    ids = {k: r["id"] for k, r in existing.items()}
    offset = len(existing)
    cols = ", ".join(["study_id", "key", *_PROMPT_FIELDS, "skills", "meta", "position", "rank_set"])
    marks = ", ".join("?" * (len(_PROMPT_FIELDS) + 6))
    for p in prompts:
        if p.key in ids:
            summary.questions_added += _ensure_questions(db, ids[p.key], p)
            continue
        # New prompts go after the existing ones, in file order, without gaps.
        position = offset + summary.prompts_added
        cur = db.execute(
            f"INSERT INTO prompts ({cols}) VALUES ({marks}) RETURNING id",
            _prompt_row(study_id, p, position))
        ids[p.key] = inserted_id(cur)
        summary.prompts_added += 1
        summary.questions_added += _ensure_questions(db, ids[p.key], p)
    return ids


def _ensure_questions(db: Database, prompt_id: int, p: PromptSpec) -> int:
    if not p.questions:
        return 0
    added = 0
    for pos, q in enumerate(p.questions):
        res = db.execute(
            "INSERT INTO questions (prompt_id, qkey, text, answer, skill, position)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [prompt_id, q.id, q.text, q.answer, q.skill, pos],
        )
        added += res.rowcount
    return added


def _ensure_images(
    db: Database,
    study_id: int,
    plan: StudyPlan,
    prompt_ids: dict[str, int],
    model_ids: dict[str, int],
    summary: ImportSummary,
) -> None:
    existing = {
        (r["prompt_id"], r["model_id"], r["sample"]): r
        for r in db.query(
            "SELECT prompt_id, model_id, sample, sha256, path FROM images WHERE study_id = ?",
            [study_id],
        )
    }
    problems: list[Problem] = []
    rows: list[list[Any]] = []
    for im in plan.images:
        key = (prompt_ids[im.prompt_key], model_ids[im.model], im.sample)
        old = existing.get(key)
        if old is None:
            rows.append([study_id, *key, im.path, im.sha256, im.bytes, im.width, im.height,
                         secrets.token_urlsafe(12)])
            existing[key] = {"sha256": im.sha256, "path": im.path}
        elif old["sha256"] != im.sha256 and old["sha256"] is not None and im.sha256 is not None:
            where = str(Path(plan.root) / im.path) if plan.root and im.path else im.path or "?"
            problems.append(Problem(where, "image file changed since it was imported"
                                    " (ratings refer to the old pixels); import it as a new"
                                    " sample or a new study", field="sha256"))
        else:
            summary.images_unchanged += 1
    if problems:
        raise InputError(problems)
    db.conn.executemany(
        "INSERT INTO images (study_id, prompt_id, model_id, sample, path, sha256, bytes,"
        " width, height, public_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    summary.images_added += len(rows)


def _ensure_gold(db: Database, study_id: int, plan: StudyPlan, summary: ImportSummary) -> None:
    for g in plan.gold:
        row = db.execute(
            "SELECT i.id FROM images i JOIN prompts p ON p.id = i.prompt_id"
            " JOIN models m ON m.id = i.model_id"
            " WHERE i.study_id = ? AND p.key = ? AND m.name = ? AND i.sample = ?",
            [study_id, g.prompt_key, g.model, g.sample],
        ).fetchone()
        if row is None:
            raise InputError([Problem("gold", f"no image for {g.prompt_key}/{g.model}/{g.sample}")])
        cur = db.execute(
            "INSERT INTO gold (image_id, unit, criterion, expected, tolerance)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [row[0], g.unit, g.criterion, g.expected, g.tolerance],
        )
        summary.gold_added += cur.rowcount
