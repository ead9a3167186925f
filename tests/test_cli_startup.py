"""`python -m concord` starts light: help and input errors load no command they do not run,
nor pandas, scipy or torch; a command module that fails to import is not hidden; `score`
without the metrics packages says how to install them. Timings: bench/bench_cli_startup.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from concord import cli
from concord.cli import build_parser, main
from concord.importers.tables import readable_file_problem
from concord.services import studies
from concord.store.db import open_db
from tests.foundation_helpers import ROOT, make_folder_study

HEAVY = ("pandas", "numpy", "scipy", "torch", "transformers", "pyarrow")

# Runs the CLI in a fresh interpreter, then reports the exit code and what got imported.
PROBE = """
import json, sys
from concord.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = [m for m in {heavy!r} if m in sys.modules]
commands = sorted(m for m in sys.modules if m.startswith("concord.cli."))
print(json.dumps({{"code": code, "heavy": heavy, "commands": commands}}), file=sys.stderr)
"""


def probe(*argv: str) -> tuple[dict, str]:
    """(exit code and imported modules, the CLI's own stderr) of one run in a subprocess."""
    res = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    *lines, last = res.stderr.strip().splitlines()
    return json.loads(last), "\n".join(lines)


def test_help_imports_no_command_module():
    seen, _ = probe("--help")
    assert seen == {"code": 0, "heavy": [], "commands": []}


@pytest.mark.parametrize(("argv", "message"), [
    (["stats", "--study", "nope"], "no study named 'nope'"),
    (["raters", "add", "--study", "nope", "ann"], "no study named 'nope'"),
    (["import", "missing.yaml"], "missing.yaml: file not found"),
    (["import-ratings", "--study", "s", "--format", "csv", "missing.csv"],
     "missing.csv: file not found"),
    (["import-scores", "--study", "s", "--format", "csv", "missing.csv"],
     "missing.csv: file not found"),
    (["import-scores", "--study", "s", "--format", "tiif", "missing.jsonl"],
     "missing.jsonl: file not found"),
    (["score", "--study", "s", "--metric", "nope"], "unknown metric 'nope'"),
])
def test_an_input_error_answers_before_pandas_and_scipy_load(tmp_path, argv, message):
    seen, err = probe("--db", str(tmp_path / "c.db"), *argv)
    assert seen["code"] == 1
    assert message in err
    assert len(err.splitlines()) == 1, err
    assert seen["heavy"] == []
    # only the module of the command that ran (and the shared helpers)
    assert set(seen["commands"]) <= {"concord.cli.common", "concord.cli.score_args",
                                     f"concord.cli.{_module_of(argv[0]).rsplit('.', 1)[1]}"}


@pytest.mark.parametrize(("option", "message"), [
    ("--dimension", "study 's' has no dimension 'nope' (dimensions: color, count)"),
    ("--metric", "study 's' has no metric 'nope' (metrics: none)"),
])
def test_a_bad_stats_filter_answers_before_pandas_and_scipy_load(tmp_path, option, message):
    db = open_db(tmp_path / "c.db")
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=2, models=("a",)))
    db.conn.close()
    seen, err = probe("--db", str(tmp_path / "c.db"), "stats", "--study", "s", option, "nope")
    assert (seen["code"], seen["heavy"]) == (1, [])
    assert err == f"error: {message}"


@pytest.mark.parametrize(("make", "message"), [
    (os.mkfifo, "is not a regular file (a pipe, socket or device?)"),
    (lambda p: p.symlink_to(p), "cannot be read: Too many levels of symbolic links"),
])
def test_a_bad_tiif_judge_file_answers_before_pandas_loads(tmp_path, make, message):
    path = tmp_path / "eval_results_GPT-4o.jsonl"
    make(path)
    seen, err = probe("--db", str(tmp_path / "c.db"), "import-scores", "--study", "s",
                      "--format", "tiif", str(path))
    assert (seen["code"], seen["heavy"]) == (1, [])
    assert err == f"error: {path}: {message} (nothing was imported)"


def test_an_unreadable_file_is_named_before_anything_loads(tmp_path, monkeypatch):
    path = tmp_path / "judge.jsonl"
    path.write_text("{}\n")
    assert readable_file_problem(path) is None

    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", denied)  # root reads any file: fake the refusal
    assert str(readable_file_problem(path)) == f"{path}: cannot be read: Permission denied"
    assert str(readable_file_problem(tmp_path)) == f"{tmp_path}: is a directory, expected a file"


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: None, "file not found"),
    (os.mkfifo, "is not a regular file (a pipe, socket or device?)"),
    (lambda p: p.symlink_to(p), "cannot be read: Too many levels of symbolic links"),
    (lambda p: p.mkdir(), "is a directory, expected a file"),
])
def test_a_bad_manifest_path_creates_no_database(tmp_path, make, message):
    """The manifest is checked before the database opens: a bad path leaves no empty file."""
    manifest = tmp_path / "study.yaml"
    make(manifest)
    seen, err = probe("--db", str(tmp_path / "new.db"), "import", str(manifest))
    assert (seen["code"], seen["heavy"]) == (1, [])
    assert err == f"error: {manifest}: {message} (nothing was imported)"
    assert not (tmp_path / "new.db").exists()


@pytest.mark.parametrize("argv", [
    ["import-ratings", "--study", "s", "--format", "csv"],
    ["import-ratings", "--study", "s", "--format", "imagenhub"],
    ["import-scores", "--study", "s", "--format", "jsonl"],
    ["import-scores", "--study", "s", "--format", "tiif"],
])
def test_a_missing_ratings_or_scores_file_creates_no_database(tmp_path, argv):
    seen, err = probe("--db", str(tmp_path / "new.db"), *argv, str(tmp_path / "nope.csv"))
    assert (seen["code"], seen["heavy"]) == (1, [])
    assert err == f"error: {tmp_path / 'nope.csv'}: file not found (nothing was imported)"
    assert not (tmp_path / "new.db").exists()


def _module_of(command: str) -> str:
    return next(c.module for c in cli.COMMANDS if c.name == command)


def test_a_command_runs_with_sqlite_utils_loaded_before_pandas(tmp_path):
    """The CLI loads sqlite-utils without its pandas hooks; writes and stats still work."""
    manifest = make_folder_study(tmp_path / "s", prompts=2)
    db = str(tmp_path / "c.db")
    seen, err = probe("--db", db, "import", str(manifest))
    assert seen["code"] == 0, err
    res = subprocess.run([sys.executable, "-m", "concord", "--db", db, "stats", "--study", "s",
                          "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["meta"]["study"] == "s"


@pytest.mark.parametrize("command", [c.name for c in cli.COMMANDS])
def test_one_command_parser_is_the_full_parser_of_that_command(command):
    def options(parser):
        sub = next(a for a in parser._actions if a.dest == "command")
        return [(a.dest, tuple(a.option_strings)) for a in sub.choices[command]._actions]

    assert options(build_parser(command)) == options(build_parser())


def test_a_command_module_that_fails_to_import_is_not_hidden(monkeypatch):
    broken = cli.Command("broken", "concord.cli.no_such_module", "a command whose module is gone")
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, broken))
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        build_parser()
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        main(["broken"])


@pytest.mark.parametrize("missing", ["torch", "transformers"])
def test_score_without_the_metrics_packages_says_how_to_install_them(
        monkeypatch, capsys, tmp_path, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # what `import torch` sees when absent
    code = main(["--db", str(tmp_path / "c.db"), "score", "--study", "s", "--metric",
                 "vqascore"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines() == [
        f"error: scoring needs the metrics dependencies ({missing} not installed): "
        "pip install -r requirements-metrics.txt"]


def test_a_pipe_given_as_ratings_is_refused_before_the_database_opens(tmp_path):
    pipe = tmp_path / "ratings.csv"
    os.mkfifo(pipe)
    seen, err = probe("--db", str(tmp_path / "new.db"), "import-ratings", "--study", "s",
                      "--format", "csv", str(pipe))
    assert seen["code"] == 1
    assert err == (f"error: {pipe}: is not a regular file (a pipe, socket or device?)"
                   " (nothing was imported)")
    assert not (tmp_path / "new.db").exists()
