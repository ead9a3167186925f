"""Migration m1201 on a database with a running crowd study: every participant keeps their
platform ids as a first session, links made before accept the ids they accepted then,
and a participant who comes back in the platform session they were seen in gets in."""

from __future__ import annotations

from concord.services import studies
from concord.services.crowd import links as crowd
from concord.store import raters as rater_store
from concord.store.db import now, open_db
from concord.store.migrations import migrations
from tests.crowd_helpers import make_crowd_study


def test_an_older_crowd_study_keeps_its_participants(tmp_path):
    path = tmp_path / "old.db"
    old = open_db(path, migrate=False)
    migrations.apply(old, stop_before="m1201_crowd_integrity")
    studies.import_manifest(old, make_crowd_study(tmp_path / "crowd"))
    stamp = now()
    old.execute("INSERT INTO crowd_links (study_id, token_hash, platform, created_at) VALUES"
                " (1, ?, 'mturk', ?)", [rater_store.hash_token("old-link"), stamp])
    old.execute("INSERT INTO raters (name, role, token_hash, created_at) VALUES"
                " ('mturk:W1#1', 'rater', ?, ?)", [rater_store.hash_token("old-token"), stamp])
    old.execute("INSERT INTO study_raters (study_id, rater_id, added_at) VALUES (1, 1, ?)",
                [stamp])
    old.execute("INSERT INTO crowd_participants (study_id, platform, participant_id, rater_id,"
                " link_id, params, joined_at, last_seen_at) VALUES (1, 'mturk', 'W1', 1, 1,"
                " '{\"assignmentId\":\"AS9\",\"hitId\":\"H1\"}', ?, ?)", [stamp, stamp])
    old.conn.commit()
    old.close()
    db = open_db(path)  # applies m1201
    assert db.execute("SELECT params FROM crowd_sessions").fetchall() == [
        ('{"assignmentId":"AS9","hitId":"H1"}',)]
    assert crowd.links(db, "crowd")[0].strict_ids is False  # as before: any id
    again = crowd.join(db, "old-link", {"workerId": "W1", "assignmentId": "AS9"})
    assert again.rater_id == 1 and not again.new
    rater_store.rater_for_token(db, again.token)
