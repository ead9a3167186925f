"""Backup and restore of a PostgreSQL database while raters keep submitting
(concord.store.pg_backup): a backup is one consistent snapshot that restores; a restore
loses nothing a rater was told was saved (it is in the restored database or in the safety
copy); a restore that fails part-way leaves the database as it was.

The raters are threads of this process going through the rating service, each on its own
connection, as the app's pages are (tests/support/live_raters.py; the SQLite twin is
tests/test_restore_live.py)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from concord.errors import ConcordError
from concord.services import studies
from concord.services.labelling import rating
from concord.services.labelling.common import new_submission
from concord.store import backup as backup_store
from concord.store import open_db
from concord.store.db import transaction
from tests.foundation_helpers import DATA_TABLES, invited, make_folder_study, snapshot
from tests.support.live_raters import PROGRESS_WAIT_S, Raters, submissions_in

pytestmark = pytest.mark.postgres

RATERS = ("ann", "ben", "cat")
ROUNDS = 3


@pytest.fixture
def live(pg_server, database_at, tmp_path) -> tuple[str, dict[str, int]]:
    """A PostgreSQL database with study 's' (150 prompts × 2 models, k=3) and three invited
    raters; their ids by name."""
    url = database_at("live")
    db = open_db(url)
    try:
        studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=150, k=3))
        ids = {name: invited(db, "s", name) for name in RATERS}
    finally:
        db.close()
    return url, ids


@pytest.fixture
def engine() -> str:
    return "postgresql"


def _half_submissions(conn) -> list:
    """Submissions stored without both their criteria (a snapshot taken mid-transaction)."""
    return conn.execute("SELECT submission FROM ratings GROUP BY submission"
                        " HAVING COUNT(*) != 2").fetchall()


def _running(raters: Raters):
    for t in raters.threads:
        t.start()


def _stopped(raters: Raters) -> None:
    raters.stop.set()
    for t in raters.threads:
        t.join(timeout=PROGRESS_WAIT_S)


def test_a_backup_taken_while_raters_submit_is_one_snapshot_and_restores(live, database_at,
                                                                         tmp_path):
    url, ids = live
    raters = Raters(url, ids)
    _running(raters)
    taken: list[tuple[Path, list[str], backup_store.Contents]] = []
    try:
        for n in range(ROUNDS):
            raters.wait_for(len(raters.acked) + 15)  # raters are busy when it starts
            before = list(raters.acked)
            target = tmp_path / f"b{n}.db"
            db = open_db(url)
            try:
                taken.append((target, before, backup_store.backup(db, target)))
            finally:
                db.close()
    finally:
        _stopped(raters)
    assert raters.errors == [] and raters.messages == []
    for target, before, found in taken:
        in_file = submissions_in(target)
        assert set(before) <= in_file  # acknowledged before the backup: in it
        conn = sqlite3.connect(target)
        try:
            assert _half_submissions(conn) == []
            assert conn.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == \
                found.ratings == 2 * len(in_file)
        finally:
            conn.close()
    # The last backup restores into another PostgreSQL database row for row.
    target = taken[-1][0]
    copy = database_at("copy")
    open_db(copy).close()
    backup_store.restore(copy, target, confirm=True, beside=tmp_path / "copy")
    restored = open_db(copy)
    try:
        assert {r[0] for r in restored.execute("SELECT submission FROM ratings")} == \
            submissions_in(target)
        from_file = open_db(target)
        try:
            mine, theirs = snapshot(restored), snapshot(from_file)
        finally:
            from_file.close()
    finally:
        restored.close()
    differ = [t for t in DATA_TABLES if mine[t] != theirs[t]]
    assert differ == []


def test_no_acknowledged_rating_is_lost_by_restores_while_raters_submit(live, tmp_path):
    url, ids = live
    backup = tmp_path / "b.db"
    db = open_db(url)
    try:
        backup_store.backup(db, backup)
    finally:
        db.close()
    beside = tmp_path / "stem" / "live"
    raters = Raters(url, ids)
    _running(raters)
    restored = []
    try:
        for _ in range(ROUNDS):
            raters.wait_for(len(raters.acked) + 15)
            restored.append(backup_store.restore(url, backup, confirm=True, beside=beside))
        raters.wait_for(len(raters.acked) + 15)  # and they go on after the last one
    finally:
        _stopped(raters)
    assert raters.errors == []
    safety = [r.safety_copy for r in restored]
    assert sorted(safety) == sorted(beside.parent.glob("live.before-restore-*"))
    db = open_db(url)
    try:
        kept = {r[0] for r in db.execute("SELECT DISTINCT submission FROM ratings")}
    finally:
        db.close()
    kept = kept.union(*map(submissions_in, safety))
    lost = [s for s in raters.acked if s not in kept]
    assert lost == [], f"{len(lost)} of {len(raters.acked)} acknowledged ratings lost"
    assert all("never given to you" in m or "try again" in m for m in raters.messages), \
        raters.messages[:5]


def test_a_restore_that_fails_part_way_leaves_the_database_as_it_was(live, tmp_path):
    """The backup holds a row PostgreSQL refuses (SQLite stored text in an integer
    column): the restore has deleted the live rows and written the earlier tables when
    it meets it; the database is left as it was, and raters go on."""
    url, ids = live
    db = open_db(url)
    try:
        for name in RATERS[:2]:
            item = rating.next_item(db, "s", ids[name])
            rating.submit(db, "s", ids[name], item.image_id, {"SC": 1, "PR": 0},
                          submission=new_submission())
        backup = tmp_path / "b.db"
        backup_store.backup(db, backup)
        item = rating.next_item(db, "s", ids["cat"])
        rating.submit(db, "s", ids["cat"], item.image_id, {"SC": 0, "PR": 1},
                      submission="after-the-backup")
        conn = sqlite3.connect(backup)
        with conn:
            conn.execute("UPDATE ratings SET revision = 'two' WHERE id = (SELECT MAX(id)"
                         " FROM ratings)")
        conn.close()
        before = snapshot(db)
        with pytest.raises(ConcordError) as caught:
            backup_store.restore(url, backup, confirm=True, beside=tmp_path / "stem")
        said = str(caught.value)
        assert said.startswith("restore: the backup's table ratings:") and "bigint" in said
        assert "left as it was" in said and "\n" not in said
        assert snapshot(db) == before
        # Nothing is left locked: a rater's next submit is stored at once.
        done: list[bool] = []
        worker = threading.Thread(target=lambda: done.append(_one_submit(url, ids["ann"])))
        worker.start()
        worker.join(PROGRESS_WAIT_S)
        assert done == [True]
        with transaction(db):
            db.execute("INSERT INTO raters (name, created_at) VALUES ('later', 'now')")
    finally:
        db.close()


def _one_submit(url: str, rater_id: int) -> bool:
    db = open_db(url)
    try:
        item = rating.next_item(db, "s", rater_id)
        return rating.submit(db, "s", rater_id, item.image_id, {"SC": 1, "PR": 1},
                             submission=new_submission()).stored
    finally:
        db.close()
