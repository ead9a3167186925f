"""``runs list`` (scoring runs, newest first) and ``runs cancel`` (stop one)."""

from __future__ import annotations

import argparse
import json

from concord.cli.common import db_for, print_table
from concord.config import Settings
from concord.services.metrics import runs as metric_runs

COLUMNS = ["run", "study", "metric", "judge", "status", "scored", "errors", "of", "started",
           "finished", "shard", "error"]


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the ``runs`` command group (its help is in ``concord.cli.COMMANDS``)."""
    p.description = ("Scoring runs ('python -m concord score', also those started from the "
                     "Metrics page): 'list' shows them, 'cancel' stops one.")
    sub = p.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="scoring runs with status and counts, newest first",
                        description="One line per run (the newest 100): status (running, "
                                    "done, failed, cancelled, stale), images scored and "
                                    "errored of the total, start and end. A running run "
                                    "whose process is gone is marked stale first.")
    ls.add_argument("--study", help="only runs of this study")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=_list)
    c = sub.add_parser("cancel", help="stop a running run (what it scored is kept)",
                       description="Send SIGTERM to the run's process on this host; the run "
                                   "ends as 'cancelled' after its current step. A run whose "
                                   "process is gone is marked 'stale'. A run on another host "
                                   "is refused: cancel it there.")
    c.add_argument("run_id", metavar="RUN_ID", help="the run's id (runs list)")
    c.set_defaults(func=_cancel)


def _list(args: argparse.Namespace, settings: Settings) -> int:
    rows = metric_runs.past_runs(db_for(settings), args.study)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print_table(rows, COLUMNS)
    return 0


def _cancel(args: argparse.Namespace, settings: Settings) -> int:
    print(metric_runs.cancel(db_for(settings), args.run_id))
    return 0
