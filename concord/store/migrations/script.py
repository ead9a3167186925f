"""Running a migration's SQL script inside the migration's transaction."""

from __future__ import annotations

from sqlite_utils import Database


def run_script(db: Database, script: str) -> None:
    # sqlite3's executescript() commits first, which would break the
    # transaction the migration runs in; run statement by statement instead.
    for statement in script.split(";\n"):
        if statement.strip():
            db.execute(statement)
