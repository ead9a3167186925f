"""`python -m concord`: every command, --db / CONCORD_DB, help texts and one-line errors."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from concord.cli import build_parser, main
from concord.store import open_db
from concord.store import raters as rater_store
from tests.foundation_helpers import ROOT, make_folder_study, snapshot


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its path (``"raters add"`` for sub-actions)."""
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    out[" ".join([*prefix, name])] = sub
                    walk(sub, [*prefix, name])

    walk(build_parser(), [])
    return out


# Every command and sub-action, read from the parser itself: a new command is checked for
# help, description and documentation without editing this file.
COMMANDS = sorted(_parsers())

def run(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def cli(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m concord`` in a subprocess from the repository root."""
    full_env = {k: v for k, v in os.environ.items() if k != "CONCORD_DB"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "concord", *argv], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def dbp(tmp_path) -> str:
    """Path of the test database (created by the first command)."""
    return str(tmp_path / "cli.db")


@pytest.fixture
def study(tmp_path, dbp, capsys) -> str:
    """A folder study 's' imported through the CLI."""
    manifest = make_folder_study(tmp_path / "s", prompts=2)
    assert run(capsys, "--db", dbp, "import", str(manifest))[0] == 0
    return "s"


# --- help ---------------------------------------------------------------------------

def test_the_parser_lists_the_commands_users_know():
    assert {"init", "import", "import-ratings", "import-scores", "raters add", "export",
            "studies", "delete-study", "validate-rubrics", "score", "stats", "metrics",
            "merge-scores", "backup", "restore", "crowd link"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_exits_0_with_a_description(capsys, command):
    with pytest.raises(SystemExit) as info:
        main([*command.split(), "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m concord {command}")
    description = _parsers()[command].description
    assert description
    assert " ".join(description.split()[:4]) in " ".join(out.split())


def test_every_command_is_documented():
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = [c for c in COMMANDS if f"`{c}" not in doc and f"concord {c}" not in doc]
    assert not missing


def test_top_level_help_in_a_subprocess():
    res = cli("--help")
    assert res.returncode == 0
    assert "import-ratings" in res.stdout
    assert "--db" in res.stdout


# --- database selection -------------------------------------------------------------

def test_db_option_and_environment(tmp_path, capsys, monkeypatch):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    assert run(capsys, "--db", str(a), "init", "--no-demo")[0] == 0
    monkeypatch.setenv("CONCORD_DB", str(b))
    code, out, _ = run(capsys, "init")
    assert code == 0
    assert str(b) in out
    assert "demo" in out
    assert run(capsys, "--db", str(a), "studies")[1].strip() == "(none)"
    assert "demo" in run(capsys, "studies")[1]  # from CONCORD_DB


def test_init_loads_the_demo_once(capsys, dbp):
    assert "loaded demo study 'demo'" in run(capsys, "--db", dbp, "init")[1]
    code, out, _ = run(capsys, "--db", dbp, "init")
    assert code == 0
    assert "loaded" not in out


# --- import / studies ---------------------------------------------------------------

def test_import_and_reimport(tmp_path, capsys, dbp):
    manifest = make_folder_study(tmp_path / "s", prompts=2)
    code, out, _ = run(capsys, "--db", dbp, "import", str(manifest))
    assert code == 0
    assert "study 's' created: 2 models, 2 prompts" in out
    assert "4 images" in out
    code, out, _ = run(capsys, "--db", dbp, "import", str(manifest))
    assert code == 0
    assert "nothing changed (4 images already there)" in out
    code, out, _ = run(capsys, "--db", dbp, "studies")
    assert out.splitlines()[0].split()[:3] == ["study", "protocol", "rubric"]
    assert out.splitlines()[1].split()[0] == "s"


def test_import_error_is_reported_without_traceback(tmp_path, capsys, dbp):
    manifest = make_folder_study(tmp_path / "s", prompts=2)
    bad = tmp_path / "s" / "images" / "m1" / "p0.png"
    bad.write_text("x")
    code, out, err = run(capsys, "--db", dbp, "import", str(manifest))
    assert code == 1
    assert out == ""
    assert err.startswith(f"error: {bad}, field 'image': not a readable image")
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err


# --- raters -------------------------------------------------------------------------

def test_raters_add_prints_one_url_each(capsys, dbp, study, monkeypatch):
    monkeypatch.setenv("CONCORD_BASE_URL", "https://rate.example.org/")
    code, out, _ = run(capsys, "--db", dbp, "raters", "add", "--study", study, "ann", "ben")
    lines = out.splitlines()
    assert code == 0
    assert [ln.split("\t")[0] for ln in lines] == ["ann", "ben"]
    db = open_db(dbp)
    for line in lines:
        name, url = line.split("\t")
        assert url.startswith("https://rate.example.org/?token=")
        token = url.split("token=")[1]
        assert rater_store.rater_for_token(db, token).name == name
        assert not any(token in str(v) for t, rows in snapshot(db).items()
                       for row in rows for v in row)
    db.close()
    raw = b"".join(p.read_bytes() for p in Path(dbp).parent.glob("cli.db*"))
    assert all(ln.split("token=")[1].encode() not in raw for ln in lines)


def test_raters_list_and_revoke(capsys, dbp, study):
    run(capsys, "--db", dbp, "raters", "add", "--study", study, "ann")
    code, out, _ = run(capsys, "--db", dbp, "raters", "list", "--study", study)
    assert code == 0
    assert out.splitlines()[1].split()[:4] == ["ann", "rater", "active", "s"]
    code, out, _ = run(capsys, "--db", dbp, "raters", "revoke", "ann")
    assert code == 0
    assert "revoked 'ann'" in out
    assert "revoked" in run(capsys, "--db", dbp, "raters", "list")[1].splitlines()[1]


def test_raters_add_refuses_an_empty_name_before_inviting_anyone(capsys, dbp, study):
    code, out, err = run(capsys, "--db", dbp, "raters", "add", "--study", study, "ann", " ")
    assert code == 1
    assert out == ""
    assert "empty rater name" in err
    assert open_db(dbp).execute("SELECT COUNT(*) FROM raters").fetchone()[0] == 0


# --- delete-study ---------------------------------------------------------------------

def test_delete_study_needs_yes(capsys, dbp, study):
    before = snapshot(open_db(dbp))
    code, out, err = run(capsys, "--db", dbp, "delete-study", "--study", study)
    assert code == 1
    assert "add --yes to confirm" in err
    assert len(err.splitlines()) == 1
    assert snapshot(open_db(dbp)) == before
    code, out, _ = run(capsys, "--db", dbp, "delete-study", "--study", study, "--yes")
    assert code == 0
    assert out.startswith("deleted study 's': 2 models, 2 prompts, 4 images")
    assert run(capsys, "--db", dbp, "studies")[1].strip() == "(none)"


# --- validate-rubrics -----------------------------------------------------------------

def test_validate_rubrics(capsys, tmp_path):
    code, out, _ = run(capsys, "--db", str(tmp_path / "x.db"), "validate-rubrics")
    assert code == 0
    assert "all rubrics are valid" in out
    code, _, err = run(capsys, "--db", str(tmp_path / "x.db"), "validate-rubrics", "--dir",
                       str(tmp_path / "none"))
    assert code == 1
    assert err.startswith("error:")


# --- import-ratings / import-scores / export (details in their own test files) -----------

def test_ratings_scores_and_export_commands(tmp_path, capsys, dbp):
    ratings = tmp_path / "r.csv"
    ratings.write_text("prompt_id,model,rater,criterion,value\np1,A,ann,SC,1\np1,A,ann,PR,0.5\n"
                       "p1,B,ann,SC,0\np1,B,ann,PR,1\n")
    code, out, _ = run(capsys, "--db", dbp, "import-ratings", "--study", "r", "--format", "csv",
                       str(ratings))
    assert code == 0
    assert "(new ratings-only study)" in out
    assert "4 ratings added" in out
    scores = tmp_path / "s.csv"
    scores.write_text("prompt_id,model,metric,value\np1,A,clip,0.3\np1,B,clip,0.2\n")
    code, out, _ = run(capsys, "--db", dbp, "import-scores", "--study", "r", "--format", "csv",
                       str(scores))
    assert code == 0
    assert "2 scores read, 2 stored" in out
    code, out, _ = run(capsys, "--db", dbp, "export", "--study", "r", "--format", "csv")
    assert code == 0
    assert out.splitlines()[0].startswith("study,kind,prompt_id")
    assert len(out.splitlines()) == 5
    target = tmp_path / "out.parquet"
    code, _, err = run(capsys, "--db", dbp, "export", "--study", "r", "--format", "parquet",
                       "-o", str(target))
    assert code == 0
    assert target.stat().st_size > 0
    assert "wrote" in err


# --- user errors: one line, exit 1, no traceback ------------------------------------------

ERRORS = [
    (["export", "--study", "nope"], "no study named 'nope'"),
    (["export", "--study", "s", "--format", "parquet"], "needs -o FILE"),
    (["export", "--study", "s", "--format", "imagenhub"], "needs -o FOLDER"),
    (["raters", "revoke", "nobody"], "no rater named 'nobody'"),
    (["raters", "add", "--study", "nope", "x"], "no study named 'nope'"),
    (["delete-study", "--study", "nope", "--yes"], "no study named 'nope'"),
    (["import-ratings", "--study", "s", "--format", "csv", "/no/such.csv"], "file not found"),
    (["import-scores", "--study", "s", "--format", "csv", "/no/such.csv"], "file not found"),
    (["export", "--study", "s", "-o", "/no/such/dir/x.csv"], "No such file or directory"),
]


@pytest.mark.parametrize(("argv", "message"), ERRORS)
def test_user_errors_in_process(capsys, dbp, study, argv, message):
    code, out, err = run(capsys, "--db", dbp, *argv)
    assert code == 1
    assert out == ""
    assert err.startswith("error: ")
    assert message in err
    assert len(err.strip().splitlines()) == 1, err


def test_user_errors_in_a_subprocess(tmp_path):
    db = str(tmp_path / "sub.db")
    checks = [
        (["--db", db, "import", str(tmp_path / "missing.yaml")], "missing.yaml: file not found"),
        (["--db", db, "export", "--study", "nope"], "no study named 'nope'"),
        (["--db", db, "delete-study", "--study", "x"], "add --yes to confirm"),
        (["--db", str(tmp_path), "studies"], "unable to open database file"),
    ]
    for argv, message in checks:
        res = cli(*argv)
        assert res.returncode == 1, (argv, res.stderr)
        assert "Traceback" not in res.stderr
        assert message in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_concord_db_environment_in_a_subprocess(tmp_path):
    db = tmp_path / "env.db"
    res = cli("init", "--no-demo", env={"CONCORD_DB": str(db)})
    assert res.returncode == 0
    assert db.is_file()
    assert str(db) in res.stdout


def test_bad_arguments_exit_2_with_usage(capsys):
    with pytest.raises(SystemExit) as info:
        main(["export"])
    assert info.value.code == 2
    assert "--study" in capsys.readouterr().err


def test_the_export_cli_lists_every_export_format():
    from concord import export
    from concord.cli import export as export_cli
    from concord.services.exports import tables as export_tables

    assert export_cli.LABEL_FORMATS == export.FORMATS
    assert export_cli.TABLE_TYPES == export_tables.TABLE_TYPES
