"""Failed researcher sign-ins, kept in the database so that every app process counts the
same attempts (concord.services.auth limits them per client and in all)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlite_utils import Database

from concord.store.db import transaction


@dataclass(frozen=True, slots=True)
class Failures:
    """Failures counted before an attempt: the client's and everyone's, each with the time
    of its oldest (None when there is none)."""

    mine: int
    everyone: int
    my_oldest: float | None
    oldest: float | None


def reserve(db: Database, client: str, since: float, now: float, *, mine: int,
            everyone: int) -> Failures:
    """Count the failures since ``since``; unless the client has ``mine`` of them or all
    clients together ``everyone``, record this attempt as one, in the same transaction:
    attempts that run at once are all counted, however many processes serve them (a
    successful one is taken back by :func:`forget`). A refused attempt is not recorded,
    and failures older than ``since`` are deleted, so the table stays small."""
    with transaction(db):
        db.execute("DELETE FROM signin_failures WHERE at < ?", [since])
        found = Failures(*db.execute(
            "SELECT COUNT(CASE WHEN client = ? THEN 1 END), COUNT(*),"
            " MIN(CASE WHEN client = ? THEN at END), MIN(at) FROM signin_failures",
            [client, client]).fetchone())
        if found.mine < mine and found.everyone < everyone:
            db.execute("INSERT INTO signin_failures (client, at) VALUES (?, ?)", [client, now])
    return found


def forget(db: Database, client: str) -> None:
    """A successful sign-in: the client's failures (this attempt's included) no longer
    count."""
    with transaction(db):
        db.execute("DELETE FROM signin_failures WHERE client = ?", [client])


def clear(db: Database) -> int:
    """Forget every failure (``reset-secret``); returns how many there were."""
    with transaction(db):
        return db.execute("DELETE FROM signin_failures").rowcount
