"""Study links for self sign-up and the participants who joined through them.

A link's token is random and only its SHA-256 hash is stored (as for invite tokens). A
participant is one rater per (study, platform, participant id): the platform's own id
(Prolific ``PROLIFIC_PID``, MTurk ``workerId``) is the identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from concord.store.db import dumps, inserted_id, loads, now
from concord.store.raters import hash_token


@dataclass(frozen=True, slots=True)
class Link:
    """A study link row (the token itself is never stored)."""

    id: int
    study_id: int
    platform: str
    completion_code: str | None
    completion_url: str | None
    screenout_code: str | None
    screenout_url: str | None
    created_at: str
    revoked_at: str | None
    strict_ids: bool = True  # participant ids must have the platform's format

    @property
    def active(self) -> bool:
        """Whether new participants may still join through it."""
        return self.revoked_at is None


_LINK_COLUMNS = ("id, study_id, platform, completion_code, completion_url, screenout_code,"
                 " screenout_url, created_at, revoked_at, strict_ids")


def _link(row: tuple) -> Link:
    id_, study_id, platform, c_code, c_url, s_code, s_url, created, revoked, strict = row
    return Link(id_, study_id, platform, c_code, c_url, s_code, s_url, created, revoked,
                bool(strict))


def insert_link(db: Database, study_id: int, token: str, platform: str,
                codes: dict[str, str | None], *, strict_ids: bool = True) -> Link:
    """Store a new link (inside the caller's transaction)."""
    cur = db.execute(
        "INSERT INTO crowd_links (study_id, token_hash, platform, completion_code,"
        " completion_url, screenout_code, screenout_url, created_at, strict_ids)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        [study_id, hash_token(token), platform, codes.get("completion_code"),
         codes.get("completion_url"), codes.get("screenout_code"), codes.get("screenout_url"),
         now(), int(strict_ids)])
    found = link_by_id(db, inserted_id(cur))
    if found is None:  # pragma: no cover - just inserted
        raise RuntimeError("link vanished")
    return found


def link_by_id(db: Database, link_id: int) -> Link | None:
    """The link with this id."""
    row = db.execute(f"SELECT {_LINK_COLUMNS} FROM crowd_links WHERE id = ?",
                     [link_id]).fetchone()
    return _link(row) if row else None


def link_for_token(db: Database, token: str) -> Link | None:
    """The link a token belongs to (revoked or not), None for an unknown token."""
    row = db.execute(f"SELECT {_LINK_COLUMNS} FROM crowd_links WHERE token_hash = ?",
                     [hash_token(token)]).fetchone()
    return _link(row) if row else None


def links(db: Database, study_id: int) -> list[Link]:
    """Every link of a study, newest first."""
    return [_link(r) for r in db.execute(
        f"SELECT {_LINK_COLUMNS} FROM crowd_links WHERE study_id = ? ORDER BY id DESC",
        [study_id]).fetchall()]


def revoke_links(db: Database, study_id: int) -> int:
    """Revoke every active link of a study; returns how many were active."""
    return db.execute("UPDATE crowd_links SET revoked_at = ? WHERE study_id = ? AND"
                      " revoked_at IS NULL", [now(), study_id]).rowcount


def rater_name(platform: str, participant_id: str, study_id: int) -> str:
    """The rater name of a participant: one rater per study and platform id."""
    return f"{platform}:{participant_id}#{study_id}"


@dataclass(frozen=True, slots=True)
class Participant:
    """A rater who joined through a study link."""

    study_id: int
    platform: str
    participant_id: str
    rater_id: int
    link_id: int | None
    params: dict[str, Any]
    joined_at: str


_PART_COLUMNS = "study_id, platform, participant_id, rater_id, link_id, params, joined_at"


def _participant(row: tuple) -> Participant:
    return Participant(row[0], row[1], row[2], row[3], row[4], loads(row[5], {}), row[6])


def find_participant(db: Database, study_id: int, platform: str,
                     participant_id: str) -> Participant | None:
    """The rater of a platform id in a study, if they joined before."""
    row = db.execute(f"SELECT {_PART_COLUMNS} FROM crowd_participants WHERE study_id = ?"
                     " AND platform = ? AND participant_id = ?",
                     [study_id, platform, participant_id]).fetchone()
    return _participant(row) if row else None


def find_participant_any(db: Database, study_id: int,
                         participant_id: str) -> Participant | None:
    """The participant with this id in a study, through a link of any platform."""
    row = db.execute(f"SELECT {_PART_COLUMNS} FROM crowd_participants WHERE study_id = ?"
                     " AND participant_id = ? ORDER BY joined_at LIMIT 1",
                     [study_id, participant_id]).fetchone()
    return _participant(row) if row else None


def participant_of(db: Database, rater_id: int) -> Participant | None:
    """How a rater joined, None for a rater with a personal invite."""
    row = db.execute(f"SELECT {_PART_COLUMNS} FROM crowd_participants WHERE rater_id = ?",
                     [rater_id]).fetchone()
    return _participant(row) if row else None


def add_participant(db: Database, study_id: int, platform: str, participant_id: str,
                    rater_id: int, link_id: int, params: dict[str, str]) -> None:
    """Record a new participant (inside the caller's transaction)."""
    stamp = now()
    db.execute("INSERT INTO crowd_participants (study_id, platform, participant_id, rater_id,"
               " link_id, params, joined_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               [study_id, platform, participant_id, rater_id, link_id, dumps(params), stamp,
                stamp])


def touch_participant(db: Database, rater_id: int) -> None:
    """A participant came back (the parameters of their first visit stay; every session's
    are in ``crowd_sessions``)."""
    db.execute("UPDATE crowd_participants SET last_seen_at = ? WHERE rater_id = ?",
               [now(), rater_id])


def holds_token(db: Database, rater_id: int, token: str) -> bool:
    """Whether ``token`` is this rater's personal token (only its hash is stored)."""
    return db.execute("SELECT 1 FROM raters WHERE id = ? AND token_hash = ?",
                      [rater_id, hash_token(token)]).fetchone() is not None


def participant_by_token(db: Database, study_id: int, token: str) -> Participant | None:
    """The participant of a study whose personal token this is."""
    row = db.execute(f"SELECT {', '.join('p.' + c for c in _PART_COLUMNS.split(', '))}"
                     " FROM crowd_participants p JOIN raters r ON r.id = p.rater_id"
                     " WHERE p.study_id = ? AND r.token_hash = ?",
                     [study_id, hash_token(token)]).fetchone()
    return _participant(row) if row else None


def participant_count(db: Database, study_id: int) -> int:
    """Participants of a study whose participation the researcher has not ended."""
    return int(db.execute("SELECT COUNT(*) FROM crowd_participants p JOIN raters r ON"
                          " r.id = p.rater_id WHERE p.study_id = ? AND r.revoked_at IS NULL",
                          [study_id]).fetchone()[0])
