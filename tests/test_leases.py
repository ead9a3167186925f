"""Random order per rater, leases that expire, drop-outs and the race for the last slot."""

from __future__ import annotations

import datetime as dt
import itertools
import threading

import pytest

from concord.errors import AuthError
from concord.services.labelling import ranking, rating
from concord.store import raters as rater_store
from concord.store import studies as study_store
from concord.store import work
from concord.store.db import open_db
from tests.foundation_helpers import study_with_raters
from tests.helpers import target_of

pytestmark = pytest.mark.both_engines


def _study(tmp_path, db, **kw):
    """Study 'ls' (2 prompts × a, b; k=1) with raters r0, r1; their ids."""
    return study_with_raters(tmp_path, db, "ls", **{"prompts": 2, "k": 1, "raters": 2, **kw})


def _age(db, rater_id: int, minutes: float) -> None:
    """Move a rater's open assignments ``minutes`` into the past (they left the tab)."""
    stamp = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=minutes)).isoformat(
        timespec="microseconds")
    db.execute("UPDATE assignments SET opened_at = ? WHERE rater_id = ? AND status = 'open'",
               [stamp, rater_id])
    db.conn.commit()


def test_consecutive_items_from_one_model_are_as_rare_as_chance(tmp_path, db):
    # 50 prompts × 8 models; a linear congruential order gave one rater 90% of consecutive
    # pairs from one model. With a keyed hash every rater stays near chance.
    models = tuple(f"m{i}" for i in range(8))
    raters = _study(tmp_path, db, prompts=50, models=models, k=60, raters=60)
    study = study_store.get_study(db, "ls")
    model_of = dict(db.execute("SELECT i.id, m.name FROM images i JOIN models m"
                               " ON m.id = i.model_id").fetchall())
    chance = 49 / 399  # another image of the same model among the 399 left
    rates = []
    for r in raters:
        order = work.candidates(db, study.id, r, "image", study.k, limit=10_000,
                                cutoff=work.lease_cutoff(30))
        labels = [model_of[c.item_id] for c in order]
        assert len(labels) == 400
        rates.append(sum(x == y for x, y in itertools.pairwise(labels)) / 399)
    assert max(rates) <= 1.5 * chance
    assert sum(rates) / len(rates) >= chance / 1.5  # and not anti-correlated either


def test_an_abandoned_item_goes_to_someone_else_after_the_lease(tmp_path, db):
    a, b = _study(tmp_path, db, prompts=1, models=("only",), k=1)
    left = rating.next_item(db, "ls", a)
    assert rating.next_item(db, "ls", b) is None  # the one slot is leased to a
    _age(db, a, 31)
    taken = rating.next_item(db, "ls", b)
    assert taken is not None and taken.image_id == left.image_id


def test_a_returning_rater_gets_their_item_back_while_it_is_free(tmp_path, db):
    a, _ = _study(tmp_path, db, prompts=2, k=1)
    first = rating.next_item(db, "ls", a)
    _age(db, a, 120)
    again = rating.next_item(db, "ls", a)
    assert again.image_id == first.image_id
    opened = db.execute("SELECT opened_at FROM assignments WHERE rater_id = ? AND item_id = ?",
                        [a, first.image_id]).fetchone()[0]
    assert dt.datetime.fromisoformat(opened) > dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)


def test_a_returning_rater_whose_item_was_taken_moves_on(tmp_path, db):
    a, b = _study(tmp_path, db, prompts=2, k=1)
    first = rating.next_item(db, "ls", a)
    _age(db, a, 31)
    # b takes a's expired slot (b's order may start elsewhere: rate until b reaches it)
    while (item := rating.next_item(db, "ls", b)) is not None:
        rating.submit(db, "ls", b, item.image_id, {"SC": 1, "PR": 1},
                      submission=item.submission)
    back = rating.next_item(db, "ls", a)
    assert back is None  # every slot (k = 1) is held by b's done ratings
    status = db.execute("SELECT status FROM assignments WHERE rater_id = ? AND item_id = ?",
                        [a, first.image_id]).fetchone()[0]
    assert status == "released"
    # A late submit from the tab a left open is still stored (never lose a rater's work).
    stored = rating.submit(db, "ls", a, first.image_id, {"SC": 2, "PR": 2},
                           submission=first.submission)
    assert stored.stored


def test_two_raters_race_for_the_last_slot(tmp_path, db):
    raters = _study(tmp_path, db, prompts=1, models=("only",), k=1, raters=8)
    path = target_of(db)
    got: dict[int, object] = {}
    barrier = threading.Barrier(len(raters))

    def ask(rater_id: int) -> None:
        conn = open_db(path, migrate=False)
        barrier.wait()
        got[rater_id] = rating.next_item(conn, "ls", rater_id)
        conn.close()

    threads = [threading.Thread(target=ask, args=(r,)) for r in raters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [r for r, item in got.items() if item is not None]
    assert len(winners) == 1
    held = db.execute("SELECT COUNT(*) FROM assignments WHERE status = 'open'").fetchone()[0]
    assert held == 1


def test_lease_length_is_a_study_setting(tmp_path, db):
    a, b = _study(tmp_path, db, prompts=1, models=("only",), k=1, extra="lease_minutes: 5\n")
    rating.next_item(db, "ls", a)
    _age(db, a, 6)
    assert rating.next_item(db, "ls", b) is not None


def test_ranking_sets_are_leased_too(tmp_path, db):
    a, b = _study(tmp_path, db, prompts=1, models=("x", "y"), k=1, protocol="rank")
    assert ranking.next_set(db, "ls", a) is not None
    assert ranking.next_set(db, "ls", b) is None
    _age(db, a, 31)
    assert ranking.next_set(db, "ls", b) is not None


def test_a_revoked_rater_can_store_nothing(tmp_path, db):
    a, _ = _study(tmp_path, db)
    item = rating.next_item(db, "ls", a)
    rater_store.revoke(db, "r0")
    with pytest.raises(AuthError, match="revoked"):
        rating.submit(db, "ls", a, item.image_id, {"SC": 1, "PR": 1},
                      submission=item.submission)
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 0
    with pytest.raises(AuthError):
        rating.next_item(db, "ls", a)
