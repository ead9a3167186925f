"""Study and rater names are one line of visible text: empty names, newlines and NULs are
refused with one line, before anything is written."""

from __future__ import annotations

import pytest

from concord.cli import main
from concord.errors import ConcordError
from concord.store import open_db
from concord.store import raters as rater_store
from tests.foundation_helpers import make_folder_study, snapshot


@pytest.fixture
def dbp(tmp_path, capsys) -> str:
    """A database with the folder study 's', imported through the CLI."""
    path = str(tmp_path / "cli.db")
    assert main(["--db", path, "import", str(make_folder_study(tmp_path / "s", prompts=2))]) == 0
    capsys.readouterr()
    return path


def _fails(capsys, dbp: str, *argv: str) -> str:
    before = snapshot(open_db(dbp))
    assert main(["--db", dbp, *argv]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert len(out.err.strip().splitlines()) == 1, out.err
    assert snapshot(open_db(dbp)) == before
    return out.err


@pytest.mark.parametrize("study", ["", "  ", "a\nb", "a\x00b"])
def test_import_ratings_refuses_a_bad_study_name(capsys, dbp, tmp_path, study):
    ratings = tmp_path / "r.csv"
    ratings.write_text("prompt_id,model,rater,criterion,value\np0,m1,ann,SC,1\n")
    err = _fails(capsys, dbp, "import-ratings", "--study", study, "--format", "csv",
                 str(ratings))
    assert err.startswith("error: --study: ")


def test_every_study_option_is_checked(capsys, dbp):
    assert "--study: empty study name" in _fails(capsys, dbp, "export", "--study", "")
    assert "U+000A" in _fails(capsys, dbp, "raters", "add", "--study", "s\n", "ann")


@pytest.mark.parametrize(("name", "code"), [("ann\nbob", "U+000A"), ("ann\x00", "U+0000"),
                                            ("a\u2028b", "U+2028"), ("\t", "empty")])
def test_raters_add_refuses_a_control_character_before_inviting_anyone(capsys, dbp, name, code):
    err = _fails(capsys, dbp, "raters", "add", "--study", "s", "carl", name)
    assert code in err


def test_ensure_rater_refuses_a_new_bad_name(tmp_path):
    db = open_db(tmp_path / "c.db")
    with pytest.raises(ConcordError, match=r"U\+000D"):
        rater_store.ensure_rater(db, "bob\r")
    assert db.execute("SELECT COUNT(*) FROM raters").fetchone()[0] == 0


def test_ordinary_names_pass():
    from concord.names import name_problem

    for name in ("ann", "Zoë Ng", "rater 12", "=cmd()", "研究者", "a" * 200):
        assert name_problem(name, "rater") is None
    assert "longer than 200" in name_problem("a" * 201, "rater")
    assert "must be text" in name_problem(12, "study")
