"""Study links: create, rotate, revoke; one rater per participant id; resume; errors."""

from __future__ import annotations

import threading

import pytest

from concord.errors import AuthError, ConcordError
from concord.services import studies
from concord.services.crowd import ids as crowd_ids
from concord.services.crowd import links as crowd
from concord.store import raters as rater_store
from concord.store.db import open_db
from tests.crowd_helpers import make_crowd_study

pytestmark = pytest.mark.both_engines

PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "st1", "SESSION_ID": "se1"}


@pytest.fixture
def study(db, tmp_path):
    studies.import_manifest(db, make_crowd_study(tmp_path / "crowd"))
    return "crowd"


def token_of(created: crowd.CreatedLink) -> str:
    return created.url.split("join=")[1]


def test_link_url_carries_a_token_whose_hash_only_is_stored(db, study):
    created = crowd.create_link(db, study, "http://host:8501/", platform="prolific",
                                codes={"completion_code": "C0DE"})
    assert created.url.startswith("http://host:8501/?join=")
    token = token_of(created)
    stored = [r[0] for r in db.execute("SELECT token_hash FROM crowd_links")]
    assert token not in stored and len(stored) == 1
    assert created.link.completion_code == "C0DE" and created.link.active


def test_join_creates_one_rater_with_the_platform_parameters(db, study):
    token = token_of(crowd.create_link(db, study, "http://x"))
    joined = crowd.join(db, token, PROLIFIC)
    assert joined.new and joined.study == study
    user = rater_store.rater_for_token(db, joined.token)
    assert user.id == joined.rater_id
    (part,) = db.execute("SELECT participant_id, params FROM crowd_participants").fetchall()
    assert part[0] == PROLIFIC["PROLIFIC_PID"]
    assert '"SESSION_ID":"se1"' in part[1] and '"STUDY_ID":"st1"' in part[1]
    # the personal token is stored hashed, like an invite's
    assert db.execute("SELECT COUNT(*) FROM raters WHERE token_hash = ?",
                      [joined.token]).fetchone()[0] == 0


def test_same_participant_coming_back_with_their_token_is_the_same_rater(db, study):
    token = token_of(crowd.create_link(db, study, "http://x"))
    first = crowd.join(db, token, PROLIFIC)
    # the same browser (its cookie holds the personal token), in a new Prolific session
    again = crowd.join(db, token, {**PROLIFIC, "SESSION_ID": "se2"}, proof=first.token)
    assert again.rater_id == first.rater_id and not again.new
    assert again.token == first.token  # an open tab on the first token keeps working
    rater_store.rater_for_token(db, first.token)
    params = db.execute("SELECT params FROM crowd_participants").fetchone()[0]
    assert '"SESSION_ID":"se1"' in params  # the first visit's ids are never overwritten
    sessions = [r[0] for r in db.execute("SELECT params FROM crowd_sessions ORDER BY id")]
    assert ['"SESSION_ID":"se1"' in sessions[0], '"SESSION_ID":"se2"' in sessions[1]] == [
        True, True]
    assert db.execute("SELECT COUNT(*) FROM crowd_participants").fetchone()[0] == 1


def test_two_participants_are_two_raters(db, study):
    token = token_of(crowd.create_link(db, study, "http://x"))
    a = crowd.join(db, token, PROLIFIC)
    b = crowd.join(db, token, {**PROLIFIC, "PROLIFIC_PID": "0" * 23 + "1"})
    assert a.rater_id != b.rater_id and a.token != b.token


def test_simultaneous_first_visits_make_one_account(db_target, study, db):
    """Six tabs opening the link with one id at once: one account; the five visits that
    came second bring no proof of being its owner and are refused."""
    token = token_of(crowd.create_link(db, study, "http://x"))
    path = db_target
    got, errors = [], []

    def visit() -> None:
        conn = open_db(path)
        try:
            got.append(crowd.join(conn, token, {"PROLIFIC_PID": PROLIFIC["PROLIFIC_PID"]}))
        except Exception as exc:  # counted below
            errors.append(exc)
        finally:
            conn.close()

    threads = [threading.Thread(target=visit) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [type(e) for e in errors] == [crowd.TakenError] * 5
    assert len(got) == 1 and got[0].new
    assert db.execute("SELECT COUNT(*) FROM crowd_participants").fetchone()[0] == 1


@pytest.mark.parametrize(("platform", "params", "needle"), [
    ("prolific", {"STUDY_ID": "st1"}, "PROLIFIC_PID"),
    ("prolific", {"PROLIFIC_PID": ""}, "PROLIFIC_PID"),
    ("mturk", {"assignmentId": "a1", "hitId": "h1"}, "workerId"),
    ("prolific", {"PROLIFIC_PID": "bad id;drop"}, "24 hexadecimal"),
    ("prolific", {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1"}, "24 hexadecimal"),  # 23
    ("prolific", {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1g"}, "24 hexadecimal"),
    ("mturk", {"workerId": "B1B2C3D4E5F6G7"}, "'A' and 11 to 13"),
    ("mturk", {"workerId": "A1B2C3"}, "'A' and 11 to 13"),
    ("mturk", {"workerId": "A1B2C3D4E5F6G7H8"}, "'A' and 11 to 13"),
])
def test_missing_or_bad_participant_id_is_one_clear_error(db, study, platform, params, needle):
    token = token_of(crowd.create_link(db, study, "http://x", platform=platform))
    with pytest.raises(crowd_ids.JoinError, match=needle):
        crowd.join(db, token, params)
    assert db.execute("SELECT COUNT(*) FROM crowd_participants").fetchone()[0] == 0


def test_mturk_preview_asks_to_accept_the_hit(db, study):
    token = token_of(crowd.create_link(db, study, "http://x", platform="mturk"))
    with pytest.raises(crowd_ids.PreviewError, match="accept the HIT"):
        crowd.join(db, token, {"assignmentId": crowd_ids.MTURK_PREVIEW, "hitId": "h"})
    joined = crowd.join(db, token, {"workerId": "a1b2c3d4e5f6g7", "assignmentId": "AS1",
                                    "hitId": "H1"})
    assert joined.name.startswith("mturk:A1B2C3D4E5F6G7")  # compared in upper case


def test_platform_none_without_id_makes_an_anonymous_rater(db, study):
    token = token_of(crowd.create_link(db, study, "http://x", platform="none"))
    a, b = crowd.join(db, token, {}), crowd.join(db, token, {})
    assert a.rater_id != b.rater_id
    # the browser that kept a's token comes back as a
    assert crowd.join(db, token, {}, proof=a.token).rater_id == a.rater_id
    p7 = crowd.join(db, token, {"participant": "p-7"})
    assert crowd.join(db, token, {"participant": "p-7"}, proof=p7.token).rater_id == \
        p7.rater_id
    with pytest.raises(crowd.TakenError):
        crowd.join(db, token, {"participant": "p-7"})


def test_unknown_revoked_and_rotated_links(db, study):
    with pytest.raises(AuthError, match="not valid"):
        crowd.join(db, "nope", PROLIFIC)
    old = token_of(crowd.create_link(db, study, "http://x", codes={"completion_code": "A1"}))
    joined = crowd.join(db, old, PROLIFIC)
    new = crowd.create_link(db, study, "http://x", rotate=True)
    with pytest.raises(AuthError, match="closed"):
        crowd.join(db, old, PROLIFIC)
    rater_store.rater_for_token(db, joined.token)  # who joined keeps their own link
    assert crowd.join(db, token_of(new), PROLIFIC, proof=joined.token).rater_id == \
        joined.rater_id
    assert crowd.revoke_links(db, study) == 1
    with pytest.raises(AuthError, match="closed"):
        crowd.join(db, token_of(new), PROLIFIC)


def test_a_revoked_participant_cannot_come_back(db, study):
    token = token_of(crowd.create_link(db, study, "http://x"))
    joined = crowd.join(db, token, PROLIFIC)
    rater_store.revoke(db, joined.name)
    with pytest.raises(AuthError, match="ended by the researcher"):
        crowd.join(db, token, PROLIFIC)


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"platform": "clickworker"}, "unknown platform"),
    ({"codes": {"completion_code": "A", "completion_url": "https://x"}}, "not both"),
    ({"codes": {"completion_url": "javascript:alert(1)"}}, "http"),
    ({"codes": {"screenout_code": "has space"}}, "letters"),
])
def test_bad_link_settings_are_refused(db, study, kwargs, needle):
    with pytest.raises(ConcordError, match=needle):
        crowd.create_link(db, study, "http://x", **kwargs)
    assert crowd.links(db, study) == []


@pytest.mark.parametrize("command", ["crowd link", "crowd links", "crowd revoke", "crowd relink",
                                     "crowd status", "crowd pay"])
def test_crowd_commands_have_help_and_docs(capsys, command):
    from concord.cli import main
    from tests.helpers import ROOT

    with pytest.raises(SystemExit) as info:
        main([*command.split(), "--help"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m concord {command}")
    assert f"concord {command}" in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def test_crowd_cli_link_status_revoke(tmp_path, capsys, monkeypatch):
    from concord.cli import main

    monkeypatch.setenv("CONCORD_BASE_URL", "http://crowd.example:9000")
    dbp = str(tmp_path / "cli.db")
    assert main(["--db", dbp, "import", str(make_crowd_study(tmp_path / "crowd"))]) == 0
    capsys.readouterr()
    assert main(["--db", dbp, "crowd", "link", "--study", "crowd", "--platform", "mturk",
                 "--completion-code", "FIN-7"]) == 0
    out, err = capsys.readouterr()
    url = out.strip()
    assert url.startswith("http://crowd.example:9000/?join=") and "workerId" in err
    joined = crowd.join(open_db(dbp), url.split("join=")[1],
                        {"workerId": "A1W2X3Y4Z5Q6R7", "assignmentId": "A1"})
    assert main(["--db", dbp, "crowd", "status", "--study", "crowd"]) == 0
    status = capsys.readouterr().out
    assert joined.name in status and "consent" in status
    assert main(["--db", dbp, "crowd", "links", "--study", "crowd"]) == 0
    listing = capsys.readouterr().out
    assert "FIN-7" in listing and url.split("join=")[1] not in listing
    assert main(["--db", dbp, "crowd", "link", "--study", "crowd", "--completion-code", "a b"]
                ) == 1
    assert "completion code" in capsys.readouterr().err
    assert main(["--db", dbp, "crowd", "revoke", "--study", "crowd"]) == 0
    assert "closed 1 link" in capsys.readouterr().out
