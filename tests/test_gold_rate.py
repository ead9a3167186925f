"""Gold that reaches every rater (``quality.gold_every``: one gold item at a random position
of each block of N, whatever the coverage), for images, rankings and pairs; checks that act
(``warn_after``, ``block_after``); practice drawn per rater from a pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.errors import InputError
from concord.services import studies
from concord.services.crowd import links as crowd
from concord.services.crowd import onboarding
from concord.services.labelling import checks, gate, pairs, ranking, rating
from concord.store import raters as rater_store
from concord.store.crowd import onboarding as onboarding_store
from concord.store.db import transaction
from tests.helpers import make_folder_study

pytestmark = pytest.mark.both_engines

RIGHT = {"SC": 1.0, "PR": 1.0}
WRONG = {"SC": 0.0, "PR": 0.0}


def study_with_gold(db, root: Path, gold: str, *, prompts: int, models: tuple[str, ...],
                    extra: str, k: int = 3, protocol: str = "score") -> str:
    root.mkdir(parents=True, exist_ok=True)
    (root / "gold.csv").write_text("prompt_id,model,criterion,expected,tolerance\n" + gold,
                                   encoding="utf-8")
    manifest = make_folder_study(root, prompts=prompts, models=models, k=k, protocol=protocol,
                                 extra="gold: gold.csv\n" + extra)
    studies.import_manifest(db, manifest)
    return root.name


def raters(db, study: str, n: int) -> list[int]:
    studies.invite(db, study, [f"r{i}" for i in range(n)], "http://x")
    return [rater_store.get_rater(db, f"r{i}").id for i in range(n)]


def gold_ids(db, unit: str) -> set[int]:
    if unit == "pair":
        return {r[0] for r in db.execute("SELECT id FROM pairs WHERE better IS NOT NULL")}
    if unit == "prompt":
        return {r[0] for r in db.execute("SELECT i.prompt_id FROM gold g JOIN images i ON"
                                         " i.id = g.image_id WHERE g.unit = 'prompt'")}
    return {r[0] for r in db.execute("SELECT image_id FROM gold WHERE unit = 'image'")}


def rate_all(db, study: str, rater_id: int, answer=lambda item: RIGHT) -> list[int]:
    seen = []
    while (item := rating.next_item(db, study, rater_id)) is not None:
        seen.append(item.image_id)
        rating.submit(db, study, rater_id, item.image_id, answer(item),
                      submission=item.submission)
    return seen


GOLD3 = "p0,m1,SC,1,0\np5,m2,SC,1,0\np9,m3,SC,1,0\n"


def test_every_rater_of_a_quota_of_ten_meets_gold(db, tmp_path):
    """96 images, 3 gold, k = 3, a quota of 10 and the default gold_every (10): before,
    gold sank to the end of every queue once covered and 14 of 15 raters never saw it."""
    study = study_with_gold(db, tmp_path / "g96", GOLD3, prompts=24,
                            models=("m1", "m2", "m3", "m4"),
                            extra="crowd:\n  items_per_rater: 10\n")
    gold = gold_ids(db, "image")
    seen = [rate_all(db, study, r) for r in raters(db, study, 15)]
    assert all(len(s) == 10 for s in seen)
    assert [len(gold & set(s)) >= 1 for s in seen] == [True] * 15


def test_quota_five_and_three_gold_images(db, tmp_path):
    """The crowd case of the issue: quota 5, 3 gold images, gold_every 5: every rater of 8
    meets one (before, 3 of 8 met none)."""
    study = study_with_gold(db, tmp_path / "g5", GOLD3, prompts=12, models=("m1", "m2", "m3"),
                            extra="crowd:\n  items_per_rater: 5\nquality:\n  gold_every: 5\n")
    gold = gold_ids(db, "image")
    assert all(len(gold & set(rate_all(db, study, r))) == 1 for r in raters(db, study, 8))


def test_one_gold_per_block_at_positions_that_differ_between_raters(db, tmp_path):
    gold = "".join(f"p{i},m1,SC,1,0\n" for i in range(6))
    study = study_with_gold(db, tmp_path / "blk", gold, prompts=12, models=("m1", "m2"),
                            k=12,
                            extra="crowd:\n  items_per_rater: 12\nquality:\n  gold_every: 4\n")
    golds = gold_ids(db, "image")
    firsts = set()
    for r in raters(db, study, 12):
        seen = rate_all(db, study, r)
        marks = [i in golds for i in seen]
        assert [sum(marks[b:b + 4]) for b in (0, 4, 8)] == [1, 1, 1]
        firsts.add(marks.index(True))
    assert len(firsts) > 1  # a random slot per rater, not always the same position


def test_gold_rankings_and_gold_pairs_come_at_the_rate_too(db, tmp_path):
    rank_gold = "p0,m1,rank,1,0\np3,m2,rank,1,0\n"
    study = study_with_gold(db, tmp_path / "rk", rank_gold, prompts=10,
                            models=("m1", "m2", "m3"), protocol="rank", k=6,
                            extra="crowd:\n  items_per_rater: 4\nquality:\n  gold_every: 4\n")
    golds = gold_ids(db, "prompt")
    for r in raters(db, study, 6):
        seen = []
        while (rs := ranking.next_set(db, study, r)) is not None:
            seen.append(rs.prompt_id)
            ranking.submit(db, study, r, rs, [[i.image_id] for i in rs.images])
        assert len(seen) == 4 and len(golds & set(seen)) == 1
    pair_gold = "p0,m1,pair,m2,\np4,m2,pair,m3,\n"
    study = study_with_gold(db, tmp_path / "pw", pair_gold, prompts=10,
                            models=("m1", "m2", "m3"), protocol="pair", k=6,
                            extra="crowd:\n  items_per_rater: 3\nquality:\n  gold_every: 3\n")
    golds = gold_ids(db, "pair")
    for r in [rater_store.get_rater(db, f"r{i}").id for i in range(6)]:
        rater_store.add_to_study(db, r, studies.get(db, study).id)
        db.conn.commit()
        seen = []
        while (item := pairs.next_pair(db, study, r)) is not None:
            seen.append(item.pair_id)
            pairs.submit(db, study, r, item, "left")
        assert len(seen) == 3 and len(golds & set(seen)) == 1


def blocked_study(db, tmp_path) -> tuple[str, int, set[int]]:
    gold = "".join(f"p{i},m1,SC,1,0\np{i},m1,PR,1,0\n" for i in range(8))
    study = study_with_gold(db, tmp_path / "blk", gold, prompts=10, models=("m1", "m2"),
                            extra="crowd:\n  items_per_rater: 12\nquality:\n  gold_every: 2\n"
                                  "  warn_after: 1\n  block_after: 2\n")
    link = crowd.create_link(db, study, "http://x", codes={"completion_code": "DONE",
                                                           "screenout_code": "OUT"})
    me = crowd.join(db, link.url.split("join=")[1], {"PROLIFIC_PID": "a" * 24})
    return study, me.rater_id, gold_ids(db, "image")


def test_failed_checks_warn_then_end_the_session_with_the_screen_out_code(db, tmp_path):
    study, me, golds = blocked_study(db, tmp_path)
    failed = 0
    while failed < 2:
        assert checks.warning(db, study, me) is None if failed == 0 else "1 of your" in \
            checks.warning(db, study, me)
        item = rating.next_item(db, study, me)
        wrong = item.image_id in golds
        rating.submit(db, study, me, item.image_id, WRONG if wrong else RIGHT,
                      submission=item.submission)
        failed += wrong
    assert onboarding.stage(db, study, me) == "blocked"
    done = onboarding.completion(db, study, me)
    assert done.code == "OUT" and done.screened_out
    with pytest.raises(gate.GateError, match="check items"):
        rating.next_item(db, study, me)
    assert db.execute("SELECT COUNT(*) FROM assignments WHERE rater_id = ? AND"
                      " status = 'open'", [me]).fetchone()[0] == 0
    assert db.execute("SELECT passed FROM gold_checks WHERE rater_id = ? ORDER BY checked_at",
                      [me]).fetchall() == [(0,), (0,)]


def test_an_undo_does_not_turn_a_failed_check_into_a_passed_one(db, tmp_path):
    study, me, golds = blocked_study(db, tmp_path)
    while (item := rating.next_item(db, study, me)).image_id not in golds:
        rating.submit(db, study, me, item.image_id, RIGHT, submission=item.submission)
    rating.submit(db, study, me, item.image_id, WRONG, submission=item.submission)
    assert rating.undo_last(db, study, me) == item.image_id
    again = rating.next_item(db, study, me)
    assert again.image_id == item.image_id
    rating.submit(db, study, me, again.image_id, RIGHT, submission=again.submission)
    assert db.execute("SELECT passed FROM gold_checks").fetchall() == [(0,)]


@pytest.mark.parametrize(("quality", "needle"), [
    ("gold_every: 0", "quality.gold_every"), ("warn_after: 1.5", "quality.warn_after"),
    ("block_after: true", "quality.block_after"),
    ("warn_after: 3\n  block_after: 2", "quality.warn_after"),
])
def test_bad_check_settings_name_the_key(db, tmp_path, quality, needle):
    with pytest.raises(InputError, match=needle.replace(".", r"\.")):
        study_with_gold(db, tmp_path / "bad", GOLD3, prompts=10, models=("m1", "m2", "m3"),
                        extra=f"quality:\n  {quality}\n")


def test_practice_is_drawn_per_rater_from_the_pool(db, tmp_path):
    gold = "".join(f"p{i},m1,SC,1,0\n" for i in range(6))
    study = study_with_gold(db, tmp_path / "prac", gold, prompts=8, models=("m1", "m2"),
                            extra="crowd:\n  practice:\n    items: 2\n    pool: 6\n")
    pool = sorted(gold_ids(db, "image"))
    blocks = []
    for r in raters(db, study, 10):
        first = onboarding.next_practice(db, study, r)
        assert onboarding.next_practice(db, study, r).image_id == first.image_id  # stable
        blocks.append(tuple(onboarding.practice_block(db, studies.get(db, study), r)))
    assert all(len(b) == 2 and set(b) <= set(pool) for b in blocks)
    assert len(set(blocks)) > 3  # not the same practice for everyone
    # the whole pool is kept out of the real items: no pool image is an attention check
    r = rater_store.get_rater(db, "r0").id
    with transaction(db):
        onboarding_store.set_practice_result(db, studies.get(db, study).id, r, 2, 2, True)
    assert not set(pool) & set(rate_all(db, study, r))
