"""AppTest: the crowd screens a participant who games the study meets — a skipper gets the
screen-out code and never the completion code, a taken participant id is refused (a
browser that kept the token comes back), the progress total is the quota, a pair study
shows its code, failed checks warn."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from concord.services import studies
from concord.services.crowd import links as crowd
from concord.store.db import open_db
from concord.ui import crowd_join
from tests.app.conftest import APP
from tests.helpers import make_folder_study

PID = "5f1a2b3c4d5e6f7a8b9c0d1e"
CODES = {"completion_code": "DONE42", "screenout_code": "NOPE13"}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    db_path = tmp_path / "app.db"
    monkeypatch.setenv("CONCORD_DB", str(db_path))
    monkeypatch.setenv("CONCORD_ADMIN_SECRET", "letmein")
    return {"db": open_db(db_path), "root": tmp_path}


def study(env, crowd_block: str, *, protocol: str = "score",
          models: tuple[str, ...] = ("m1", "m2"), extra: str = "") -> str:
    manifest = make_folder_study(env["root"] / "s", prompts=5, models=models, k=3,
                                 protocol=protocol, extra=extra + "crowd:\n" + crowd_block)
    studies.import_manifest(env["db"], manifest)
    link = crowd.create_link(env["db"], "s", "http://x", codes=CODES)
    return link.url.split("join=")[1]


def visit(join: str, pid: str = PID, session: str = "X1") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params.update({"join": join, "PROLIFIC_PID": pid, "STUDY_ID": "S1",
                            "SESSION_ID": session})
    return at.run()


def skip(at: AppTest) -> AppTest:
    at.button(key="rate_skip_btn").click().run()
    at.text_input(key="rate_skip_reason").input("cannot tell")
    return at.button(key="rate_skip_ok").click().run()


def codes(at: AppTest) -> list[str]:
    return [c.value for c in at.code]


def test_a_skipper_gets_the_screen_out_code_never_the_completion_code(env):
    at = visit(study(env, "  items_per_rater: 2\n"))
    assert not at.exception, at.exception
    assert "0 / 2 rated · 0 skipped" in at.get("progress")[0].proto.text
    skip(at)
    assert "0 / 2 rated · 1 skipped" in at.get("progress")[0].proto.text  # the total stays
    assert "DONE42" not in codes(at)
    skip(at)
    assert "DONE42" not in codes(at) and "NOPE13" not in codes(at)
    skip(at)  # the third skip is one more than the quota allows
    assert not at.exception, at.exception
    assert "NOPE13" in codes(at) and "DONE42" not in codes(at)
    assert any("skipped more items than this study allows" in m.value for m in at.markdown)
    again = AppTest.from_file(APP, default_timeout=30)  # a reload of their own link
    again.query_params["token"] = at.session_state["concord_token"]
    again.run()
    assert again.title[0].value == "Thank you" and codes(again) == ["NOPE13"]
    assert len(again.radio) == 0


def test_a_taken_participant_id_is_refused_and_changes_nothing(env, monkeypatch):
    join = study(env, "  items_per_rater: 2\n")
    first = visit(join)
    token = first.session_state["concord_token"]
    before = env["db"].execute("SELECT * FROM crowd_sessions").fetchall()
    other = visit(join, session="X2")  # another browser: no cookie, another session
    assert len(other.error) == 1 and "already started" in other.error[0].value
    assert len(other.radio) == 0 and "concord_user" not in other.session_state
    assert env["db"].execute("SELECT * FROM crowd_sessions").fetchall() == before
    # the browser that kept the token in its cookie comes back through the study link
    monkeypatch.setattr(crowd_join, "proofs", lambda: [token])
    back = visit(join, session="X3")
    assert not back.error and back.session_state["concord_token"] == token
    assert [r[0] for r in env["db"].execute("SELECT params FROM crowd_sessions ORDER BY id")
            ][-1].count("X3") == 1


def test_a_pair_study_ends_with_the_completion_code(env):
    at = visit(study(env, "  items_per_rater: 2\n", protocol="pair",
                     models=("m1", "m2", "m3")))
    assert not at.exception, at.exception
    for _ in range(2):
        at.button(key="pair_pick_left").click().run()
        assert not at.exception, at.exception
    assert codes(at) == ["DONE42"]
    assert any("finished this study" in s.value for s in at.success)


def test_failed_checks_warn_the_rater(env):
    gold = env["root"] / "s" / "gold.csv"
    gold.parent.mkdir(parents=True, exist_ok=True)
    gold.write_text("prompt_id,model,criterion,expected,tolerance\n"
                    + "".join(f"p{i},m{j},SC,2,0\n" for i in range(5) for j in (1, 2)),
                    encoding="utf-8")
    at = visit(study(env, "  items_per_rater: 3\n", extra="gold: gold.csv\nquality:\n"
                     "  warn_after: 1\n  block_after: 3\n"))
    at.radio(key="rate_SC").set_value(0.0)  # every image is gold here: SC 0 is wrong
    at.radio(key="rate_PR").set_value(1.0)
    at.button(key="rate_submit").click().run()
    assert not at.exception, at.exception
    assert any("1 of your answers to check items" in w.value for w in at.warning)
