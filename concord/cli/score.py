"""``python -m concord score``: run an automatic metric over a study's images."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from concord.config import Settings
from concord.scoring import ScoringError, build_evaluator, parse_shard, run_scoring
from concord.store.db import open_db
from evaluators.registry import list_evaluators

_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")

_EPILOG = """\
examples:
  python -m concord score --study demo --metric vqascore --model Qwen/Qwen3-VL-8B-Instruct
  python -m concord score --study tiif --metric gned
  python -m concord score --study s --metric soft-tifa --model /ckpt/qwen3-vl --shard 0/4
  python -m concord score --study s --metric paircomp --model M --option top_k=none

A rerun scores only what is missing (or errored). The judge is stored as given (hub id or
path). HF_HUB_OFFLINE=1 makes a model that is not cached locally fail at once.
"""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``score`` command."""
    p = subparsers.add_parser(
        "score", help="score a study's images with an automatic metric",
        description="Score every not-yet-scored image of a study with one metric and store\n"
                    "one row per image (and per question) tagged with metric, judge and run.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--study", required=True, help="study name")
    p.add_argument("--metric", required=True,
                   help=f"one of: {', '.join(list_evaluators())}")
    p.add_argument("--model", help="judge VLM: hub id or local folder (default: the "
                                   "metric's reference judge, where it has one)")
    p.add_argument("--device", default="auto", help="auto (default), cuda, cuda:N or cpu")
    p.add_argument("--batch-size", type=_positive_int, default=8,
                   help="images per batch and per commit; pairs per forward (default 8)")
    p.add_argument("--limit", type=_positive_int, help="score at most N images")
    p.add_argument("--shard", help="i/n: score only shard i of n (split by image id)")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="allow checkpoints that run their own Python code")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="metric option, repeatable (e.g. top_k=none, base=soft-tifa)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings → kwargs; values are JSON where they parse, ``none`` → None."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ScoringError(f"--option must be KEY=VALUE, got {pair!r}")
        if raw.strip().lower() == "none":
            value: Any = None
        else:
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                value = raw
        options[key.strip()] = value
    return options


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Validate everything cheap first, then open the store, then load the judge."""
    if not _DEVICE.match(args.device):
        raise ScoringError(f"--device must be auto, cpu, cuda or cuda:N, got {args.device!r}")
    shard = parse_shard(args.shard) if args.shard is not None else None
    evaluator = build_evaluator(
        args.metric, model=args.model, device=args.device, batch_size=args.batch_size,
        trust_remote_code=args.trust_remote_code, options=parse_options(args.option))
    params = {"model": args.model, "device": args.device, "batch_size": args.batch_size,
              "limit": args.limit, "shard": args.shard, "options": args.option,
              "trust_remote_code": args.trust_remote_code}
    db = open_db(settings.db_path)
    try:
        summary = run_scoring(db, args.study, evaluator, batch_size=args.batch_size,
                              shard=shard, limit=args.limit, params=params,
                              progress=not args.no_progress)
    finally:
        db.close()
    judge = f" judge={summary.judge!r}" if summary.judge else ""
    rate = summary.scored / summary.seconds if summary.seconds else 0.0
    print(f"{summary.metric}{judge}: scored {summary.scored} images ({summary.errors} errors, "
          f"{summary.rows} rows, {rate:.2f} img/s); {summary.already_done} already done, "
          f"{summary.other_shards} in other shards; run {summary.run_id or '-'}")
    # errored images are rows to retry, not a failed command: exit 0 once the run finished
    return 0
