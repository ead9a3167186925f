"""A ``score`` invocation resolved once, at the edge, into a :class:`ScoringRequest`.

:func:`resolve` takes what the user typed (:class:`ScoreArgs`, plain strings and numbers) and
checks it in the order that gives the most useful first error: the metric name (with "did
you mean"), then the metrics' packages, then the options, the shard, this process's rank,
where the judge goes and in which dtype. The request it returns owns every answer (the
registry entry, the normalised judge, its placement, the resume key, the rank's output
file), so nothing downstream looks the metric up again or asks torch a second time.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concord.errors import ConcordError
from concord.services.metrics.run_keys import normalise_judge, options_key
from concord.services.metrics.score_steps import Shard
from evaluators.base import EvaluatorError
from evaluators.placement import Placement, Ranks, place_judge
from evaluators.registry import MetricInfo, UnknownEvaluatorError, metric_info

_SHARD = re.compile(r"^(\d+)/(\d+)$")
_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")
# What the metrics import from requirements-metrics.txt (`make run` does not install it).
METRICS_MODULES = ("torch", "transformers", "rapidocr", "onnxruntime", "rapidfuzz")
METRICS_INSTALL = "pip install -r requirements-metrics.txt"


class ScoringError(ConcordError):
    """A scoring run that cannot start: unknown metric, bad option, model not loadable."""


@dataclass(frozen=True, slots=True)
class ScoreArgs:
    """What the user asked for, as typed (the ``score`` command's options)."""

    study: str
    metric: str
    model: str | None = None
    device: str = "auto"
    batch_size: int | str = "auto"
    dtype: str = "auto"
    device_map: str | None = None
    max_memory: str | None = None
    trust_remote_code: bool = False
    share_prefix: bool = True
    options: tuple[str, ...] = ()
    shard: str | None = None
    limit: int | None = None
    step: int = 32
    output: Path | None = None
    run_id: str | None = None
    log_path: str | None = None
    progress: bool = True


@dataclass(frozen=True, slots=True)
class ScoringRequest:
    """A checked ``score`` invocation: what to score, with what, where, and the resume key.

    Attributes:
        study: the study's name.
        metric: the registry entry (looked up once).
        model: the judge, normalised (None: the metric's default, or no judge).
        options: the metric's own options (constructor keyword arguments).
        judge: device, batch and placement options for a judge metric ({} otherwise).
        options_key: hash of the score-changing options (resume key, with metric and judge).
        ranks: this process's place in a torchrun / accelerate job.
        shard: score only this shard's images (this rank's part of it).
        limit: score at most this many images.
        step: images per ``score`` call and per write.
        output: write a JSONL score file (this rank's) instead of the database.
        run_id: the run's id (given by a launcher that watches it), else a new one.
        log_path: the run's log file, recorded for the app.
        progress: show a tqdm bar on stderr.
        params: recorded with the run (the arguments as given).
    """

    study: str
    metric: MetricInfo
    model: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    judge: dict[str, Any] = field(default_factory=dict)
    options_key: str | None = None
    ranks: Ranks = field(default_factory=Ranks)
    shard: Shard | None = None
    limit: int | None = None
    step: int = 32
    output: Path | None = None
    run_id: str | None = None
    log_path: str | None = None
    progress: bool = True
    params: dict[str, Any] = field(default_factory=dict)


def resolve(raw: ScoreArgs) -> ScoringRequest:
    """Check ``raw`` and resolve it into a request (no database, no model loaded).

    Raises:
        ScoringError: the first problem found, in one line naming the bad value.
    """
    metric = _metric(raw.metric)
    check_metrics_installed()
    _check_placement_args(raw, metric)
    options = parse_options(list(raw.options))
    shard = parse_shard(raw.shard) if raw.shard is not None else None
    ranks = _ranks()
    judge, dtype = _judge(raw, ranks) if metric.needs_judge else ({}, None)
    if ranks.world > 1:
        shard = (shard or Shard(0, 1)).split(ranks.rank, ranks.world)
    params = {"model": raw.model, "device": raw.device, "batch_size": raw.batch_size,
              "limit": raw.limit, "shard": raw.shard, "options": list(raw.options),
              "dtype": raw.dtype, "device_map": raw.device_map, "max_memory": raw.max_memory,
              "trust_remote_code": raw.trust_remote_code, "share_prefix": raw.share_prefix,
              "world_size": ranks.world}
    return ScoringRequest(
        study=raw.study, metric=metric, model=normalise_judge(raw.model), options=options,
        judge=judge, options_key=options_key(options, dtype), ranks=ranks, shard=shard,
        limit=raw.limit, step=raw.step,
        output=rank_output(raw.output, ranks) if raw.output else None, run_id=raw.run_id,
        log_path=raw.log_path, progress=raw.progress and ranks.rank == 0, params=params)


def _metric(name: str) -> MetricInfo:
    try:
        return metric_info(name)
    except UnknownEvaluatorError as exc:
        raise ScoringError(str(exc)) from exc


def check_metrics_installed() -> None:
    """One line naming the command that installs the metrics' packages, when any is missing."""
    missing = [name for name in METRICS_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ScoringError(f"scoring needs the metrics dependencies ({', '.join(missing)} "
                           f"not installed): {METRICS_INSTALL}")


def _check_placement_args(raw: ScoreArgs, metric: MetricInfo) -> None:
    if not metric.needs_judge and raw.model is not None:
        raise ScoringError(f"metric {metric.name!r} uses no judge model; drop --model "
                           f"{raw.model!r}")
    if not _DEVICE.match(raw.device):
        raise ScoringError(f"--device must be auto, cpu, cuda or cuda:N, got {raw.device!r}")
    if raw.max_memory and not raw.device_map:
        raise ScoringError("--max-memory needs --device-map auto")


def _ranks() -> Ranks:
    try:
        return Ranks.from_env()
    except EvaluatorError as exc:
        raise ScoringError(str(exc)) from exc


def _judge(raw: ScoreArgs, ranks: Ranks) -> tuple[dict[str, Any], str]:
    """The judge's constructor options and the dtype its weights will load in."""
    try:
        place: Placement = place_judge(raw.device, raw.dtype, raw.device_map, raw.max_memory,
                                       ranks)
    except (ValueError, EvaluatorError) as exc:
        raise ScoringError(str(exc)) from exc
    return {"device": place.device, "batch_size": raw.batch_size, "dtype": place.dtype,
            "trust_remote_code": raw.trust_remote_code, "share_prefix": raw.share_prefix,
            "device_map": place.device_map, "max_memory": place.max_memory}, place.dtype


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


def parse_shard(text: str) -> Shard:
    """``"i/n"`` → Shard(i, n), with 0 ≤ i < n.

    Raises:
        ScoringError: malformed or out of range (the message shows the value).
    """
    match = _SHARD.match(text.strip())
    if match is None:
        raise ScoringError(f"--shard must look like i/n (e.g. 0/4), got {text!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or index >= count:
        raise ScoringError(f"--shard i/n needs 0 <= i < n, got {text!r}")
    return Shard(index, count)


def rank_output(path: Path, rank: Ranks) -> Path:
    """Each rank its own score file: ``{rank}`` in the name, else ``NAME.rankR.jsonl``."""
    if rank.world == 1:
        return path
    if "{rank}" in str(path):
        return Path(str(path).replace("{rank}", str(rank.rank)))
    return path.with_name(f"{path.stem}.rank{rank.rank}{path.suffix}")
