"""Twenty raters submitting at once: zero lost, zero duplicated ratings (both engines)."""

from __future__ import annotations

import pytest

from concord.services import studies
from concord.store.db import open_db
from concord.store.raters import rater_for_token
from tests.helpers import make_folder_study
from tests.support import loadtest

pytestmark = pytest.mark.both_engines


def test_twenty_concurrent_raters_lose_and_duplicate_nothing(tmp_path, engine, database_at):
    # On PostgreSQL the twenty raters share a pool of fewer connections (loadtest borrows
    # one per step, as the app's script runs do).
    manifest = make_folder_study(tmp_path / "load", prompts=20, models=("a", "b", "c", "d"), k=3)
    db_path = database_at("load")
    db = open_db(db_path)
    studies.import_manifest(db, manifest)
    names = [f"r{i:02d}" for i in range(20)]
    invites = studies.invite(db, "load", names, "http://x")
    ids = [rater_for_token(db, i.url.split("token=")[1]).id for i in invites]
    result = loadtest.run(db_path, "load", ids, seconds=4)
    assert result.errors == []
    assert result.stored > 0
    assert result.replays > 0
    assert result.replays_stored == 0  # every replay was recognised
    assert result.duplicate_keys == 0
    assert result.missing_keys == 0  # every acknowledged rating is there, nothing else
    assert result.current_rows == 2 * result.stored
    assert result.max_raters_per_image <= 3
