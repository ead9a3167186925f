"""Command line: ``python -m concord COMMAND``. One module per command group.

Each command module has ``register(subparsers)``, which adds its parser(s) and sets
``func`` to a callable ``(args, settings) -> int``.
"""

from __future__ import annotations

import argparse
import logging
import sqlite3
import sys
from collections.abc import Sequence
from importlib import import_module

from concord.config import Settings
from concord.errors import ConcordError
from concord.names import name_problem

# Modules that register commands, in the order `--help` lists them.
COMMAND_MODULES = (
    "concord.cli.setup",
    "concord.cli.imports",
    "concord.cli.raters",
    "concord.cli.crowd",
    "concord.cli.export",
    "concord.cli.adjudicate",
    "concord.cli.score",
    "concord.cli.stats",
    "concord.cli.backup",
)


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every command registered."""
    parser = argparse.ArgumentParser(
        prog="python -m concord",
        description="Concord: human ratings for text-to-image models and metric agreement.",
    )
    parser.add_argument(
        "--db", help="SQLite database file (default: $CONCORD_DB or data/concord.db)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        try:
            module = import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue  # a command group not built yet
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; user errors print one line to stderr and exit 1."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = build_parser()
    args = parser.parse_args(argv)
    settings = Settings.from_env(args.db)
    try:
        _check_study_option(args)
        return int(args.func(args, settings) or 0)
    except ConcordError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except sqlite3.Error as exc:  # a --db that is not a usable SQLite file
        print(f"error: database {settings.db_path}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # an unreadable input or unwritable output path
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _check_study_option(args: argparse.Namespace) -> None:
    """Refuse ``--study ''`` (and a name with a newline or NUL) before any command runs:
    the import commands would otherwise create a study of that name."""
    study = getattr(args, "study", None)
    if study is not None and (problem := name_problem(study, "study")) is not None:
        raise ConcordError(f"--study: {problem}")
