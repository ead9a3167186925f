"""Visits through study links (``crowd_joins``) and the platform sessions of each
participant (``crowd_sessions``).

Every visit is logged with its outcome and a keyed hash of the client's address (the key
is random, made once per database, ``crowd_salt``): joins per minute are counted from
it, and many participant ids from one client are shown to the researcher; the address
itself is never stored. A session row is added for each new set of platform parameters
(a new Prolific SESSION_ID, a new MTurk assignment): none is ever overwritten.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

from sqlite_utils import Database

from concord.store.db import dumps, loads, now

OUTCOMES = ("joined", "resumed", "refused", "full", "busy", "invalid")


def client_key(db: Database, address: str | None) -> str | None:
    """A keyed hash (16 hex digits) of a client address; None without an address."""
    if not isinstance(address, str) or not address:
        return None
    row = db.execute("SELECT salt FROM crowd_salt WHERE id = 1").fetchone()
    key = bytes(row[0]) if row else b""
    return hashlib.blake2b(address.encode(), key=key[:64], digest_size=8).hexdigest()


def log(db: Database, study_id: int, link_id: int | None, participant_id: str | None,
        client: str | None, outcome: str) -> None:
    """Record one visit through a study link and what came of it."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown join outcome {outcome!r}")
    db.execute("INSERT INTO crowd_joins (study_id, link_id, participant_id, client, outcome,"
               " at) VALUES (?, ?, ?, ?, ?, ?)",
               [study_id, link_id, participant_id, client, outcome, now()])


def joined_since(db: Database, study_id: int, seconds: float,
                 client: str | None = None) -> int:
    """New participants of a study in the last ``seconds`` (from one client, if given)."""
    since = (dt.datetime.fromisoformat(now()) - dt.timedelta(seconds=seconds)).isoformat(
        timespec="microseconds")
    sql = "SELECT COUNT(*) FROM crowd_joins WHERE study_id = ? AND outcome = 'joined' AND at >= ?"
    args: list = [study_id, since]
    if client is not None:
        sql += " AND client = ?"
        args.append(client)
    return int(db.execute(sql, args).fetchone()[0])


def add_session(db: Database, study_id: int, rater_id: int, link_id: int | None,
                params: dict[str, str], client: str | None) -> bool:
    """Keep a participant's platform parameters unless this set was seen before; returns
    whether a session row was added."""
    text = dumps(params)
    seen = db.execute("SELECT 1 FROM crowd_sessions WHERE rater_id = ? AND params = ?",
                      [rater_id, text]).fetchone()
    if seen is not None:
        return False
    db.execute("INSERT INTO crowd_sessions (study_id, rater_id, link_id, params, client,"
               " started_at) VALUES (?, ?, ?, ?, ?, ?)",
               [study_id, rater_id, link_id, text, client, now()])
    return True


def sessions(db: Database, rater_id: int) -> list[dict[str, Any]]:
    """A participant's platform parameters per session, oldest first."""
    return [loads(r[0], {}) for r in db.execute(
        "SELECT params FROM crowd_sessions WHERE rater_id = ? ORDER BY id", [rater_id])]


def had_session(db: Database, rater_id: int, param: str, value: str) -> bool:
    """Whether the participant was seen before with this platform session value."""
    return any(s.get(param) == value for s in sessions(db, rater_id))


def refused_counts(db: Database, study_id: int) -> dict[str, int]:
    """Refused visits per participant id (their id tried without their proof)."""
    return {r[0]: r[1] for r in db.execute(
        "SELECT participant_id, COUNT(*) FROM crowd_joins WHERE study_id = ? AND"
        " outcome = 'refused' GROUP BY participant_id", [study_id]).fetchall()}


def ids_per_client(db: Database, study_id: int) -> dict[str, int]:
    """Per participant id: the most participant ids any client they came from used (1:
    their client brought only them)."""
    rows = db.execute(
        "WITH per AS (SELECT client, COUNT(DISTINCT participant_id) AS n FROM crowd_joins"
        " WHERE study_id = :s AND client IS NOT NULL AND participant_id IS NOT NULL"
        " GROUP BY client)"
        " SELECT j.participant_id, MAX(per.n) FROM crowd_joins j JOIN per ON"
        " per.client = j.client WHERE j.study_id = :s AND j.participant_id IS NOT NULL"
        " GROUP BY j.participant_id", {"s": study_id}).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def busiest_clients(db: Database, study_id: int, at_least: int) -> list[tuple[str, int]]:
    """Clients that brought at least ``at_least`` participant ids, most first."""
    return [(r[0], int(r[1])) for r in db.execute(
        "SELECT client, COUNT(DISTINCT participant_id) AS n FROM crowd_joins WHERE"
        " study_id = ? AND client IS NOT NULL AND participant_id IS NOT NULL"
        " GROUP BY client HAVING COUNT(DISTINCT participant_id) >= ? ORDER BY n DESC, client",
        [study_id, at_least])]
