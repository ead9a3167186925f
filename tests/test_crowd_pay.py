"""The time and pay report against a case computed by hand; the crowd manifest keys."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from concord.cli import main
from concord.errors import ConcordError, InputError
from concord.services import studies
from concord.services.crowd import links as crowd
from concord.services.crowd import onboarding
from concord.services.crowd import status as crowd_status
from concord.services.labelling import rating
from concord.store import studies as study_store
from tests.crowd_helpers import make_crowd_study

pytestmark = pytest.mark.both_engines

RIGHT = {"SC": 1.0, "PR": 1.0}


ANN, BOB, CLI = "a" * 24, "b" * 24, "c" * 24  # Prolific ids: 24 hexadecimal digits


def crowd_rater(db, pid: str) -> crowd.Joined:
    link = crowd.create_link(db, "crowd", "http://x")
    return crowd.join(db, link.url.split("join=")[1],
                      {"PROLIFIC_PID": pid, "STUDY_ID": "ST", "SESSION_ID": f"SE-{pid}"})


def work_through(db, me: crowd.Joined, n_items: int, *, skip_last: bool = False) -> None:
    onboarding.accept(db, "crowd", me.rater_id)
    for _ in range(2):
        item = onboarding.next_practice(db, "crowd", me.rater_id)
        onboarding.answer_practice(db, "crowd", me.rater_id, item.image_id, RIGHT,
                                   submission=item.submission)
    for i in range(n_items):
        item = rating.next_item(db, "crowd", me.rater_id)
        if skip_last and i == n_items - 1:
            rating.skip(db, "crowd", me.rater_id, item.image_id, "cannot see it")
        else:
            rating.submit(db, "crowd", me.rater_id, item.image_id, RIGHT,
                          submission=item.submission)


def set_times(db, rater_id: int, ratings: list[float], practice: list[float],
              skip: float | None) -> None:
    """Overwrite the measured times with the hand case (per submission, per criterion)."""
    subs = [r[0] for r in db.execute("SELECT submission FROM ratings WHERE rater_id = ?"
                                     " GROUP BY submission ORDER BY MIN(id)", [rater_id])]
    for sub, s in zip(subs, ratings, strict=True):
        db.execute("UPDATE ratings SET seconds = ? WHERE submission = ?", [s, sub])
    ids = [r[0] for r in db.execute("SELECT image_id FROM practice_answers WHERE rater_id = ?"
                                    " ORDER BY position", [rater_id])]
    for image_id, s in zip(ids, practice, strict=True):
        db.execute("UPDATE practice_answers SET seconds = ? WHERE rater_id = ? AND image_id"
                   " = ?", [s, rater_id, image_id])
    if skip is not None:
        db.execute("UPDATE assignments SET opened_at = '2026-01-01T10:00:00.000000+00:00',"
                   f" done_at = '2026-01-01T10:00:{skip:09.6f}+00:00' WHERE rater_id = ? AND"
                   " status = 'skipped'", [rater_id])
    db.conn.commit()


def test_pay_report_matches_the_hand_computed_case(db, tmp_path):
    studies.import_manifest(db, make_crowd_study(tmp_path / "crowd", quota=10))
    ann, bob = crowd_rater(db, ANN), crowd_rater(db, BOB)
    work_through(db, ann, 3, skip_last=True)
    work_through(db, bob, 1)
    # ann: ratings 10 s and 400 s (capped at 300), a skip after 30 s, practice 20 s + 15 s
    set_times(db, ann.rater_id, [10.0, 400.0], [20.0, 15.0], skip=30.0)
    # bob: one rating of 1.5 s, practice 0.5 s + 0 s: 2 s → 12 £/h × 2/3600 h = £0.0067
    set_times(db, bob.rater_id, [1.5], [0.5, 0.0], skip=None)
    report = crowd_status.pay_report(db, "crowd").set_index("participant_id")
    a, b = report.loc[ANN], report.loc[BOB]
    assert a["active_seconds"] == 375.0  # 10 + 300 + 30 + 20 + 15
    assert a["pay"] == 1.25  # 375 s = 0.10417 h × 12
    assert (a["items_done"], a["items_skipped"], a["practice_items"]) == (2, 1, 2)
    assert (a["platform"], a["platform_study_id"], a["platform_session_id"]) == \
        ("prolific", "ST", f"SE-{ANN}")
    # RIGHT matches the first practice gold only (p1/m1 expects SC 0): 1 of 2, threshold 0.5
    assert a["practice"] == "passed 1/2" and a["currency"] == "GBP"
    assert b["active_seconds"] == 2.0 and b["pay"] == 0.01
    other = crowd_status.pay_report(db, "crowd", hourly_rate=20.0, idle_cap=60.0)
    assert other.set_index("participant_id").loc[ANN, "active_seconds"] == 135.0
    assert other.set_index("participant_id").loc[ANN, "pay"] == 0.75


def test_pay_rounds_half_up_to_the_cent():
    assert crowd_status.pay_for(1.5, 12.0) == 0.01  # 0.005 exactly
    assert crowd_status.pay_for(1.4, 12.0) == 0.0
    assert crowd_status.pay_for(3600.0, None) is None
    assert crowd_status.active_seconds([float("nan"), 5.0, 1e9], cap=100) == 105.0


def test_pay_cli_writes_the_csv(db, db_target, tmp_path, capsys, monkeypatch):
    studies.import_manifest(db, make_crowd_study(tmp_path / "crowd"))
    work_through(db, crowd_rater(db, CLI), 2)
    out = tmp_path / "pay.csv"
    db_path = db_target
    assert main(["--db", str(db_path), "crowd", "pay", "--study", "crowd", "-o",
                 str(out)]) == 0
    frame = pd.read_csv(out, dtype={"participant_id": str})
    assert list(frame.columns) == crowd_status.PAY_COLUMNS
    assert frame.loc[0, "participant_id"] == CLI and frame.loc[0, "items_done"] == 2
    assert main(["--db", str(db_path), "crowd", "pay", "--study", "crowd",
                 "--hourly-rate", "-1"]) == 1
    assert "hourly rate" in capsys.readouterr().err
    with pytest.raises(ConcordError, match="idle cap"):
        crowd_status.pay_report(db, "crowd", idle_cap=0)
    assert main(["--db", str(db_path), "crowd", "pay", "--study", "crowd"]) == 0
    shown = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(shown) == 1


@pytest.mark.parametrize(("crowd_block", "needle"), [
    ("crowd:\n  practise: {items: 1}\n", "crowd.practise"),
    ("crowd:\n  practice: {items: 1, pass_threshold: 1.5}\n", "crowd.practice.pass_threshold"),
    ("crowd:\n  practice: {items: 1, pass: 0.5}\n", "crowd.practice.pass"),
    ("crowd:\n  practice: {pass_threshold: 0.5}\n", "crowd.practice.items"),
    ("crowd:\n  practice: {items: 0}\n", "whole number from 1"),
    ("crowd:\n  items_per_rater: -3\n", "crowd.items_per_rater"),
    ("crowd:\n  hourly_rate: -1\n", "crowd.hourly_rate"),
    ("crowd:\n  idle_cap_seconds: 0\n", "crowd.idle_cap_seconds"),
    ("crowd:\n  consent: [yes]\n", "crowd.consent"),
    ("crowd: everyone\n", "expected a mapping"),
])
def test_bad_crowd_keys_are_refused(db, study_factory, crowd_block, needle):
    manifest = study_factory("bad", extra=crowd_block)
    with pytest.raises(InputError, match=needle) as info:
        studies.import_manifest(db, manifest)
    # one problem for the bad key (the other checks of the same run may add theirs, e.g. a
    # practice block without gold images)
    assert sum(needle in str(p) for p in info.value.problems) == 1
    assert "nothing was imported" in str(info.value)
    assert study_store.list_study_names(db) == []


def test_practice_needs_enough_gold_images(db, study_factory, tmp_path):
    manifest = study_factory("nogold", extra="crowd:\n  practice: {items: 2}\n")
    with pytest.raises(InputError, match="no 'gold' file") as info:
        studies.import_manifest(db, manifest)
    assert str(info.value).count("\n") == 0  # one line
    manifest = make_crowd_study(tmp_path / "few", practice=4)
    with pytest.raises(InputError, match="needs as many scoring gold images; the gold file"
                                         " has 3"):
        studies.import_manifest(db, manifest)
    assert study_store.list_study_names(db) == []


def test_crowd_settings_are_stored_with_the_study(db, tmp_path):
    studies.import_manifest(db, make_crowd_study(tmp_path / "crowd"))
    stored = study_store.get_study(db, "crowd").settings["crowd"]
    assert stored["practice_items"] == 2 and stored["pass_threshold"] == 0.5
    assert stored["consent"].startswith("I agree") and stored["items_per_rater"] == 4
