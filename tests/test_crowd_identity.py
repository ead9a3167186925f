"""One person per participant id: the study link and someone else's id do not make you
them; platform ids are never overwritten; ids have the platform's format; sign-ups are
limited; many ids from one client are shown to the researcher."""

from __future__ import annotations

import pytest

from concord.errors import AuthError, NotFoundError
from concord.services import studies
from concord.services.crowd import ids as crowd_ids
from concord.services.crowd import links as crowd
from concord.services.crowd import status as crowd_status
from concord.store import raters as rater_store
from concord.store.crowd import joins as crowd_joins
from concord.store.crowd import links as crowd_store
from concord.store.db import open_db, transaction
from tests.crowd_helpers import make_crowd_study

pytestmark = pytest.mark.both_engines

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"
VISIT = {"PROLIFIC_PID": PID, "STUDY_ID": "st1", "SESSION_ID": "se1"}


def link_token(db, study: str = "crowd", **kw) -> str:
    return crowd.create_link(db, study, "http://x", **kw).url.split("join=")[1]


def snapshot(db) -> list:
    """Everything a join could change about the participants."""
    return [db.execute(sql).fetchall() for sql in (
        "SELECT * FROM crowd_participants", "SELECT * FROM crowd_sessions",
        "SELECT id, name, token_hash, revoked_at FROM raters", "SELECT * FROM onboarding",
        "SELECT * FROM assignments")]


@pytest.fixture
def study(db, tmp_path):
    studies.import_manifest(db, make_crowd_study(tmp_path / "crowd"))
    return "crowd"


def test_someone_elses_id_through_the_study_link_is_refused_and_changes_nothing(db, study):
    token = link_token(db)
    first = crowd.join(db, token, VISIT)
    before = snapshot(db)
    for visit in ({**VISIT, "SESSION_ID": "se-attacker", "STUDY_ID": "st-x"},
                  {"PROLIFIC_PID": PID}, {"PROLIFIC_PID": PID.upper()}):
        with pytest.raises(crowd.TakenError, match="already started"):
            crowd.join(db, token, visit, proof="a-guessed-token")
    assert snapshot(db) == before  # the first participant's records are unchanged
    rater_store.rater_for_token(db, first.token)  # and their link still works
    refused = db.execute("SELECT COUNT(*) FROM crowd_joins WHERE outcome = 'refused'")
    assert refused.fetchone()[0] == 3
    (row,) = crowd_status.status(db, study)
    assert row["refused_visits"] == 3


def test_the_personal_token_is_random_not_derived_from_the_link_and_the_id(db, study,
                                                                            tmp_path):
    """Before, the token was an HMAC of the link token and the id: anyone with both could
    compute it. The same link token and id in two databases now give unrelated tokens."""
    db2 = open_db(tmp_path / "second.db")  # a second, identical study
    studies.import_manifest(db2, make_crowd_study(tmp_path / "copy" / "crowd"))
    tokens = []
    for one in (db, db2):
        with transaction(one):
            crowd_store.insert_link(one, 1, "the-same-link-token", "prolific", {})
        tokens.append(crowd.join(one, "the-same-link-token", VISIT).token)
    assert tokens[0] != tokens[1]
    assert db.execute("SELECT token_hash FROM raters").fetchone()[0] != tokens[0]


def test_the_same_platform_session_proves_the_participant(db, study):
    """Coming back from Prolific in the same session (another device): the session id is
    known only to the participant; they get a fresh token and the old one stops."""
    token = link_token(db)
    first = crowd.join(db, token, VISIT)
    again = crowd.join(db, token, VISIT)  # no cookie, same SESSION_ID
    assert again.rater_id == first.rater_id and again.token != first.token
    with pytest.raises(AuthError):
        rater_store.rater_for_token(db, first.token)
    assert db.execute("SELECT COUNT(*) FROM crowd_sessions").fetchone()[0] == 1


def test_platform_ids_are_never_overwritten_every_session_is_kept(db, study):
    token = link_token(db)
    first = crowd.join(db, token, VISIT)
    crowd.join(db, token, {**VISIT, "SESSION_ID": "se2", "STUDY_ID": "st2"},
               proof=first.token)
    crowd.join(db, token, VISIT, proof=first.token)  # a session seen before: no new row
    params = db.execute("SELECT params FROM crowd_participants").fetchone()[0]
    assert '"SESSION_ID":"se1"' in params and '"STUDY_ID":"st1"' in params
    assert [s["SESSION_ID"] for s in crowd_joins.sessions(db, first.rater_id)] == ["se1",
                                                                                   "se2"]
    (row,) = crowd_status.pay_report(db, study).to_dict("records")
    assert (row["sessions"], row["all_session_ids"], row["platform_session_id"]) == (
        2, "se1 se2", "se2")


def test_ids_are_compared_in_the_platforms_case(db, study):
    token = link_token(db)
    first = crowd.join(db, token, {"PROLIFIC_PID": PID.upper()})
    assert first.name.startswith(f"prolific:{PID}#")
    with pytest.raises(crowd.TakenError):
        crowd.join(db, token, {"PROLIFIC_PID": PID})


def test_a_link_with_any_id_accepts_other_formats(db, study):
    token = link_token(db, strict_ids=False)
    joined = crowd.join(db, token, {"PROLIFIC_PID": "tester-1"})
    assert joined.name.startswith("prolific:tester-1#")
    with pytest.raises(crowd_ids.JoinError, match="letters, digits"):
        crowd.join(db, token, {"PROLIFIC_PID": "bad id"})


def test_max_participants_caps_the_study(db, tmp_path):
    manifest = make_crowd_study(tmp_path / "crowd")
    manifest.write_text(manifest.read_text().replace("crowd:\n", "crowd:\n  max_participants: 2\n"))
    studies.import_manifest(db, manifest)
    token = link_token(db)
    a = crowd.join(db, token, {"PROLIFIC_PID": "a" * 24})
    crowd.join(db, token, {"PROLIFIC_PID": "b" * 24})
    with pytest.raises(crowd.LimitError, match="full"):
        crowd.join(db, token, {"PROLIFIC_PID": "c" * 24})
    assert crowd.join(db, token, {"PROLIFIC_PID": "a" * 24}, proof=a.token).rater_id == \
        a.rater_id  # who joined comes back
    rater_store.revoke(db, a.name)  # a revoked participant frees a place
    assert crowd.join(db, token, {"PROLIFIC_PID": "c" * 24}).new
    assert db.execute("SELECT COUNT(*) FROM crowd_participants").fetchone()[0] == 3


def test_joins_per_minute(db, tmp_path, monkeypatch):
    manifest = make_crowd_study(tmp_path / "crowd")
    manifest.write_text(manifest.read_text().replace("crowd:\n",
                                                     "crowd:\n  joins_per_minute: 2\n"))
    studies.import_manifest(db, manifest)
    token = link_token(db)
    stamp = {"now": "2026-01-01T10:00:00.000000+00:00"}  # the join log's clock, held still
    monkeypatch.setattr(crowd_joins, "now", lambda: stamp["now"])
    a = crowd.join(db, token, {"PROLIFIC_PID": "a" * 24})
    crowd.join(db, token, {"PROLIFIC_PID": "b" * 24})
    with pytest.raises(crowd.LimitError, match="in a minute"):
        crowd.join(db, token, {"PROLIFIC_PID": "c" * 24})
    crowd.join(db, token, {"PROLIFIC_PID": "a" * 24}, proof=a.token)  # resuming is not limited
    stamp["now"] = "2026-01-01T10:01:00.500000+00:00"  # a minute later
    assert crowd.join(db, token, {"PROLIFIC_PID": "c" * 24}).new
    outcomes = [r[0] for r in db.execute("SELECT outcome FROM crowd_joins ORDER BY id")]
    assert outcomes == ["joined", "joined", "busy", "resumed", "joined"]


def test_many_ids_from_one_client_are_flagged(db, study):
    token = link_token(db)
    for pid in ("a" * 24, "b" * 24, "c" * 24):
        crowd.join(db, token, {"PROLIFIC_PID": pid}, client="203.0.113.9")
    crowd.join(db, token, {"PROLIFIC_PID": "d" * 24}, client="198.51.100.7")
    rows = {r["participant_id"]: r for r in crowd_status.status(db, study)}
    assert rows["a" * 24]["ids_from_client"] == 3
    assert rows["a" * 24]["flag"] == "many ids from one client"
    assert rows["d" * 24]["flag"] == ""
    ((client, n),) = crowd_status.automated_clients(db, study)
    assert n == 3 and "203.0.113.9" not in client  # only a keyed hash is kept
    stored = " ".join(str(r) for r in db.execute("SELECT * FROM crowd_joins"))
    assert "203.0.113" not in stored


def test_malformed_ids_are_logged_not_joined(db, study):
    token = link_token(db)
    with pytest.raises(crowd_ids.JoinError):
        crowd.join(db, token, {"PROLIFIC_PID": "x" * 24}, client="203.0.113.9")
    assert [r[0] for r in db.execute("SELECT outcome FROM crowd_joins")] == ["invalid"]
    assert db.execute("SELECT COUNT(*) FROM raters").fetchone()[0] == 0


def test_relink_gives_a_participant_a_new_personal_link(db, study):
    first = crowd.join(db, link_token(db), VISIT)
    url = crowd.relink(db, study, PID.upper(), "http://host")
    token = url.split("token=")[1]
    assert rater_store.rater_for_token(db, token).id == first.rater_id
    with pytest.raises(AuthError):
        rater_store.rater_for_token(db, first.token)
    with pytest.raises(NotFoundError):
        crowd.relink(db, study, "f" * 24, "http://host")


def test_one_client_cannot_use_up_the_studys_joins(db, tmp_path, monkeypatch):
    """294 sign-ups a minute came from one client: now it gets joins_per_client_per_minute
    of them, and participants elsewhere still get in."""
    manifest = make_crowd_study(tmp_path / "crowd")
    manifest.write_text(manifest.read_text().replace(
        "crowd:\n", "crowd:\n  joins_per_client_per_minute: 2\n"))
    studies.import_manifest(db, manifest)
    monkeypatch.setattr(crowd_joins, "now", lambda: "2026-01-01T10:00:00.000000+00:00")
    token = link_token(db)
    for pid in ("a" * 24, "b" * 24):
        crowd.join(db, token, {"PROLIFIC_PID": pid}, client="203.0.113.9")
    with pytest.raises(crowd.LimitError):
        crowd.join(db, token, {"PROLIFIC_PID": "c" * 24}, client="203.0.113.9")
    assert crowd.join(db, token, {"PROLIFIC_PID": "d" * 24}, client="198.51.100.7").new


@pytest.mark.parametrize("pid", ["5f1a2b3c4d5e6f7a8b9c0d1\n", "5f1a2b3c4d5e6f7a8b9c\u20280d1e",
                                 "5f1a2b3c4d5e6f7a8b9c0d1\x00", "5" * 1_000_000, "５" * 24,
                                 "'; DROP TABLE raters; --"])
def test_hostile_participant_ids_are_one_short_error(db, study, pid):
    token = link_token(db)
    with pytest.raises(crowd_ids.JoinError) as info:
        crowd.join(db, token, {"PROLIFIC_PID": pid, "SESSION_ID": "x" * 600})
    assert len(str(info.value)) < 300
    assert db.execute("SELECT COUNT(*) FROM raters").fetchone()[0] == 0


def test_many_or_odd_cookies_are_only_tried_not_trusted(db, study):
    token = link_token(db)
    first = crowd.join(db, token, VISIT)
    junk = ["", "\x00", "x" * 10_000, *(f"t{i}" for i in range(100))]
    with pytest.raises(crowd.TakenError):
        crowd.join(db, token, {"PROLIFIC_PID": PID}, proof=junk)
    assert crowd.join(db, token, {"PROLIFIC_PID": PID},
                      proof=[first.token, *junk]).rater_id == first.rater_id


def test_cli_link_any_id_and_relink(tmp_path, capsys, monkeypatch):
    from concord.cli import main

    monkeypatch.setenv("CONCORD_BASE_URL", "http://crowd.example")
    dbp = str(tmp_path / "cli.db")
    assert main(["--db", dbp, "import", str(make_crowd_study(tmp_path / "crowd"))]) == 0
    assert main(["--db", dbp, "crowd", "link", "--study", "crowd", "--any-id"]) == 0
    url = capsys.readouterr().out.strip()
    db = open_db(dbp)
    joined = crowd.join(db, url.split("join=")[1], {"PROLIFIC_PID": "pilot-tester"})
    assert main(["--db", dbp, "crowd", "relink", "--study", "crowd", "--participant",
                 "pilot-tester"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("http://crowd.example/?token=") and "stops working" in err
    assert rater_store.rater_for_token(db, out.strip().split("token=")[1]).id == \
        joined.rater_id
    assert main(["--db", dbp, "crowd", "relink", "--study", "crowd", "--participant",
                 "nobody"]) == 1
    assert "no participant 'nobody'" in capsys.readouterr().err
