"""The pairwise protocol's service layer: k raters per pair, leases, gold pairs, the
left/right placement (random per rater, stored), replays, undo, edit and skip."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest

from concord.errors import AuthError, NotFoundError, RatingError
from concord.services import studies
from concord.services.labelling import pairs
from concord.store import studies as study_store
from concord.store.raters import rater_for_token
from tests.helpers import make_folder_study

pytestmark = pytest.mark.both_engines

MODELS = ("alpha", "beta", "gamma", "delta")


def _study(tmp_path, db, *, prompts=2, models=MODELS, k=1, raters=2, extra=""):
    manifest = make_folder_study(tmp_path / "pw", prompts=prompts, models=models, k=k,
                                 protocol="pair", extra=extra)
    studies.import_manifest(db, manifest)
    invites = studies.invite(db, "pw", [f"r{i}" for i in range(raters)], "http://x")
    return [rater_for_token(db, i.url.split("token=")[1]).id for i in invites]


def _judge_all(db, rater: int, outcome: str = "left") -> list[pairs.PairItem]:
    done = []
    while (item := pairs.next_pair(db, "pw", rater)) is not None:
        assert pairs.submit(db, "pw", rater, item, outcome).stored
        done.append(item)
    return done


def _judgments(db):
    return db.execute("SELECT pair_id, rater_id, left_image, right_image, outcome, action,"
                      " seconds FROM pair_judgments ORDER BY id").fetchall()


def test_each_pair_gets_k_raters_and_then_no_more(tmp_path, db):
    raters = _study(tmp_path, db, prompts=3, k=2, raters=3,
                    extra="pairs:\n  pairs_per_prompt: 2\n")
    done = {r: _judge_all(db, r) for r in raters}
    per_pair = Counter(item.pair_id for items in done.values() for item in items)
    assert len(per_pair) == 6 and set(per_pair.values()) == {2}
    assert sum(len(v) for v in done.values()) == 12
    assert all(s is not None and s >= 0 for *_, s in _judgments(db))


def test_raters_per_pair_overrides_raters_per_item(tmp_path, db):
    raters = _study(tmp_path, db, prompts=1, k=3, raters=2,
                    extra="pairs:\n  raters_per_pair: 1\n")
    first = _judge_all(db, raters[0])
    assert len(first) == 6 and pairs.next_pair(db, "pw", raters[1]) is None
    assert pairs.progress(db, "pw", raters[1]).assigned == 0


def test_gold_pairs_go_to_every_rater(tmp_path, db):
    (tmp_path / "pw").mkdir()
    (tmp_path / "pw" / "gold.csv").write_text(
        "prompt_id,model,criterion,expected\np0,alpha,pair,beta\n")
    raters = _study(tmp_path, db, prompts=2, k=1, raters=3,
                    extra="pairs:\n  pairs_per_prompt: 1\ngold: gold.csv\n")
    gold_id = db.execute("SELECT id FROM pairs WHERE better IS NOT NULL").fetchone()[0]
    for r in raters:
        assert gold_id in {item.pair_id for item in _judge_all(db, r)}


def _age(db, rater_id: int, minutes: float) -> None:
    stamp = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=minutes)).isoformat(
        timespec="microseconds")
    db.execute("UPDATE assignments SET opened_at = ? WHERE rater_id = ? AND status = 'open'",
               [stamp, rater_id])
    db.conn.commit()


def test_an_abandoned_pair_is_leased_to_another_rater(tmp_path, db):
    a, b = _study(tmp_path, db, prompts=1, models=("alpha", "beta"), k=1)
    held = pairs.next_pair(db, "pw", a)
    assert pairs.next_pair(db, "pw", b) is None  # the only slot is a's while the lease lasts
    _age(db, a, 31)
    taken = pairs.next_pair(db, "pw", b)
    assert taken is not None and taken.pair_id == held.pair_id
    assert pairs.next_pair(db, "pw", a) is None  # a's slot went to b
    assert pairs.submit(db, "pw", b, taken, "right").stored
    # a's tab was left open: a late submit is still stored (nothing a rater did is lost)
    assert pairs.submit(db, "pw", a, held, "left").stored


def test_placement_is_random_per_rater_and_stored_with_the_judgment(tmp_path, db):
    raters = _study(tmp_path, db, prompts=10, k=2, raters=2)
    shown = {}
    for r in raters:
        for item in _judge_all(db, r, "right"):
            shown[(r, item.pair_id)] = (item.left.image_id, item.right.image_id)
    rows = _judgments(db)
    assert len(rows) == 120
    for pair_id, rater, left, right, outcome, action, _ in rows:
        assert (left, right) == shown[(rater, pair_id)] and outcome == "right"
        assert action == "judge"
    pair_ab = dict(db.execute("SELECT id, image_a FROM pairs").fetchall())
    flipped = [left != pair_ab[p] for p, _, left, *_ in rows]
    assert 0.3 < sum(flipped) / len(flipped) < 0.7
    by_pair: dict[int, set] = {}
    for p, _, left, *_ in rows:
        by_pair.setdefault(p, set()).add(left)
    assert sum(len(v) == 2 for v in by_pair.values()) >= 10  # raters see different sides
    again = pairs.open_pair(db, "pw", raters[0], rows[0][0])
    assert (again.left.image_id, again.right.image_id) == shown[(raters[0], rows[0][0])]


def test_a_replayed_or_second_tab_submit_stores_once(tmp_path, db):
    (a,) = _study(tmp_path, db, prompts=1, raters=1)
    item = pairs.next_pair(db, "pw", a)
    other_tab = pairs.next_pair(db, "pw", a)
    assert other_tab.pair_id == item.pair_id and other_tab.submission != item.submission
    assert pairs.submit(db, "pw", a, item, "tie").stored
    assert not pairs.submit(db, "pw", a, item, "tie").stored
    assert not pairs.submit(db, "pw", a, other_tab, "left").stored
    assert [r[4] for r in _judgments(db)] == ["tie"]


def test_undo_takes_the_judgment_back_and_shows_the_pair_again(tmp_path, db):
    (a,) = _study(tmp_path, db, prompts=1, raters=1)
    first = pairs.next_pair(db, "pw", a)
    pairs.submit(db, "pw", a, first, "both_bad")
    second = pairs.next_pair(db, "pw", a)
    assert pairs.progress(db, "pw", a).done == 1
    assert pairs.undo_last(db, "pw", a) == first.pair_id
    back = pairs.next_pair(db, "pw", a)
    assert back.pair_id == first.pair_id and back.current == "both_bad"
    assert (back.left, back.right) == (first.left, first.right)
    assert pairs.progress(db, "pw", a).done == 0
    assert pairs.history(db, "pw", a) == []
    assert pairs.submit(db, "pw", a, back, "left").stored
    assert [r[4:6] for r in _judgments(db)] == [("both_bad", "judge"), (None, "undo"),
                                                ("left", "judge")]
    assert pairs.next_pair(db, "pw", a).pair_id == second.pair_id
    assert pairs.undo_last(db, "pw", a) == first.pair_id


def test_edit_adds_a_revision_and_skip_needs_a_reason(tmp_path, db):
    (a,) = _study(tmp_path, db, prompts=1, raters=1)
    item = pairs.next_pair(db, "pw", a)
    pairs.submit(db, "pw", a, item, "left")
    (row,) = pairs.history(db, "pw", a)
    assert row["outcome"] == "left" and row["left_path"] == item.left.image_path
    edit = pairs.open_pair(db, "pw", a, item.pair_id)
    assert pairs.submit(db, "pw", a, edit, "right", edit=True).stored
    assert [r[4:] for r in _judgments(db)][-1] == ("right", "edit", None)
    assert pairs.history(db, "pw", a)[0]["outcome"] == "right"
    nxt = pairs.next_pair(db, "pw", a)
    with pytest.raises(RatingError, match="reason"):
        pairs.skip(db, "pw", a, nxt.pair_id, "  ")
    pairs.skip(db, "pw", a, nxt.pair_id, "images do not load")
    assert pairs.skipped(db, "pw", a)[0]["reason"] == "images do not load"
    assert pairs.next_pair(db, "pw", a).pair_id != nxt.pair_id
    pairs.reopen(db, "pw", a, nxt.pair_id)
    assert pairs.next_pair(db, "pw", a).pair_id == nxt.pair_id


def test_refusals(tmp_path, db):
    a, b = _study(tmp_path, db, prompts=1, raters=2)
    item = pairs.next_pair(db, "pw", a)
    with pytest.raises(RatingError, match="unknown choice 'up'"):
        pairs.submit(db, "pw", a, item, "up")
    with pytest.raises(NotFoundError, match="never given to you"):
        pairs.submit(db, "pw", b, item, "left")
    theirs = pairs.next_pair(db, "pw", b)
    forged = pairs.PairItem(theirs.pair_id, "", item.left, item.right, "x")
    with pytest.raises(NotFoundError, match="does not hold these images"):
        pairs.submit(db, "pw", b, forged, "left")
    studies.import_manifest(db, make_folder_study(tmp_path / "other", prompts=1))
    with pytest.raises(AuthError):
        pairs.next_pair(db, "other", a)
    assert not study_store.get_study(db, "other").has_pairs
    assert _judgments(db) == []


def test_the_researcher_sees_pair_progress_and_skips(tmp_path, db):
    (a,) = _study(tmp_path, db, prompts=1, raters=1)
    item = pairs.next_pair(db, "pw", a)
    pairs.submit(db, "pw", a, item, "left")
    skipped = pairs.next_pair(db, "pw", a)
    pairs.skip(db, "pw", a, skipped.pair_id, "cannot tell")
    (row,) = studies.rater_progress(db, "pw")
    assert (row["unit"], row["done"], row["skipped"]) == ("pairs", 1, 1)
    (mark,) = studies.flags_and_skips(db, "pw")
    assert (mark["unit"], mark["prompt_id"], mark["note"]) == ("pair", "p0", "cannot tell")
    assert mark["model"] is None and mark["image_path"] is None
    assert studies.overview(db)[0]["pair_judgments"] == 1
