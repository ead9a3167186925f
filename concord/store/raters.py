"""Raters, their invite tokens (only the hash is stored) and study membership."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from sqlite_utils import Database

from concord.errors import AuthError, NotFoundError
from concord.names import check_name
from concord.store.db import audit, inserted_id, now, transaction


@dataclass(frozen=True, slots=True)
class Rater:
    """A rater (or researcher) row."""

    id: int
    name: str
    role: str
    revoked: bool


def hash_token(token: str) -> str:
    """SHA-256 of an invite token: tokens are random, so no salt or slow hash is needed."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh URL-safe invite token (192 bits)."""
    return secrets.token_urlsafe(24)


def _row(r: dict) -> Rater:
    return Rater(r["id"], r["name"], r["role"], r["revoked_at"] is not None)


def get_rater(db: Database, name: str) -> Rater:
    """The rater called ``name``."""
    rows = list(db.query("SELECT * FROM raters WHERE name = ?", [name]))
    if not rows:
        raise NotFoundError(f"no rater named {name!r}")
    return _row(rows[0])


def ensure_rater(db: Database, name: str, role: str = "rater") -> Rater:
    """Get or create a rater without a token (used for imported ratings).

    Raises:
        ConcordError: a new rater's name is empty or not one line of visible text.
    """
    rows = list(db.query("SELECT * FROM raters WHERE name = ?", [name]))
    if rows:
        return _row(rows[0])
    check_name(name, "rater")
    cur = db.execute("INSERT INTO raters (name, role, created_at) VALUES (?, ?, ?) RETURNING id",
                     [name, role, now()])
    return Rater(inserted_id(cur), name, role, False)


def issue_token(db: Database, name: str, *, role: str = "rater", study_id: int | None = None,
                actor: str = "cli") -> str:
    """Create the rater if needed, give a new invite token, add them to a study.

    A new token replaces the old one (and lifts a revocation). Returns the token,
    which is shown once and never stored.
    """
    token = new_token()
    with transaction(db):
        rater = ensure_rater(db, name, role)
        db.execute("UPDATE raters SET token_hash = ?, revoked_at = NULL, role = ? WHERE id = ?",
                   [hash_token(token), role, rater.id])
        if study_id is not None:
            db.execute("INSERT INTO study_raters (study_id, rater_id, added_at)"
                       " VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [study_id, rater.id, now()])
        audit(db, actor, "issue_token", None, rater=name, role=role, study_id=study_id)
    return token


def set_token(db: Database, rater_id: int, token: str) -> None:
    """Give a rater this token (its hash); used for tokens derived from a study link."""
    db.execute("UPDATE raters SET token_hash = ? WHERE id = ? AND token_hash IS DISTINCT FROM ?",
               [hash_token(token), rater_id, hash_token(token)])


def revoke(db: Database, name: str, *, actor: str = "cli") -> None:
    """Revoke a rater's invite token; their ratings stay."""
    rater = get_rater(db, name)
    with transaction(db):
        db.execute("UPDATE raters SET revoked_at = ? WHERE id = ?", [now(), rater.id])
        audit(db, actor, "revoke", None, rater=name)


def rater_for_token(db: Database, token: str) -> Rater:
    """The rater an invite token belongs to; AuthError if unknown or revoked."""
    if not token:
        raise AuthError("no invite token given")
    rows = list(db.query("SELECT * FROM raters WHERE token_hash = ?", [hash_token(token)]))
    if not rows:
        raise AuthError("this invite link is not valid (or not known here any more)")
    rater = _row(rows[0])
    if rater.revoked:
        raise AuthError("this invite link has been revoked")
    return rater


def link_state(db: Database, rater_id: int) -> str:
    """``active``, ``revoked``, or ``unknown`` for a rater the database does not hold (one
    added after the backup it was restored from)."""
    row = db.execute("SELECT revoked_at FROM raters WHERE id = ?", [rater_id]).fetchone()
    return "unknown" if row is None else "revoked" if row[0] is not None else "active"


def is_revoked(db: Database, rater_id: int) -> bool:
    """Whether a rater's invite was revoked (an unknown id counts as revoked)."""
    row = db.execute("SELECT revoked_at FROM raters WHERE id = ?", [rater_id]).fetchone()
    return row is None or row[0] is not None


def add_to_study(db: Database, rater_id: int, study_id: int) -> None:
    """Assign a rater to a study."""
    with transaction(db):
        db.execute("INSERT INTO study_raters (study_id, rater_id, added_at)"
                   " VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [study_id, rater_id, now()])


def studies_of(db: Database, rater_id: int) -> list[int]:
    """Ids of the studies a rater is assigned to."""
    return [r["study_id"] for r in db.query(
        "SELECT study_id FROM study_raters WHERE rater_id = ? ORDER BY study_id", [rater_id])]


def list_raters(db: Database, study_id: int | None = None) -> list[dict]:
    """Raters (of one study, or all) with ``has_link`` (an invite was issued), their
    studies, and (in that study, or in all) ``rated_images`` (images with a current rating
    of theirs), ``rating_values`` (one per image and criterion: SC and PR count apart) and
    ``rankings`` (one per prompt and criterion)."""
    in_study = "" if study_id is None else " AND c.study_id = :study"
    sql = (
        "SELECT r.id, r.name, r.role, r.created_at, r.revoked_at,"
        " r.token_hash IS NOT NULL AS has_link,"
        " (SELECT group_concat(s.name, ', ') FROM study_raters sr JOIN studies s"
        "  ON s.id = sr.study_id WHERE sr.rater_id = r.id) AS studies,"
        " (SELECT COUNT(DISTINCT c.image_id) FROM current_ratings c WHERE c.rater_id = r.id"
        f"{in_study}) AS rated_images,"
        f" (SELECT COUNT(*) FROM current_ratings c WHERE c.rater_id = r.id{in_study})"
        " AS rating_values,"
        f" (SELECT COUNT(*) FROM current_rankings c WHERE c.rater_id = r.id{in_study})"
        " AS rankings FROM raters r"
    )
    if study_id is None:
        return list(db.query(sql + " ORDER BY r.id"))
    return list(db.query(sql + " WHERE r.id IN (SELECT rater_id FROM study_raters"
                               " WHERE study_id = :study) ORDER BY r.id", {"study": study_id}))
