"""Arguments of ``python -m concord score``: the parser, and its result handed to the scoring
service (which checks and resolves it: :mod:`concord.services.metrics.score_request`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from concord.services.metrics.score_request import ScoreArgs, ScoringRequest
from concord.services.metrics.scoring import RunSummary

EPILOG = """\
examples:
  python -m concord score --study demo --metric vqascore --model Qwen/Qwen3-VL-8B-Instruct
  python -m concord score --study tiif --metric gned
  python -m concord score --study s --metric soft-tifa --model /ckpt/qwen3-vl --shard 0/4
  python -m concord score --study s --metric paircomp --model M --option top_k=none
  torchrun --nproc-per-node 4 -m concord score --study s --metric tiif --model M
  python -m concord score --study s --metric tiif --model Qwen/Qwen2.5-VL-72B-Instruct \\
      --device-map auto --max-memory 0=75GiB,1=75GiB
  python -m concord score --study s --metric soft-tifa --shard 3/8 --output scores-3.jsonl

A rerun scores only what is missing, errored, or scored with other score-changing options
(--option values, --dtype). The judge is stored normalised (a local folder as its absolute
path, a hub id without trailing slash). HF_HUB_OFFLINE=1 (or an unreachable hub) makes a
model that is not cached locally fail at once. SIGTERM ends the run as cancelled.
"""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _batch_size(text: str) -> int | str:
    return "auto" if text.strip().lower() == "auto" else _positive_int(text)


def add_score_arguments(p: argparse.ArgumentParser, metrics: list[str]) -> None:
    """The ``score`` command's arguments, description and examples."""
    p.description = ("Score every not-yet-scored image of a study with one metric and store\n"
                     "one row per image (and per question) tagged with metric, judge and run.")
    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("--study", required=True, help="study name")
    p.add_argument("--metric", required=True, help=f"one of: {', '.join(metrics)}")
    p.add_argument("--model", help="judge VLM: hub id or local folder (default: the "
                                   "metric's reference judge, where it has one)")
    p.add_argument("--device", default="auto", help="auto (default), cuda, cuda:N or cpu")
    p.add_argument("--batch-size", type=_batch_size, default="auto",
                   help="(image, question) pairs per forward, or auto (from free memory; "
                        "halved on out-of-memory either way)")
    p.add_argument("--images-per-step", type=_positive_int, default=32,
                   help="images per step; each step is one write (default 32)")
    p.add_argument("--limit", type=_positive_int, help="score at most N images")
    p.add_argument("--shard", help="i/n: score only shard i of n (split by image id)")
    p.add_argument("--output", type=Path, metavar="FILE.jsonl",
                   help="append scores to this score file instead of the database (Slurm "
                        "arrays; bring them in with merge-scores)")
    p.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float16", "float32"],
                   help="judge weights (auto: bf16 on GPU, fp32 on CPU)")
    p.add_argument("--device-map", choices=["auto"],
                   help="spread a judge too big for one GPU over all visible GPUs")
    p.add_argument("--max-memory", metavar="SPEC",
                   help="with --device-map: 0=75GiB,1=75GiB[,cpu=200GiB] or 75GiB per GPU")
    p.add_argument("--no-share-prefix", action="store_true",
                   help="run every (image, question) pair in full (for comparison)")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="allow checkpoints that run their own Python code")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="metric option, repeatable (e.g. top_k=none, base=soft-tifa)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--run-id", help=argparse.SUPPRESS)  # given by the app, which watches it
    p.add_argument("--log-path", help=argparse.SUPPRESS)


def raw_request(args: argparse.Namespace) -> ScoreArgs:
    """The parsed command line as the scoring service takes it."""
    return ScoreArgs(
        study=args.study, metric=args.metric, model=args.model, device=args.device,
        batch_size=args.batch_size, dtype=args.dtype, device_map=args.device_map,
        max_memory=args.max_memory, trust_remote_code=args.trust_remote_code,
        share_prefix=not args.no_share_prefix, options=tuple(args.option), shard=args.shard,
        limit=args.limit, step=args.images_per_step, output=args.output, run_id=args.run_id,
        log_path=args.log_path, progress=not args.no_progress)


def print_summary(summary: RunSummary, request: ScoringRequest) -> None:
    """One line: what the run did."""
    rank = request.ranks
    judge = f" judge={summary.judge!r}" if summary.judge else ""
    who = f"rank {rank.rank}/{rank.world} " if rank.world > 1 else ""
    rate = summary.scored / summary.seconds if summary.seconds else 0.0
    where = f" into {request.output}" if request.output else ""
    print(f"{who}{summary.metric}{judge}: scored {summary.scored} images ({summary.errors} "
          f"errors, {summary.rows} rows{where}, {rate:.2f} img/s); {summary.already_done} "
          f"already done, {summary.other_shards} in other shards; run "
          f"{summary.run_id or '-'} {summary.status}")
