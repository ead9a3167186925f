"""``backup`` and ``restore``: copy the database while raters work, and put a copy back."""

from __future__ import annotations

import argparse
from pathlib import Path

from concord.config import Settings
from concord.errors import ConcordError
from concord.store import backup as backup_store
from concord.store.db import open_db

_SCHEDULE = """\
schedule for a running study (cron; keeps 14 days of backups taken every 30 minutes):
  */30 * * * * cd /srv/concord && .venv/bin/python -m concord --db data/concord.db \\
      backup backups/concord-$(date +\\%Y\\%m\\%dT\\%H\\%M).db
  15 3 * * * find /srv/concord/backups -name 'concord-*.db' -mtime +14 -delete
"""


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the ``backup`` or ``restore`` parser (help in ``concord.cli.COMMANDS``)."""
    {"backup": _backup_parser, "restore": _restore_parser}[name](p)


def _backup_parser(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = _SCHEDULE
    p.description = (
        "Copy the whole database to PATH as one consistent snapshot (SQLite's "
        "online backup API): raters keep rating meanwhile. The copy is checked "
        "and replaces PATH atomically; it is one self-contained SQLite file.")
    p.add_argument("path", type=Path, metavar="PATH", help="the backup file to write")
    p.set_defaults(func=_backup)


def _restore_parser(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Replace EVERYTHING in the database (every study, rater, rating and "
        "score) with the contents of a backup made by 'backup'. The backup must "
        "be a Concord database of this version or older that passes an "
        "integrity check. The current database is first copied to "
        "<db>.before-restore-<time>. Without --yes, only says what it would "
        "replace.")
    p.add_argument("path", type=Path, metavar="PATH", help="the backup file to restore")
    p.add_argument("--yes", action="store_true", help="confirm; required")
    p.set_defaults(func=_restore)


def _backup(args: argparse.Namespace, settings: Settings) -> int:
    if settings.db_url is None and not settings.db_path.is_file():
        raise ConcordError(f"no database at {settings.db_path} to back up")
    db = open_db(settings.database, migrate=False)  # a backup copies, it does not upgrade
    try:
        found = backup_store.backup(db, args.path)
    finally:
        db.close()
    print(f"backed up {settings.shown} to {args.path}: {found} (integrity check ok)")
    return 0


def _restore(args: argparse.Namespace, settings: Settings) -> int:
    done = backup_store.restore(settings.database, args.path, confirm=args.yes,
                                beside=settings.db_path)
    print(f"restored {settings.shown} from {args.path}: it now holds {done.after}; it "
          f"held {done.before}, kept in {done.safety_copy}")
    return 0
