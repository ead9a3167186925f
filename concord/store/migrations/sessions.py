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


# Answers to a study's questionnaire (concord.questionnaire), one row per question and
# revision (a part answered again adds revisions; nothing is overwritten); ``answer`` is
# JSON, NULL for an optional question left blank. No report reads them: no change
# triggers, not fingerprinted (concord.store.report_cache keeps them with its own tables).
_QUESTIONNAIRE = """
CREATE TABLE questionnaire_answers (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    rater_id INTEGER NOT NULL REFERENCES raters(id) ON DELETE CASCADE,
    part TEXT NOT NULL CHECK (part IN ('before', 'after')),
    question TEXT NOT NULL,
    answer TEXT,
    revision INTEGER NOT NULL CHECK (revision >= 1),
    submission TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (study_id, rater_id, question, revision),
    UNIQUE (submission, question)
);
CREATE INDEX questionnaire_answers_rater ON questionnaire_answers(study_id, rater_id, part)
"""


def m1402_questionnaire_answers(db: Database) -> None:
    """Answers to the questions before and after a study's items, with revisions."""
    run_script(db, _QUESTIONNAIRE)
