"""Researcher sessions kept across reloads and tabs (concord.services.research_session):
the SHA-256 of each session's token, the secret version it belongs to, its expiry."""

from __future__ import annotations

from sqlite_utils import Database

from concord.store.db import transaction


def add(db: Database, token_hash: str, version: str, created: float, expires: float) -> None:
    """Keep a new session; sessions expired by ``created`` are removed (the table stays
    small)."""
    with transaction(db):
        db.execute("DELETE FROM research_sessions WHERE expires_at <= ?", [created])
        db.execute("INSERT INTO research_sessions (token_hash, secret_version, created_at,"
                   " expires_at) VALUES (?, ?, ?, ?)", [token_hash, version, created, expires])


def find(db: Database, token_hash: str) -> tuple[str, float] | None:
    """(secret version, expiry) of the session with this token hash, if there is one."""
    row = db.execute("SELECT secret_version, expires_at FROM research_sessions"
                     " WHERE token_hash = ?", [token_hash]).fetchone()
    return (row[0], row[1]) if row else None


def drop(db: Database, token_hash: str) -> None:
    """End one session (sign-out)."""
    with transaction(db):
        db.execute("DELETE FROM research_sessions WHERE token_hash = ?", [token_hash])


def drop_all(db: Database) -> int:
    """End every session (a new secret, a restore); returns how many there were."""
    with transaction(db):
        return db.execute("DELETE FROM research_sessions").rowcount
