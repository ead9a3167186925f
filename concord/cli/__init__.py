"""Command line: ``python -m concord COMMAND``. One module per command group.

``COMMANDS`` lists every command with the module that runs it and its one-line help, so
``--help`` and a command's own run import nothing but that one module: pandas, scipy and
torch load only inside the commands that need them. Each command module has
``add_arguments(name, parser)``, which fills in the command's parser and sets ``func`` to a
callable ``(args, settings) -> int``.
"""

from __future__ import annotations

import argparse
import logging
import sqlite3
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import NamedTuple

from concord.config import Settings
from concord.errors import ConcordError
from concord.names import name_problem


class Command(NamedTuple):
    """One ``python -m concord`` command."""

    name: str
    module: str
    help: str


# In the order `--help` lists them.
COMMANDS = (
    Command("init", "concord.cli.setup", "create the database and load the demo study if empty"),
    Command("reset-secret", "concord.cli.setup",
            "make a new researcher sign-in secret (printed once, kept as a hash)"),
    Command("studies", "concord.cli.setup", "list studies with their counts"),
    Command("delete-study", "concord.cli.setup", "delete a study and everything in it"),
    Command("validate-rubrics", "concord.cli.setup", "check every rubric file"),
    Command("import", "concord.cli.imports", "import a study from a manifest (YAML or JSON)"),
    Command("import-ratings", "concord.cli.imports",
            "import human ratings (ImagenHub TSVs or a tidy CSV)"),
    Command("import-pairs", "concord.cli.imports",
            "import pairwise votes (arena style or Concord's export; CSV or JSON Lines)"),
    Command("import-rankings", "concord.cli.imports",
            "import rankings (a rank per model, or ordered lists with ties)"),
    Command("import-scores", "concord.cli.imports", "import metric scores computed elsewhere"),
    Command("raters", "concord.cli.raters", "invite, list and revoke raters"),
    Command("crowd", "concord.cli.crowd",
            "study links for crowd platforms, status, time and pay"),
    Command("export", "concord.cli.export", "export the human labels of a study"),
    Command("adjudicate", "concord.cli.adjudicate",
            "items raters disagree on; adjudicated values (kept apart from the ratings)"),
    Command("score", "concord.cli.score", "score a study's images with an automatic metric"),
    Command("merge-scores", "concord.cli.score",
            "bring score files (score --output) into a study, exactly once"),
    Command("metrics", "concord.cli.score", "list the automatic metrics"),
    Command("runs", "concord.cli.runs", "list scoring runs, or cancel one"),
    Command("stats", "concord.cli.stats", "statistics of a study (tables or --json)"),
    Command("plan", "concord.cli.plan",
            "how many prompts and raters a study needs (power by simulation)"),
    Command("backup", "concord.cli.backup",
            "copy the database to a file, safely while raters are rating"),
    Command("restore", "concord.cli.backup",
            "replace the database with a backup (keeps a copy of it first)"),
    Command("migrate-db", "concord.cli.migrate_db",
            "copy a whole database between SQLite and PostgreSQL, checked table by table"),
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with every command's arguments (``command=None``) or one command's.

    The other commands get a bare parser: their help line shows in ``--help``, and their
    modules (and what those import) are not loaded.
    """
    parser = argparse.ArgumentParser(
        prog="python -m concord",
        description="Concord: human ratings for text-to-image models and metric agreement.",
    )
    parser.add_argument(
        "--db", help="SQLite database file (default: $CONCORD_DB or data/concord.db)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for cmd in COMMANDS:
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        if command is None or command == cmd.name:
            import_module(cmd.module).add_arguments(cmd.name, p)
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    """The command named on the command line: the first word that is not an option (or
    the value of ``--db``)."""
    words = iter(argv)
    for word in words:
        if word == "--db":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; user errors print one line to stderr and exit 1."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    argv = sys.argv[1:] if argv is None else list(argv)
    _import_sqlite_utils_without_dataframes()
    args = build_parser(_command_in(argv) or "").parse_args(argv)
    try:
        settings = Settings.from_env(args.db)
    except ConcordError as exc:  # a setting in the environment (or --db) that is wrong
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        _check_study_option(args)
        return int(args.func(args, settings) or 0)
    except ConcordError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except sqlite3.Error as exc:  # a --db that is not a usable SQLite file
        print(f"error: database {settings.shown}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # an unreadable input or unwritable output path
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _import_sqlite_utils_without_dataframes() -> None:
    """Import sqlite-utils without the pandas and numpy it imports when they are installed.

    sqlite-utils imports both (~0.7 s) only to map numpy and pandas types to column types
    when it creates or alters a table from Python values. Concord never does: every table
    is created by SQL in ``concord/store/migrations/`` and values are plain Python. A
    command that needs pandas (stats, export) imports it itself; one that fails on its
    input then answers in a fraction of a second. Nothing is hidden once either is loaded.
    """
    if "sqlite_utils" in sys.modules or "pandas" in sys.modules or "numpy" in sys.modules:
        return
    sys.modules["pandas"] = sys.modules["numpy"] = None  # type: ignore[assignment]
    try:
        import_module("sqlite_utils")
    finally:
        del sys.modules["pandas"], sys.modules["numpy"]


def _check_study_option(args: argparse.Namespace) -> None:
    """Refuse ``--study ''`` (and a name with a newline or NUL) before any command runs:
    the import commands would otherwise create a study of that name."""
    study = getattr(args, "study", None)
    if study is not None and (problem := name_problem(study, "study")) is not None:
        raise ConcordError(f"--study: {problem}")
