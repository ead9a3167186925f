"""``score`` (run a metric over a study), ``merge-scores`` (score files into a study) and
``metrics`` (what can be scored)."""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path

from concord.cli import score_args
from concord.cli.common import db_for, print_table
from concord.config import Settings
from concord.services.metrics import runs as metric_runs
from concord.services.metrics import score_request
from concord.services.metrics import scores as metric_scores
from concord.services.metrics.scoring import RunCancelled, build_evaluator, run_scoring
from concord.store.db import open_db


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in ``score``, ``merge-scores`` or ``metrics`` (help in ``concord.cli.COMMANDS``)."""
    {"score": _score_parser, "merge-scores": _merge_parser, "metrics": _metrics_parser}[name](p)


def _score_parser(p: argparse.ArgumentParser) -> None:
    score_args.add_score_arguments(p, [m.name for m in metric_runs.metric_catalog()])
    p.set_defaults(func=run)


def _merge_parser(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Validate every JSONL score file first (file, line, field), then store their scores; "
        "a key twice with different values is refused. Rerunning changes nothing. A killed "
        "merge is finished by the next one.")
    p.add_argument("--study", required=True, help="target study (created if missing)")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                   help="score files (.jsonl) or folders of them")
    p.set_defaults(func=_merge)


def _metrics_parser(p: argparse.ArgumentParser) -> None:
    p.description = ("Every registered metric with its direction, whether it needs a judge "
                     "or questions, and its default judge.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_metrics)


def _metrics(args: argparse.Namespace, settings: Settings) -> int:
    rows = [{"metric": m.name, "higher_is_better": m.higher_is_better,
             "needs_judge": m.needs_judge, "has_questions": m.has_questions,
             "default_judge": m.default_model, "about": m.about}
            for m in metric_runs.metric_catalog()]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print_table(rows, ["metric", "higher_is_better", "needs_judge", "has_questions",
                           "default_judge"])
    return 0


def _merge(args: argparse.Namespace, settings: Settings) -> int:
    s = metric_scores.merge_score_files(db_for(settings), args.study, args.paths)
    made = " (new scores-only study)" if s.created_study else ""
    print(f"study {s.study!r}{made}: {s.rows} scores read from {s.files} file(s), {s.stored} "
          f"stored (new or changed), {s.runs} run(s) recorded")
    return 0


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Resolve the request (every check that needs no database), build the metric, then
    open the store and score; the service loads the judge."""
    request = score_request.resolve(score_args.raw_request(args))
    evaluator = build_evaluator(request)  # a bad --option fails before the database opens
    db = open_db(settings.database)
    previous = signal.signal(signal.SIGTERM, _cancel)
    try:
        summary = run_scoring(db, request, evaluator)
    except RunCancelled:
        print(f"{request.metric.name}: cancelled (SIGTERM); what was scored is kept",
              flush=True)
        return 143
    finally:
        signal.signal(signal.SIGTERM, previous)
        db.close()
    score_args.print_summary(summary, request)
    # errored images are rows to retry, not a failed command: exit 0 once the run finished
    return 0


def _cancel(signum: int, frame: object) -> None:
    # a second SIGTERM must not interrupt the bookkeeping of the first
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise RunCancelled
