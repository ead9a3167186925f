"""Assignments (what a rater is working on), skips and flags.

A unit is an ``image`` (scoring), a ``prompt`` (ranking) or a ``pair`` (pairwise A/B,
item = a row of ``pairs``). An assignment is opened
when an item is served and closed as ``done`` or ``skipped``; its ``opened_at`` is the
server-side start of the time on item.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

from sqlite_utils import Database

from concord.store.db import now


@dataclass(frozen=True, slots=True)
class Assignment:
    """One row of the assignments table."""

    id: int
    item_id: int
    status: str
    opened_at: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """An item a rater could be given next."""

    item_id: int
    coverage: int
    gold: bool
    total: int = 0  # how many candidates there were in all (this one included)


def open_assignments(db: Database, study_id: int, rater_id: int,
                     unit: str) -> list[Assignment]:
    """A rater's open assignments, most recently opened first."""
    return [Assignment(*r) for r in db.execute(
        "SELECT id, item_id, status, opened_at FROM assignments WHERE study_id = ? AND"
        " rater_id = ? AND unit = ? AND status = 'open' ORDER BY opened_at DESC, id DESC",
        [study_id, rater_id, unit]).fetchall()]


def get_assignment(db: Database, study_id: int, rater_id: int, unit: str,
                   item_id: int) -> Assignment | None:
    """The assignment of one item to one rater, if it was ever served."""
    row = db.execute(
        "SELECT id, item_id, status, opened_at FROM assignments WHERE study_id = ? AND"
        " rater_id = ? AND unit = ? AND item_id = ?", [study_id, rater_id, unit, item_id],
    ).fetchone()
    return Assignment(*row) if row else None


# Each rater sees items in their own pseudo-random order: a keyed cubic polynomial of the
# item id modulo the prime P, with coefficients and shift drawn (BLAKE2b) from the study
# seed and the rater. A linear congruential permutation, used before, kept runs of one
# model's images together (item ids are consecutive per model); a cubic does not (tests:
# consecutive items from one model as often as chance, for every rater). It is computed
# inside SQLite (every product stays below 2**62, SQLite integers are 64-bit), so the next
# item is found with ORDER BY ... LIMIT at C speed; equal values (rare) go by item id.
_P = 2_147_483_647
_ORDER_SQL = ("((((:oa * ((it.item_id + :ok) % :op) + :ob) % :op) * ((it.item_id + :ok) % :op)"
              " + :oc) % :op) * ((it.item_id + :ok) % :op) % :op, it.item_id")


def order_params(seed: int, rater_id: int) -> dict[str, int]:
    """The rater's coefficients (``oa, ob, oc``), shift (``ok``) and prime (``op``)."""
    digest = hashlib.blake2b(f"{seed}:{rater_id}".encode(), digest_size=16).digest()
    a, b, c, k = (1 + int.from_bytes(digest[i:i + 4], "big") % (_P - 1) for i in (0, 4, 8, 12))
    return {"oa": a, "ob": b, "oc": c, "ok": k, "op": _P}


def order_value(seed: int, rater_id: int, item_id: int) -> tuple[int, int]:
    """The rater's sort key of an item (smaller comes first); the same as the SQL."""
    o = order_params(seed, rater_id)
    x = (item_id + o["ok"]) % _P
    return (((o["oa"] * x + o["ob"]) % _P * x + o["oc"]) % _P * x % _P, item_id)


def lease_cutoff(minutes: float) -> str:
    """The ``opened_at`` before which an open assignment no longer holds its slot."""
    start = dt.datetime.fromisoformat(now()) - dt.timedelta(minutes=minutes)
    return start.isoformat(timespec="microseconds")


def _candidate_sql(unit: str, select: str, tail: str) -> str:
    if unit == "image":
        items = ("SELECT i.id AS item_id, CASE WHEN EXISTS (SELECT 1 FROM gold g WHERE"
                 " g.image_id = i.id AND g.unit = 'image') THEN 1 ELSE 0 END AS gold FROM images i"
                 " WHERE i.study_id = :study"
                 " AND i.path IS NOT NULL AND i.id NOT IN (SELECT DISTINCT g.image_id FROM gold g"
                 " JOIN images gi ON gi.id = g.image_id WHERE gi.study_id = :study AND"
                 " g.unit = 'image' AND gi.path IS NOT NULL ORDER BY g.image_id"
                 " LIMIT :practice)")
    elif unit == "prompt":
        items = ("SELECT p.id AS item_id, CASE WHEN EXISTS (SELECT 1 FROM gold g JOIN images gi"
                 " ON gi.id = g.image_id WHERE gi.prompt_id = p.id AND g.unit = 'prompt') THEN 1"
                 " ELSE 0 END AS gold"
                 " FROM prompts p WHERE p.study_id = :study"
                 " AND p.rank_set = 1 AND (SELECT COUNT(*) FROM images i WHERE"
                 " i.prompt_id = p.id AND i.path IS NOT NULL) >= 2")
    elif unit == "pair":
        items = ("SELECT pr.id AS item_id, CASE WHEN pr.better IS NOT NULL THEN 1 ELSE 0 END"
                 " AS gold FROM pairs pr"
                 " WHERE pr.study_id = :study")
    else:
        raise ValueError(f"unknown unit {unit!r} (image, prompt or pair)")
    # NOT IN over the rater's own items (a small set, built once) rather than a correlated
    # NOT EXISTS probing the assignments index once per item: 546 -> 249 ms per next pair
    # in a 239,400-pair study. item_id is NOT NULL, so the two mean the same.
    return (
        f"WITH cov AS ({_COVERAGE_SQL} GROUP BY item_id)"
        f" SELECT {select} FROM ({items}) it LEFT JOIN cov ON cov.item_id = it.item_id"
        " WHERE it.item_id NOT IN (SELECT a.item_id FROM assignments a WHERE a.study_id ="
        " :study AND a.rater_id = :rater AND a.unit = :unit AND a.status != 'released')"
        f" AND (it.gold = 1 OR COALESCE(cov.n, 0) < :k){tail}"
    )


# What holds a slot of an item: a done assignment, or an open one whose lease is live.
_COVERAGE_SQL = (
    "SELECT item_id, COUNT(*) AS n FROM assignments WHERE study_id = :study AND unit = :unit"
    " AND (status = 'done' OR (status = 'open' AND opened_at >= :cutoff))"
)


def candidates(db: Database, study_id: int, rater_id: int, unit: str, k: int, *,
               cutoff: str, seed: int = 0, limit: int = 1, practice: int = 0,
               gold_first: bool = False) -> list[Candidate]:
    """The next items for this rater, best first: never served to them (or released),
    fewer than ``k`` slots held (gold items always), gold items first when ``gold_first``
    (a gold item is due, concord.services.labelling.common) and last otherwise, then least covered
    first, then the rater's own shuffled order. The study's ``practice`` first gold
    images (its practice pool, see concord.store.crowd.onboarding.practice_images) are never
    served as items.

    A slot is held by a done assignment or by an open one opened at or after ``cutoff``
    (a live lease), so two raters asking at the same moment do not both take the last
    slot, and an abandoned item frees its slot when the lease runs out.
    """
    sql = _candidate_sql(unit, "it.item_id, COALESCE(cov.n, 0) AS coverage, it.gold,"
                               " COUNT(*) OVER () AS total",
                         f" ORDER BY it.gold != :gold_first, coverage, {_ORDER_SQL}"
                         " LIMIT :limit")
    params = {"study": study_id, "unit": unit, "rater": rater_id, "k": k, "cutoff": cutoff,
              "limit": limit, "practice": practice, "gold_first": int(gold_first),
              **order_params(seed, rater_id)}
    return [Candidate(r[0], r[1], bool(r[2]), r[3]) for r in db.execute(sql, params).fetchall()]


def count_candidates(db: Database, study_id: int, rater_id: int, unit: str, k: int, *,
                     cutoff: str, practice: int = 0) -> int:
    """How many items this rater could still be given."""
    sql = _candidate_sql(unit, "COUNT(*)", "")
    params = {"study": study_id, "unit": unit, "rater": rater_id, "k": k, "cutoff": cutoff,
              "practice": practice}
    return int(db.execute(sql, params).fetchone()[0])


# Whether an assignment's item is gold, per unit (the ``a`` of the query below).
_GOLD_ITEM = {
    "image": "a.item_id IN (SELECT image_id FROM gold WHERE unit = 'image')",
    "prompt": ("a.item_id IN (SELECT i.prompt_id FROM gold g JOIN images i ON"
               " i.id = g.image_id WHERE g.unit = 'prompt' AND i.study_id = :study)"),
    "pair": "a.item_id IN (SELECT id FROM pairs WHERE study_id = :study AND better IS NOT NULL)",
}


def served_counts(db: Database, study_id: int, rater_id: int, unit: str) -> tuple[int, int]:
    """(items, gold items) of a unit served to a rater so far (released leases do not
    count: the rater was given another item instead)."""
    row = db.execute(
        f"SELECT COUNT(*), COALESCE(SUM({_GOLD_ITEM[unit]}), 0) FROM assignments a"
        " WHERE a.study_id = :study AND a.rater_id = :rater AND a.unit = :unit"
        " AND a.status != 'released'",
        {"study": study_id, "rater": rater_id, "unit": unit}).fetchone()
    return int(row[0]), int(row[1])


def skipped_count(db: Database, study_id: int, rater_id: int) -> int:
    """Items (of every unit) a rater has skipped in a study and not done since."""
    return int(db.execute("SELECT COUNT(*) FROM assignments WHERE study_id = ? AND"
                          " rater_id = ? AND status = 'skipped'",
                          [study_id, rater_id]).fetchone()[0])


def slot_free(db: Database, study_id: int, rater_id: int, unit: str, item_id: int, k: int, *,
              cutoff: str) -> bool:
    """Whether a rater may keep an item whose lease ran out: a gold item, or one with fewer
    than ``k`` slots held by other raters."""
    if is_gold(db, unit, item_id):
        return True
    held = db.execute(
        "SELECT COUNT(*) FROM assignments WHERE study_id = ? AND unit = ? AND item_id = ? AND"
        " rater_id != ? AND (status = 'done' OR (status = 'open' AND opened_at >= ?))",
        [study_id, unit, item_id, rater_id, cutoff]).fetchone()[0]
    return int(held) < k


def is_gold(db: Database, unit: str, item_id: int) -> bool:
    """Whether an image (a ranking set, a pair) is an attention check given to every rater."""
    if unit == "image":
        sql = "SELECT 1 FROM gold WHERE image_id = ? AND unit = 'image' LIMIT 1"
    elif unit == "pair":
        sql = "SELECT 1 FROM pairs WHERE id = ? AND better IS NOT NULL"
    else:
        sql = ("SELECT 1 FROM gold g JOIN images i ON i.id = g.image_id WHERE i.prompt_id = ?"
               " AND g.unit = 'prompt' LIMIT 1")
    return db.execute(sql, [item_id]).fetchone() is not None


def release(db: Database, study_id: int, rater_id: int, unit: str, item_id: int) -> None:
    """Give up an open assignment whose lease ran out and whose slot others took."""
    db.execute("UPDATE assignments SET status = 'released' WHERE study_id = ? AND rater_id = ?"
               " AND unit = ? AND item_id = ? AND status = 'open'",
               [study_id, rater_id, unit, item_id])


def claim(db: Database, study_id: int, rater_id: int, unit: str, item_id: int) -> Assignment:
    """Open (or re-open) an assignment; the time on item starts now."""
    stamp = now()
    db.execute(
        "INSERT INTO assignments (study_id, rater_id, unit, item_id, status, opened_at)"
        " VALUES (?, ?, ?, ?, 'open', ?) ON CONFLICT (study_id, rater_id, unit, item_id)"
        " DO UPDATE SET status = 'open', opened_at = excluded.opened_at, done_at = NULL",
        [study_id, rater_id, unit, item_id, stamp],
    )
    found = get_assignment(db, study_id, rater_id, unit, item_id)
    if found is None:  # pragma: no cover - the upsert above guarantees a row
        raise RuntimeError("assignment vanished")
    return found


def close(db: Database, study_id: int, rater_id: int, unit: str, item_id: int,
          status: str) -> None:
    """Mark an assignment done or skipped (creating it if the item was never served)."""
    stamp = now()
    db.execute(
        "INSERT INTO assignments (study_id, rater_id, unit, item_id, status, opened_at, done_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (study_id, rater_id, unit, item_id)"
        " DO UPDATE SET status = excluded.status, done_at = excluded.done_at",
        [study_id, rater_id, unit, item_id, status, stamp, stamp],
    )


def add_mark(db: Database, study_id: int, rater_id: int, unit: str, item_id: int, kind: str,
             note: str) -> None:
    """Record a skip (with its reason) or a flag."""
    db.execute(
        "INSERT INTO marks (study_id, rater_id, unit, item_id, kind, note, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)", [study_id, rater_id, unit, item_id, kind, note, now()],
    )


def notes(db: Database, study_id: int, rater_id: int, unit: str, item_id: int,
          kind: str) -> list[str]:
    """The notes of one rater's marks of one kind on one item, oldest first."""
    return [r[0] for r in db.execute(
        "SELECT note FROM marks WHERE study_id = ? AND rater_id = ? AND unit = ? AND"
        " item_id = ? AND kind = ? ORDER BY id", [study_id, rater_id, unit, item_id, kind])]


def skipped_items(db: Database, study_id: int, rater_id: int, unit: str) -> list[dict]:
    """Items a rater skipped (and has not done since), newest first, with the last reason."""
    return list(db.query(
        "SELECT a.item_id, a.done_at AS at, (SELECT m.note FROM marks m WHERE"
        " m.study_id = a.study_id AND m.rater_id = a.rater_id AND m.unit = a.unit AND"
        " m.item_id = a.item_id AND m.kind = 'skip' ORDER BY m.id DESC LIMIT 1) AS reason"
        " FROM assignments a WHERE a.study_id = ? AND a.rater_id = ? AND a.unit = ? AND"
        " a.status = 'skipped' ORDER BY a.done_at DESC, a.id DESC",
        [study_id, rater_id, unit]))


def marks(db: Database, study_id: int) -> list[dict]:
    """All skips and flags of a study, newest first, with the rater and what was marked:
    ``unit, item_id, kind, note, created_at, rater, prompt_id, prompt, model`` (None for a
    ranking set or a pair), ``path`` (of the image; None for a ranking set or a pair)."""
    return list(db.query(
        "SELECT m.unit, m.item_id, m.kind, m.note, m.created_at, r.name AS rater,"
        " p.key AS prompt_id, p.text AS prompt, md.name AS model, i.path FROM marks m"
        " JOIN raters r ON r.id = m.rater_id"
        " LEFT JOIN images i ON m.unit = 'image' AND i.id = m.item_id"
        " LEFT JOIN models md ON md.id = i.model_id"
        " LEFT JOIN pairs pr ON m.unit = 'pair' AND pr.id = m.item_id"
        " LEFT JOIN prompts p ON p.id = CASE m.unit WHEN 'image' THEN i.prompt_id"
        " WHEN 'pair' THEN pr.prompt_id ELSE m.item_id END"
        " WHERE m.study_id = ? ORDER BY m.id DESC", [study_id]))


def status_counts(db: Database, study_id: int, rater_id: int, unit: str) -> dict[str, int]:
    """How many items a rater has open, done and skipped."""
    counts = {"open": 0, "done": 0, "skipped": 0}
    for status, n in db.execute(
        "SELECT status, COUNT(*) FROM assignments WHERE study_id = ? AND rater_id = ? AND"
        " unit = ? GROUP BY status", [study_id, rater_id, unit],
    ).fetchall():
        counts[status] = n
    return counts


def coverage_summary(db: Database, study_id: int, unit: str) -> list[dict]:
    """Per rater: open, done and skipped counts (the researcher's progress table)."""
    return list(db.query(
        "SELECT r.name AS rater, SUM(a.status = 'done') AS done, SUM(a.status = 'open') AS open,"
        " SUM(a.status = 'skipped') AS skipped, SUM(a.status = 'released') AS released"
        " FROM assignments a JOIN raters r"
        " ON r.id = a.rater_id WHERE a.study_id = ? AND a.unit = ? GROUP BY r.name"
        " ORDER BY r.name", [study_id, unit]))
