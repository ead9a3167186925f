"""Assignments (what a rater is working on), skips and flags.

A unit is an ``image`` (scoring) or a ``prompt`` (ranking). An assignment is opened
when an item is served and closed as ``done`` or ``skipped``; its ``opened_at`` is the
server-side start of the time on item.
"""

from __future__ import annotations

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


def open_assignment(db: Database, study_id: int, rater_id: int, unit: str) -> Assignment | None:
    """The item a rater has open (served but not finished), if any."""
    row = db.execute(
        "SELECT id, item_id, status, opened_at FROM assignments WHERE study_id = ? AND"
        " rater_id = ? AND unit = ? AND status = 'open' ORDER BY opened_at DESC, id DESC LIMIT 1",
        [study_id, rater_id, unit],
    ).fetchone()
    return Assignment(*row) if row else None


def open_items(db: Database, study_id: int, rater_id: int, unit: str) -> list[int]:
    """Items a rater has open, most recently opened first."""
    return [r[0] for r in db.execute(
        "SELECT item_id FROM assignments WHERE study_id = ? AND rater_id = ? AND unit = ? AND"
        " status = 'open' ORDER BY opened_at DESC, id DESC", [study_id, rater_id, unit])]


def get_assignment(db: Database, study_id: int, rater_id: int, unit: str,
                   item_id: int) -> Assignment | None:
    """The assignment of one item to one rater, if it was ever served."""
    row = db.execute(
        "SELECT id, item_id, status, opened_at FROM assignments WHERE study_id = ? AND"
        " rater_id = ? AND unit = ? AND item_id = ?", [study_id, rater_id, unit, item_id],
    ).fetchone()
    return Assignment(*row) if row else None


# A per-rater permutation of item ids computed inside SQLite, so the next item is found
# with ORDER BY ... LIMIT instead of ranking every candidate in Python: for a prime P,
# x -> (x + c) * m mod P is a bijection for any m in [1, P-1], and c and m depend on the
# rater and the study's seed. Every product stays below 2**62 (SQLite integers are 64-bit).
_P = 2_147_483_647


def order_params(seed: int, rater_id: int) -> tuple[int, int]:
    """(c, m) of the rater's permutation (see :func:`order_value`)."""
    c = (seed * 1_000_003 + rater_id * 7_919) % _P
    m = 1 + (rater_id * 2_654_435_761 + seed * 40_503 + 12_345) % (_P - 1)
    return c, m


def order_value(seed: int, rater_id: int, item_id: int) -> int:
    """The rater's pseudo-random position of an item (smaller comes first)."""
    c, m = order_params(seed, rater_id)
    return ((item_id + c) % _P) * m % _P


def _candidate_sql(unit: str, select: str, tail: str) -> str:
    if unit == "image":
        items = ("SELECT i.id AS item_id, EXISTS (SELECT 1 FROM gold g WHERE g.image_id = i.id"
                 " AND g.unit = 'image') AS gold FROM images i WHERE i.study_id = :study"
                 " AND i.path IS NOT NULL")
    elif unit == "prompt":
        items = ("SELECT p.id AS item_id, EXISTS (SELECT 1 FROM gold g JOIN images gi ON"
                 " gi.id = g.image_id WHERE gi.prompt_id = p.id AND g.unit = 'prompt') AS gold"
                 " FROM prompts p WHERE p.study_id = :study"
                 " AND p.rank_set = 1 AND (SELECT COUNT(*) FROM images i WHERE"
                 " i.prompt_id = p.id AND i.path IS NOT NULL) >= 2")
    else:
        raise ValueError(f"unknown unit {unit!r} (image or prompt)")
    return (
        "WITH cov AS (SELECT item_id, COUNT(*) AS n FROM assignments WHERE study_id = :study"
        " AND unit = :unit AND status IN ('open', 'done') GROUP BY item_id)"
        f" SELECT {select} FROM ({items}) it LEFT JOIN cov ON cov.item_id = it.item_id"
        " WHERE NOT EXISTS (SELECT 1 FROM assignments a WHERE a.study_id = :study AND"
        " a.rater_id = :rater AND a.unit = :unit AND a.item_id = it.item_id)"
        f" AND (it.gold OR COALESCE(cov.n, 0) < :k){tail}"
    )


def candidates(db: Database, study_id: int, rater_id: int, unit: str, k: int, *,
               seed: int = 0, limit: int = 1) -> list[Candidate]:
    """The next items for this rater, best first: never served to them, coverage below
    ``k`` (gold items always), least covered first, then the rater's own shuffled order.

    Coverage counts open and done assignments of other raters, so two raters asking at
    the same moment do not both take the last open slot of an image.
    """
    c, m = order_params(seed, rater_id)
    sql = _candidate_sql(unit, "it.item_id, COALESCE(cov.n, 0) AS coverage, it.gold",
                         " ORDER BY coverage, ((it.item_id + :c) % :p) * :m % :p LIMIT :limit")
    params = {"study": study_id, "unit": unit, "rater": rater_id, "k": k, "c": c, "m": m,
              "p": _P, "limit": limit}
    return [Candidate(r[0], r[1], bool(r[2])) for r in db.execute(sql, params).fetchall()]


def count_candidates(db: Database, study_id: int, rater_id: int, unit: str, k: int) -> int:
    """How many items this rater could still be given."""
    sql = _candidate_sql(unit, "COUNT(*)", "")
    params = {"study": study_id, "unit": unit, "rater": rater_id, "k": k}
    return int(db.execute(sql, params).fetchone()[0])


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


def marks(db: Database, study_id: int) -> list[dict]:
    """All skips and flags of a study with rater names."""
    return list(db.query(
        "SELECT m.unit, m.item_id, m.kind, m.note, m.created_at, r.name AS rater FROM marks m"
        " JOIN raters r ON r.id = m.rater_id WHERE m.study_id = ? ORDER BY m.id", [study_id]))


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
        " SUM(a.status = 'skipped') AS skipped FROM assignments a JOIN raters r"
        " ON r.id = a.rater_id WHERE a.study_id = ? AND a.unit = ? GROUP BY r.name"
        " ORDER BY r.name", [study_id, unit]))
