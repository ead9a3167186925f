"""Assignment: k raters per image, least covered first, per-rater order, gold for everyone."""

from __future__ import annotations

import pytest
from scipy.stats import spearmanr

from concord.services.labelling import rating
from concord.store import studies as study_store
from concord.store import work
from tests.foundation_helpers import study_with_raters

pytestmark = pytest.mark.both_engines

LIVE = "0000"  # a lease cutoff before any opened_at: every open assignment holds its slot


def setup_study(tmp_path, db, **kw):
    """Study 'as' (6 prompts × a, b; k=2) with raters r0..r2; their ids."""
    return study_with_raters(tmp_path, db, "as", **{"prompts": 6, "k": 2, "raters": 3, **kw})


def rate(db, rater_id, item):
    rating.submit(db, "as", rater_id, item.image_id, {"SC": 1, "PR": 1},
                  submission=item.submission)


def test_sql_order_is_the_documented_permutation(tmp_path, db):
    (rater,) = setup_study(tmp_path, db, prompts=10, raters=1)
    study = study_store.get_study(db, "as")
    cands = work.candidates(db, study.id, rater, "image", study.k, seed=7, limit=100,
                            cutoff=LIVE)
    got = [c.item_id for c in cands]
    expected = sorted(got, key=lambda i: work.order_value(7, rater, i))
    assert got == expected
    assert len(got) == 20


def test_each_rater_has_their_own_order(tmp_path, db):
    a, b = setup_study(tmp_path, db, prompts=30, raters=2)
    study = study_store.get_study(db, "as")
    order_a = [c.item_id for c in work.candidates(db, study.id, a, "image", 2, limit=100,
                                                               cutoff=LIVE)]
    order_b = [c.item_id for c in work.candidates(db, study.id, b, "image", 2, limit=100,
                                                               cutoff=LIVE)]
    assert sorted(order_a) == sorted(order_b)
    rho = spearmanr([order_a.index(i) for i in order_a], [order_b.index(i) for i in order_a])
    assert abs(rho.statistic) < 0.5


def test_least_covered_first_and_k_cap(tmp_path, db):
    raters = setup_study(tmp_path, db, prompts=1, models=("a", "b"), k=2, raters=4)
    served = {}
    for r in raters[:2]:
        item = rating.next_item(db, "as", r)
        served[r] = item.image_id
        rate(db, r, item)
    # the first two raters were sent to different images (coverage 0 beats coverage 1)
    assert served[raters[0]] != served[raters[1]]
    third = rating.next_item(db, "as", raters[2])
    rate(db, raters[2], third)
    fourth = rating.next_item(db, "as", raters[3])
    rate(db, raters[3], fourth)
    # now every image has k = 2 raters, so nobody gets another one
    assert third.image_id != fourth.image_id
    assert rating.next_item(db, "as", raters[0]) is None
    counts = db.execute("SELECT image_id, COUNT(*) FROM current_ratings WHERE criterion = 'SC'"
                        " GROUP BY image_id").fetchall()
    assert sorted(n for _, n in counts) == [2, 2]


def test_never_the_same_image_twice(tmp_path, db):
    (rater,) = setup_study(tmp_path, db, prompts=3, raters=1, k=3)
    seen = []
    while (item := rating.next_item(db, "as", rater)) is not None:
        seen.append(item.image_id)
        rate(db, rater, item)
    assert len(seen) == len(set(seen)) == 6
    progress = rating.progress(db, "as", rater)
    assert (progress.done, progress.assigned, progress.remaining) == (6, 6, 0)


def test_gold_items_go_to_every_rater(tmp_path, db):
    gold = tmp_path / "gold.csv"
    gold.write_text("prompt_id,model,criterion,expected,tolerance\np0,a,SC,2,0.5\n")
    raters = setup_study(tmp_path, db, prompts=1, models=("a", "b"), k=1, raters=3,
                         extra=f"gold: {gold}\n")
    got = []
    for r in raters:
        items = []
        while (item := rating.next_item(db, "as", r)) is not None:
            items.append(item.image_id)
            rate(db, r, item)
        got.append(items)
    gold_id = db.execute("SELECT image_id FROM gold").fetchone()[0]
    assert all(gold_id in items for items in got)  # k = 1 does not cap gold
    other = [i for items in got for i in items if i != gold_id]
    assert len(other) == 1  # the non-gold image was rated once (k = 1)


def test_preload_predicts_the_next_item(tmp_path, db):
    (rater,) = setup_study(tmp_path, db, prompts=4, raters=1)
    item = rating.next_item(db, "as", rater)
    predicted = item.preload
    rate(db, rater, item)
    following = rating.next_item(db, "as", rater)
    assert predicted is not None and following.image_path == predicted
    # the progress came with the item: 1 done of 8 (4 prompts × 2 models)
    assert (following.progress.done, following.progress.assigned) == (1, 8)


def test_ranking_gold_goes_to_every_rater(tmp_path, db):
    from concord.services.labelling import ranking

    gold = tmp_path / "gold.csv"
    gold.write_text("prompt_id,model,criterion,expected\np3,a,rank,1\n")
    # only p0 is chosen for ranking, but the gold prompt p3 joins the sets
    raters = setup_study(tmp_path, db, prompts=4, k=1, raters=3, protocol="rank",
                         extra=f"gold: {gold}\nranking:\n  prompts: [p0]\n")
    row = db.execute("SELECT g.unit, g.criterion, g.expected, p.key, p.rank_set FROM gold g"
                     " JOIN images i ON i.id = g.image_id JOIN prompts p ON p.id = i.prompt_id"
                     ).fetchone()
    assert tuple(row) == ("prompt", "overall", 1.0, "p3", 1)  # a gold prompt is always a set
    for r in raters:
        got = []
        while (rs := ranking.next_set(db, "as", r)) is not None:
            got.append(rs.prompt_id)
            ranking.submit(db, "as", r, rs, [[im.image_id] for im in rs.images])
        assert row[3] in {db.execute("SELECT key FROM prompts WHERE id = ?", [p]).fetchone()[0]
                          for p in got}
