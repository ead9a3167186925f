"""Completion means work: the code needs the quota of *done* items, skips past the limit
end the session with the screen-out code, each screen's unit of work counts toward its own
quota, the progress total is the quota, and fake participants holding every slot never make
a real one "finished"."""

from __future__ import annotations

from pathlib import Path

import pytest

from concord.errors import InputError
from concord.services import studies
from concord.services.crowd import links as crowd
from concord.services.crowd import onboarding
from concord.services.crowd import status as crowd_status
from concord.services.labelling import gate, pairs, ranking, rating
from tests.helpers import make_folder_study

pytestmark = pytest.mark.both_engines

CODES = {"completion_code": "DONE42", "screenout_code": "OUT13"}


def crowd_study(db, root: Path, crowd_block: str, *, prompts: int = 6, k: int = 3,
                protocol: str = "score", models: tuple[str, ...] = ("m1", "m2"),
                extra: str = "") -> str:
    manifest = make_folder_study(root, prompts=prompts, models=models, k=k, protocol=protocol,
                                 extra=extra + "crowd:\n" + crowd_block)
    studies.import_manifest(db, manifest)
    return root.name


def participant(db, study: str, pid: str) -> crowd.Joined:
    found = crowd.links(db, study)
    link = None if found else crowd.create_link(db, study, "http://x", codes=CODES)
    token = link.url.split("join=")[1] if link else participant.tokens[study]
    participant.tokens[study] = token
    return crowd.join(db, token, {"PROLIFIC_PID": pid})


participant.tokens = {}  # type: ignore[attr-defined]


def test_skipping_every_item_never_gets_the_completion_code(db, tmp_path):
    """items_per_rater: 3, no max_skips: three skips serve more items, the fourth ends the
    session with the screen-out code; the completion code is never shown."""
    study = crowd_study(db, tmp_path / "skip", "  items_per_rater: 3\n")
    me = participant(db, study, "a" * 24)
    seen = []
    for _ in range(3):
        item = rating.next_item(db, study, me.rater_id)
        seen.append(item.progress)
        assert onboarding.completion(db, study, me.rater_id) is None
        rating.skip(db, study, me.rater_id, item.image_id, "no")
    # the total stays the quota; skips are counted beside it
    assert [(p.done, p.skipped, p.assigned) for p in seen] == [(0, 0, 3), (0, 1, 3), (0, 2, 3)]
    assert gate.stage(db, studies.get(db, study), me.rater_id) == gate.WORK
    item = rating.next_item(db, study, me.rater_id)
    rating.skip(db, study, me.rater_id, item.image_id, "no")
    assert onboarding.stage(db, study, me.rater_id) == "screened"
    done = onboarding.completion(db, study, me.rater_id)
    assert done.code == "OUT13" and done.screened_out
    with pytest.raises(gate.GateError, match="ended"):
        rating.next_item(db, study, me.rater_id)
    (row,) = crowd_status.pay_report(db, study).to_dict("records")
    assert (row["status"], row["items_done"], row["items_skipped"]) == ("screened out", 0, 4)
    assert crowd_status.status(db, study)[0]["status"] == "screened out"


def test_a_screened_out_rater_stores_nothing_more(db, tmp_path):
    study = crowd_study(db, tmp_path / "after", "  items_per_rater: 2\n  max_skips: 0\n")
    me = participant(db, study, "a" * 24)
    first = rating.next_item(db, study, me.rater_id)
    rating.skip(db, study, me.rater_id, first.image_id, "no")  # the one skip too many
    with pytest.raises(gate.GateError):
        rating.submit(db, study, me.rater_id, first.image_id, {"SC": 1.0, "PR": 1.0},
                      submission="s1")
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM assignments WHERE status = 'open'"
                      ).fetchone()[0] == 0  # its slots went back


def test_on_max_skips_continue_serves_more_items_and_still_asks_the_quota(db, tmp_path):
    study = crowd_study(db, tmp_path / "more", "  items_per_rater: 2\n  max_skips: 1\n"
                                               "  on_max_skips: continue\n")
    me = participant(db, study, "a" * 24)
    for _ in range(4):
        item = rating.next_item(db, study, me.rater_id)
        rating.skip(db, study, me.rater_id, item.image_id, "no")
    assert onboarding.stage(db, study, me.rater_id) == "work"
    assert onboarding.completion(db, study, me.rater_id) is None
    for _ in range(2):
        item = rating.next_item(db, study, me.rater_id)
        rating.submit(db, study, me.rater_id, item.image_id, {"SC": 1.0, "PR": 1.0},
                      submission=item.submission)
    assert rating.next_item(db, study, me.rater_id) is None
    assert onboarding.completion(db, study, me.rater_id).code == "DONE42"


def test_each_screen_has_its_own_quota_of_done_items(db, tmp_path):
    """A study with ratings, rankings and pairs: 3 pairs and 1 ranking do not finish a
    quota of 3 (before, any 3 done items of any kind did)."""
    study = crowd_study(db, tmp_path / "units", "  items_per_rater: 3\n", protocol="both",
                        models=("m1", "m2", "m3"), extra="pairs:\n  pairs_per_prompt: 1\n")
    me = participant(db, study, "a" * 24)
    for _ in range(3):
        item = pairs.next_pair(db, study, me.rater_id)
        pairs.submit(db, study, me.rater_id, item, "left")
    rs = ranking.next_set(db, study, me.rater_id)
    ranking.submit(db, study, me.rater_id, rs, [[i.image_id] for i in rs.images])
    assert pairs.next_pair(db, study, me.rater_id) is None  # the pair quota is done
    assert not onboarding.finished(db, study, me.rater_id)
    assert onboarding.completion(db, study, me.rater_id) is None
    view = onboarding.outlook(db, study, me.rater_id, "pair")
    assert view.units_left == ("image", "prompt")
    for _ in range(3):
        item = rating.next_item(db, study, me.rater_id)
        rating.submit(db, study, me.rater_id, item.image_id, {"SC": 1.0, "PR": 1.0},
                      submission=item.submission)
    for _ in range(2):
        rs = ranking.next_set(db, study, me.rater_id)
        ranking.submit(db, study, me.rater_id, rs, [[i.image_id] for i in rs.images])
    assert onboarding.completion(db, study, me.rater_id).code == "DONE42"


def test_a_quota_per_screen(db, tmp_path):
    study = crowd_study(db, tmp_path / "per", "  items_per_rater: {score: 1, rank: 2}\n",
                        protocol="both")
    me = participant(db, study, "a" * 24)
    assert rating.progress(db, study, me.rater_id).assigned == 1
    assert ranking.progress(db, study, me.rater_id).assigned == 2


@pytest.mark.parametrize(("block", "needle"), [
    ("  items_per_rater: {score: 2, pair: 1}\n", "crowd.items_per_rater.pair"),
    ("  items_per_rater: {score: 2, rank: 1}\n", "crowd.items_per_rater"),  # no rank screen
    ("  items_per_rater: {}\n", "crowd.items_per_rater"),
    ("  items_per_rater: {sore: 2}\n", "crowd.items_per_rater.sore"),
    ("  max_skips: -1\n", "crowd.max_skips"),
    ("  on_max_skips: ignore\n", "crowd.on_max_skips"),
    ("  max_participants: 0\n", "crowd.max_participants"),
    ("  joins_per_minute: true\n", "crowd.joins_per_minute"),
    ("  flag_ids_per_client: 1\n", "crowd.flag_ids_per_client"),
])
def test_bad_crowd_limits_name_the_key(db, tmp_path, block, needle):
    with pytest.raises(InputError, match=needle.replace(".", r"\.")):
        crowd_study(db, tmp_path / "bad", block)


def test_fake_participants_holding_every_slot_never_finish_a_real_one(db, tmp_path):
    """k = 1 and two fakes open the only two items and never submit: the real participant
    has nothing now, is not finished and gets no code; when the fakes' leases run out the
    items come to them."""
    study = crowd_study(db, tmp_path / "slots", "  items_per_rater: 2\n", prompts=1, k=1)
    for pid in ("f" * 24, "e" * 24):
        fake = participant(db, study, pid)
        assert rating.next_item(db, study, fake.rater_id) is not None
    real = participant(db, study, "a" * 24)
    assert rating.next_item(db, study, real.rater_id) is None
    assert not onboarding.finished(db, study, real.rater_id)
    assert onboarding.completion(db, study, real.rater_id) is None
    view = onboarding.outlook(db, study, real.rater_id, "image")
    assert view.waiting and not view.finished and view.quota == 2
    old = "2000-01-01T00:00:00.000000+00:00"  # the fakes left long ago: their leases ran out
    db.execute("UPDATE assignments SET opened_at = ? WHERE status = 'open'", [old])
    db.execute("UPDATE crowd_participants SET last_seen_at = ? WHERE rater_id != ?",
               [old, real.rater_id])
    db.conn.commit()
    for _ in range(2):
        item = rating.next_item(db, study, real.rater_id)
        rating.submit(db, study, real.rater_id, item.image_id, {"SC": 1.0, "PR": 1.0},
                      submission=item.submission)
    assert onboarding.completion(db, study, real.rater_id).code == "DONE42"
    statuses = {r["participant_id"]: r["status"] for r in crowd_status.status(db, study)}
    assert statuses == {"a" * 24: "completed", "f" * 24: "returned", "e" * 24: "returned"}


def test_without_a_quota_nothing_done_is_not_finished(db, tmp_path):
    """No items_per_rater: a participant who arrives when every item has its k ratings
    did no work and gets no code (before: "All done" and the completion code)."""
    study = crowd_study(db, tmp_path / "full", "  instructions: hi\n", prompts=1, k=1)
    first = participant(db, study, "b" * 24)
    onboarding.accept(db, study, first.rater_id)
    while (item := rating.next_item(db, study, first.rater_id)) is not None:
        rating.submit(db, study, first.rater_id, item.image_id, {"SC": 1.0, "PR": 1.0},
                      submission=item.submission)
    assert onboarding.completion(db, study, first.rater_id).code == "DONE42"
    late = participant(db, study, "a" * 24)
    onboarding.accept(db, study, late.rater_id)
    assert rating.next_item(db, study, late.rater_id) is None
    assert onboarding.completion(db, study, late.rater_id) is None
    view = onboarding.outlook(db, study, late.rater_id, "image")
    assert not view.waiting and not view.finished


def test_pair_time_is_paid_and_pairs_count_as_done(db, tmp_path):
    study = crowd_study(db, tmp_path / "pw", "  items_per_rater: 2\n  hourly_rate: 36\n",
                        protocol="pair", models=("m1", "m2", "m3"), prompts=2)
    me = participant(db, study, "a" * 24)
    for _ in range(2):
        item = pairs.next_pair(db, study, me.rater_id)
        pairs.submit(db, study, me.rater_id, item, "left")
    db.execute("UPDATE pair_judgments SET seconds = 50")
    db.conn.commit()
    (row,) = crowd_status.pay_report(db, study).to_dict("records")
    assert (row["items_done"], row["active_seconds"], row["pay"]) == (2, 100.0, 1.0)
    assert row["status"] == "completed"
