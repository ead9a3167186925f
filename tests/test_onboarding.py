"""Consent and practice gate the real items; the quota and the completion code."""

from __future__ import annotations

import itertools

import pytest

from concord.errors import NotFoundError, RatingError
from concord.services import studies
from concord.services.crowd import links as crowd
from concord.services.crowd import onboarding
from concord.services.crowd import status as crowd_status
from concord.services.labelling import rating
from concord.services.labelling.gate import GateError
from concord.store import raters as rater_store
from tests.crowd_helpers import make_crowd_study

pytestmark = pytest.mark.both_engines

PID = {"PROLIFIC_PID": "aaaaaaaaaaaaaaaaaaaaaaaa", "STUDY_ID": "S", "SESSION_ID": "X"}
RIGHT = {"SC": 1.0, "PR": 1.0}  # gold of p0/m1 (the first practice item)


def setup(db, tmp_path, **kw):
    studies.import_manifest(db, make_crowd_study(tmp_path / "crowd", **kw))
    link = crowd.create_link(db, "crowd", "http://x", codes={
        "completion_code": "DONE42", "screenout_code": "NOPE13"})
    return crowd.join(db, link.url.split("join=")[1], PID)


def practise(db, rater_id, answers):
    out = []
    for values in answers:
        item = onboarding.next_practice(db, "crowd", rater_id)
        out.append(onboarding.answer_practice(db, "crowd", rater_id, item.image_id, values,
                                              submission=item.submission))
    return out


def test_no_real_item_before_consent(db, tmp_path):
    me = setup(db, tmp_path)
    assert onboarding.stage(db, "crowd", me.rater_id) == "consent"
    with pytest.raises(GateError, match="consent"):
        rating.next_item(db, "crowd", me.rater_id)
    assert onboarding.next_practice(db, "crowd", me.rater_id) is None
    at = onboarding.accept(db, "crowd", me.rater_id)
    assert at and onboarding.accept(db, "crowd", me.rater_id) == at  # the first time stays
    assert onboarding.stage(db, "crowd", me.rater_id) == "practice"
    with pytest.raises(GateError, match="practice"):
        rating.next_item(db, "crowd", me.rater_id)


def test_practice_gives_feedback_and_passing_opens_the_real_items(db, tmp_path):
    me = setup(db, tmp_path)
    onboarding.accept(db, "crowd", me.rater_id)
    first, second = practise(db, me.rater_id, [RIGHT, {"SC": 1.0, "PR": 0.0}])
    assert first.correct and first.position == 1 and first.total == 2
    assert first.expected == {"PR": (1.0, 0.0), "SC": (1.0, 0.0)}
    assert not first.finished
    # p1/m1: SC 0 expected; PR 0.5 ± 0.5, so PR 0 is within tolerance
    assert not second.correct and second.wrong == ("SC",)
    assert second.given == {"SC": 1.0, "PR": 0.0}
    assert second.finished and second.passed and second.n_correct == 1  # 1/2 >= 0.5
    assert onboarding.stage(db, "crowd", me.rater_id) == "work"
    seen = set()
    while (item := rating.next_item(db, "crowd", me.rater_id)) is not None:
        seen.add(item.image_id)
        rating.submit(db, "crowd", me.rater_id, item.image_id, RIGHT,
                      submission=item.submission)
    practice_ids = {i for (i,) in db.execute("SELECT image_id FROM practice_answers")}
    assert len(practice_ids) == 2
    assert not practice_ids & seen  # practice images are never real items
    assert len(seen) == 4  # items_per_rater
    assert onboarding.finished(db, "crowd", me.rater_id)


def test_failing_the_practice_ends_the_study_with_the_screen_out_code(db, tmp_path):
    me = setup(db, tmp_path, threshold=1.0)
    onboarding.accept(db, "crowd", me.rater_id)
    *_, last = practise(db, me.rater_id, [RIGHT, {"SC": 2.0, "PR": 2.0}])
    assert last.finished and last.passed is False
    assert onboarding.stage(db, "crowd", me.rater_id) == "failed"
    with pytest.raises(GateError, match="not passed"):
        rating.next_item(db, "crowd", me.rater_id)
    done = onboarding.completion(db, "crowd", me.rater_id)
    assert done.screened_out and done.code == "NOPE13"
    assert done.url.endswith("cc=NOPE13")
    (row,) = [r for r in crowd_status.status(db, "crowd") if r["rater"] == me.name]
    assert row["stage"] == "failed" and row["practice"] == "failed 1/2"


def test_a_practice_answer_counts_once(db, tmp_path):
    me = setup(db, tmp_path)
    onboarding.accept(db, "crowd", me.rater_id)
    item = onboarding.next_practice(db, "crowd", me.rater_id)
    a = onboarding.answer_practice(db, "crowd", me.rater_id, item.image_id, RIGHT,
                                   submission=item.submission)
    b = onboarding.answer_practice(db, "crowd", me.rater_id, item.image_id,
                                   {"SC": 0.0, "PR": 0.0}, submission="another-tab")
    assert a.correct and b.correct and b.given == RIGHT
    assert db.execute("SELECT COUNT(*) FROM practice_answers WHERE answer IS NOT NULL"
                      ).fetchone()[0] == 1


def test_practice_answers_are_checked(db, tmp_path):
    me = setup(db, tmp_path)
    onboarding.accept(db, "crowd", me.rater_id)
    item = onboarding.next_practice(db, "crowd", me.rater_id)
    with pytest.raises(RatingError, match="not on the scale"):
        onboarding.answer_practice(db, "crowd", me.rater_id, item.image_id,
                                   {"SC": 0.7, "PR": 1.0}, submission="s")
    real = db.execute("SELECT id FROM images ORDER BY id DESC").fetchone()[0]
    with pytest.raises(NotFoundError, match="not one of your practice items"):
        onboarding.answer_practice(db, "crowd", me.rater_id, real, RIGHT, submission="t")


def test_completion_code_when_done_and_none_for_invited_raters(db, tmp_path):
    me = setup(db, tmp_path)
    onboarding.accept(db, "crowd", me.rater_id)
    practise(db, me.rater_id, [RIGHT, RIGHT])
    assert not onboarding.finished(db, "crowd", me.rater_id)
    for _ in range(4):
        item = rating.next_item(db, "crowd", me.rater_id)
        rating.submit(db, "crowd", me.rater_id, item.image_id, RIGHT,
                      submission=item.submission)
    assert rating.next_item(db, "crowd", me.rater_id) is None
    assert rating.progress(db, "crowd", me.rater_id).assigned == 4
    done = onboarding.completion(db, "crowd", me.rater_id)
    assert not done.screened_out and done.code == "DONE42"
    assert done.url == "https://app.prolific.com/submissions/complete?cc=DONE42"
    (invite,) = studies.invite(db, "crowd", ["ivy"], "http://x")
    ivy = rater_store.rater_for_token(db, invite.url.split("token=")[1])
    assert onboarding.completion(db, "crowd", ivy.id) is None
    # an invited rater goes through the same consent and practice
    assert onboarding.stage(db, "crowd", ivy.id) == "consent"


def test_study_without_crowd_settings_is_not_gated(db, study_factory):
    studies.import_manifest(db, study_factory("plain"))
    (invite,) = studies.invite(db, "plain", ["pat"], "http://x")
    pat = rater_store.rater_for_token(db, invite.url.split("token=")[1])
    assert onboarding.stage(db, "plain", pat.id) == "work"
    assert rating.next_item(db, "plain", pat.id) is not None


def _ticks_for(rubric, wanted: dict[str, float]) -> dict[str, bool]:
    """A tick set whose checklists derive ``wanted`` (searched over every combination)."""
    ticks: dict[str, bool] = {}
    for listed in rubric.checklists:
        for combo in itertools.product((False, True), repeat=len(listed.ids)):
            mine = dict(zip(listed.ids, combo, strict=True))
            if listed.derive(mine) == wanted[listed.criterion]:
                ticks.update(mine)
                break
    return ticks


def test_a_checklist_study_practises_the_ticks(db, tmp_path):
    manifest = make_crowd_study(tmp_path / "crowd")
    manifest.write_text(manifest.read_text() + "checklist: true\n")
    studies.import_manifest(db, manifest)
    link = crowd.create_link(db, "crowd", "http://x")
    me = crowd.join(db, link.url.split("join=")[1], PID)
    onboarding.accept(db, "crowd", me.rater_id)
    rubric = rating.study_rubric(db, "crowd", me.rater_id)
    assert {c.criterion for c in rubric.checklists} == {"SC", "PR"}
    item = onboarding.next_practice(db, "crowd", me.rater_id)
    with pytest.raises(RatingError, match="unknown condition"):
        onboarding.answer_practice(db, "crowd", me.rater_id, item.image_id, {},
                                   ticks={"no_such_condition": True}, submission="s0")
    # A level chosen directly is overruled by the ticks: the practice trains the checklist.
    fb = onboarding.answer_practice(db, "crowd", me.rater_id, item.image_id, {"SC": 0.0},
                                    ticks=_ticks_for(rubric, RIGHT),
                                    submission=item.submission)
    assert fb.correct and fb.given == RIGHT
    item = onboarding.next_practice(db, "crowd", me.rater_id)  # p1/m1: SC 0 expected
    fb = onboarding.answer_practice(db, "crowd", me.rater_id, item.image_id, {},
                                    ticks=_ticks_for(rubric, {"SC": 2.0, "PR": 0.5}),
                                    submission=item.submission)
    assert not fb.correct and fb.wrong == ("SC",) and fb.given == {"SC": 2.0, "PR": 0.5}
