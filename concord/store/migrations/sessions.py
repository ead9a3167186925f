"""Migrations of the researcher-session and questionnaire branch, numbered from 1401."""

from __future__ import annotations

from sqlite_utils import Database

from concord.store.migrations.script import run_script

# A signed-in researcher's browser keeps a random token in a cookie; only its SHA-256 is
# kept here, with the version of the researcher secret it was made under (a new secret
# ends every session) and when it expires. Not report data: no change triggers, not
# fingerprinted (concord.store.report_cache keeps it with its own tables).
_RESEARCH_SESSIONS = """
CREATE TABLE research_sessions (
    id INTEGER PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    secret_version TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX research_sessions_expires ON research_sessions(expires_at)
"""


def m1401_research_sessions(db: Database) -> None:
    """Researcher sessions that outlive a browser tab (a reload, a new tab, a bookmark)."""
    run_script(db, _RESEARCH_SESSIONS)
