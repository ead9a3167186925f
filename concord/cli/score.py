"""``score`` (run a metric over a study), ``merge-scores`` (score files into a study) and
``metrics`` (what can be scored)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import signal
from pathlib import Path
from typing import Any

from concord.cli import score_args
from concord.cli.common import db_for, print_table
from concord.config import Settings
from concord.services import metric_scores
from concord.services.scoring import (
    RunCancelled,
    ScoringError,
    ScoringJob,
    build_evaluator,
    parse_shard,
    run_scoring,
)
from concord.store.db import open_db
from evaluators.registry import evaluator_class, list_evaluators

_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")
# What the metrics import from requirements-metrics.txt (`make run` does not install it).
METRICS_MODULES = ("torch", "transformers", "rapidocr", "onnxruntime", "rapidfuzz")
METRICS_INSTALL = "pip install -r requirements-metrics.txt"


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in ``score``, ``merge-scores`` or ``metrics`` (help in ``concord.cli.COMMANDS``)."""
    {"score": _score_parser, "merge-scores": _merge_parser, "metrics": _metrics_parser}[name](p)


def _score_parser(p: argparse.ArgumentParser) -> None:
    score_args.add_score_arguments(p, list_evaluators())
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
    rows = []
    for name in list_evaluators():
        cls = evaluator_class(name)
        doc = (cls.__doc__ or "").strip().splitlines()
        rows.append({"metric": name, "higher_is_better": cls.higher_is_better,
                     "needs_judge": cls.needs_judge, "has_questions": cls.has_questions,
                     "default_judge": cls.default_model, "about": doc[0] if doc else ""})
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


def _job(args: argparse.Namespace, ranks: Any, key: str | None) -> ScoringJob:
    shard = parse_shard(args.shard) if args.shard is not None else None
    if ranks.world > 1:
        shard = (shard or parse_shard("0/1")).split(ranks.rank, ranks.world)
    params = {"model": args.model, "device": args.device, "batch_size": args.batch_size,
              "limit": args.limit, "shard": args.shard, "options": args.option,
              "dtype": args.dtype, "device_map": args.device_map,
              "max_memory": args.max_memory, "trust_remote_code": args.trust_remote_code,
              "share_prefix": not args.no_share_prefix, "world_size": ranks.world}
    output = score_args.rank_output(args.output, ranks) if args.output else None
    return ScoringJob(study=args.study, step=args.images_per_step, shard=shard,
                      limit=args.limit, params=params, options_key=key, output=output,
                      run_id=args.run_id, log_path=args.log_path,
                      progress=not args.no_progress and ranks.rank == 0)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Validate everything cheap first, then open the store, then load the judge."""
    check_metrics_installed()
    if not _DEVICE.match(args.device):
        raise ScoringError(f"--device must be auto, cpu, cuda or cuda:N, got {args.device!r}")
    options = score_args.parse_options(args.option)
    ranks = score_args.ranks()
    judge = score_args.judge_options(args, ranks, evaluator_class_or_error(args.metric))
    evaluator = build_evaluator(args.metric, model=args.model, options=options, **judge)
    key = score_args.score_key(evaluator, options, judge)
    job = _job(args, ranks, key)
    db = open_db(settings.db_path)
    previous = signal.signal(signal.SIGTERM, _cancel)
    try:
        summary = run_scoring(db, evaluator, job)
    except RunCancelled:
        print(f"{args.metric}: cancelled (SIGTERM); what was scored is kept", flush=True)
        return 143
    finally:
        signal.signal(signal.SIGTERM, previous)
        db.close()
    score_args.print_summary(summary, ranks, job.output)
    # errored images are rows to retry, not a failed command: exit 0 once the run finished
    return 0


def check_metrics_installed() -> None:
    """One line naming the command that installs the metrics' packages, when any is missing."""
    missing = [name for name in METRICS_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ScoringError(f"scoring needs the metrics dependencies ({', '.join(missing)} "
                           f"not installed): {METRICS_INSTALL}")


def evaluator_class_or_error(metric: str) -> Any:
    """The metric's class, or the registry's "did you mean" as a ScoringError."""
    try:
        return evaluator_class(metric)
    except KeyError as exc:
        raise ScoringError(str(exc)) from exc


def _cancel(signum: int, frame: object) -> None:
    # a second SIGTERM must not interrupt the bookkeeping of the first
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise RunCancelled
