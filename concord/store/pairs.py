"""Pairs (two images of one prompt) and pairwise judgments: append-only revisions.

A study with pairs (protocol ``pair``, or a ``pairs`` section) gets its pairs at import,
from the balanced design of :mod:`concord.pair_design`. Judgments store the placement the
rater saw (``left_image``, ``right_image``) and the outcome; an undo is a revision
without outcome; a submission id stores each judgment at most once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlite_utils import Database

from concord import pair_design
from concord.errors import InputError, NotFoundError, Problem
from concord.plan import GoldPairSpec, ImportSummary, StudyPlan
from concord.store.db import now


@dataclass(frozen=True, slots=True)
class PairRow:
    """One pair; ``better`` is the known better image of a gold pair (else None)."""

    id: int
    study_id: int
    prompt_id: int
    image_a: int
    image_b: int
    better: int | None


def get_pair(db: Database, pair_id: int) -> PairRow:
    """One pair by id."""
    row = db.execute("SELECT id, study_id, prompt_id, image_a, image_b, better FROM pairs"
                     " WHERE id = ?", [pair_id]).fetchone()
    if row is None:
        raise NotFoundError(f"no pair with id {pair_id}")
    return PairRow(*row)


def ensure_pairs(db: Database, study_id: int, plan: StudyPlan, summary: ImportSummary) -> None:
    """Add the plan's gold pairs and the pairs the design still needs (inside the import's
    transaction); existing pairs are kept as they are."""
    spec = plan.settings.get("pairs")
    if not spec:
        return
    sample = int(spec.get("sample", 0))
    images = _image_ids(db, study_id)
    summary.gold_added += _ensure_gold_pairs(db, study_id, plan.gold_pairs, images)
    models = [r[0] for r in db.execute("SELECT name FROM models WHERE study_id = ? ORDER BY id",
                                       [study_id])]
    have: dict[str, list] = defaultdict(list)
    gold: dict[str, list] = defaultdict(list)
    for key, a, b, better in db.execute(
            "SELECT p.key, ma.name, mb.name, pr.better FROM pairs pr JOIN prompts p ON"
            " p.id = pr.prompt_id JOIN images ia ON ia.id = pr.image_a JOIN models ma ON"
            " ma.id = ia.model_id JOIN images ib ON ib.id = pr.image_b JOIN models mb ON"
            " mb.id = ib.model_id WHERE pr.study_id = ?", [study_id]).fetchall():
        (gold if better is not None else have)[key].append((a, b))
    prompts = [(key, [m for m in models if (key, m, sample) in images])
               for (key,) in db.execute("SELECT key FROM prompts WHERE study_id = ? ORDER BY"
                                        " position, id", [study_id]).fetchall()]
    per_prompt = spec.get("pairs_per_prompt")
    new = pair_design.schedule(prompts, per_prompt=None if per_prompt == "all" else per_prompt,
                               seed=int(spec.get("seed", 0)), existing=have, excluded=gold)
    rows = [_pair_values(study_id, images, key, a, b, sample)
            for key, pairs in new.items() for a, b in pairs]
    db.conn.executemany("INSERT INTO pairs (study_id, prompt_id, image_a, image_b, better,"
                        " created_at) VALUES (?, ?, ?, ?, NULL, ?)", rows)
    summary.pairs_added += len(rows)


def _image_ids(db: Database, study_id: int) -> dict[tuple[str, str, int], tuple[int, int]]:
    """(prompt key, model, sample) → (image id, prompt id) of the images with a file."""
    return {(r[0], r[1], r[2]): (r[3], r[4]) for r in db.execute(
        "SELECT p.key, m.name, i.sample, i.id, p.id FROM images i JOIN prompts p ON"
        " p.id = i.prompt_id JOIN models m ON m.id = i.model_id WHERE i.study_id = ? AND"
        " i.path IS NOT NULL", [study_id]).fetchall()}


def _pair_values(study_id: int, images: dict, key: str, a: str, b: str, sample: int) -> tuple:
    (ia, prompt_id), (ib, _) = images[(key, a, sample)], images[(key, b, sample)]
    return (study_id, prompt_id, min(ia, ib), max(ia, ib), now())


def _ensure_gold_pairs(db: Database, study_id: int, gold: list[GoldPairSpec],
                       images: dict) -> int:
    """Insert gold pairs, or mark a scheduled pair gold; a pair that is gold the other way
    round is refused."""
    added = 0
    for g in gold:
        try:
            better, prompt_id = images[(g.prompt_key, g.better, g.sample)]
            worse, _ = images[(g.prompt_key, g.worse, g.sample)]
        except KeyError:
            raise InputError([Problem("gold", f"no images for the gold pair {g.prompt_key}/"
                                              f"{g.better} vs {g.worse}, sample {g.sample}")]
                             ) from None
        a, b = min(better, worse), max(better, worse)
        row = db.execute("SELECT better FROM pairs WHERE image_a = ? AND image_b = ?",
                         [a, b]).fetchone()
        if row is not None and row[0] not in (None, better):
            raise InputError([Problem("gold", f"gold pair {g.prompt_key}: {g.better} vs "
                                              f"{g.worse} was imported the other way round")])
        if row is None:
            db.execute("INSERT INTO pairs (study_id, prompt_id, image_a, image_b, better,"
                       " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                       [study_id, prompt_id, a, b, better, now()])
        elif row[0] is None:
            db.execute("UPDATE pairs SET better = ? WHERE image_a = ? AND image_b = ?",
                       [better, a, b])
        added += row is None or row[0] is None
    return added


def insert_judgment(db: Database, study_id: int, pair_id: int, rater_id: int, criterion: str,
                    placement: tuple[int, int], outcome: str | None, *, submission: str,
                    action: str, seconds: float | None) -> bool:
    """Append a judgment revision (``outcome`` None: an undo); False when the submission
    was stored before. Runs inside the caller's transaction."""
    rev = db.execute(
        "SELECT COALESCE(MAX(revision), 0) + 1 FROM pair_judgments WHERE pair_id = ? AND"
        " rater_id = ? AND criterion = ?", [pair_id, rater_id, criterion]).fetchone()[0]
    cur = db.execute(
        "INSERT INTO pair_judgments (study_id, pair_id, rater_id, criterion,"
        " left_image, right_image, outcome, revision, submission, action, seconds, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [study_id, pair_id, rater_id, criterion, *placement, outcome, rev, submission, action,
         seconds, now()])
    return cur.rowcount == 1


def submission_exists(db: Database, submission: str) -> bool:
    """Whether a judgment with this submission id was stored."""
    return db.execute("SELECT 1 FROM pair_judgments WHERE submission = ?",
                      [submission]).fetchone() is not None


def current_judgment(db: Database, pair_id: int, rater_id: int,
                     criterion: str) -> tuple[str, int, int] | None:
    """(outcome, left image, right image) of the rater's judgment in effect now (None: none,
    or undone)."""
    row = db.execute("SELECT outcome, left_image, right_image FROM current_pair_judgments"
                     " WHERE pair_id = ? AND rater_id = ? AND criterion = ?",
                     [pair_id, rater_id, criterion]).fetchone()
    return (row[0], row[1], row[2]) if row else None


def last_outcome(db: Database, pair_id: int, rater_id: int, criterion: str) -> str | None:
    """The rater's latest outcome of a pair, also one an undo took back (shown again)."""
    row = db.execute("SELECT outcome FROM pair_judgments WHERE pair_id = ? AND rater_id = ?"
                     " AND criterion = ? AND outcome IS NOT NULL ORDER BY revision DESC"
                     " LIMIT 1", [pair_id, rater_id, criterion]).fetchone()
    return row[0] if row else None


def last_new_judgment(db: Database, study_id: int, rater_id: int) -> tuple[int, str] | None:
    """(pair id, criterion) of the rater's latest first-time judgment still in effect."""
    row = db.execute("SELECT pair_id, criterion FROM current_pair_judgments WHERE study_id = ?"
                     " AND rater_id = ? AND action = 'judge' ORDER BY id DESC LIMIT 1",
                     [study_id, rater_id]).fetchone()
    return (row[0], row[1]) if row else None


def judged_pairs(db: Database, study_id: int, rater_id: int) -> list[dict]:
    """The pairs a rater has a judgment of now, newest first: ``pair_id, prompt, outcome,
    left_path, right_path`` (relative to the study root, as shown), ``at``."""
    return list(db.query(
        "SELECT j.pair_id, p.text AS prompt, j.outcome, il.path AS left_path,"
        " ir.path AS right_path, j.created_at AS at FROM current_pair_judgments j"
        " JOIN pairs pr ON pr.id = j.pair_id JOIN prompts p ON p.id = pr.prompt_id"
        " JOIN images il ON il.id = j.left_image JOIN images ir ON ir.id = j.right_image"
        " WHERE j.study_id = ? AND j.rater_id = ? ORDER BY j.id DESC", [study_id, rater_id]))
