"""Where a judge runs: one device per process (torchrun / accelerate ranks), or one judge
spread over several GPUs (``device_map="auto"`` with per-device memory limits), and the dtype
its weights load in (:func:`place_judge` resolves all of it once, before anything loads)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from evaluators.base import ModelLoadError

_SIZE = re.compile(r"^\d+(\.\d+)?\s*(KiB|MiB|GiB|TiB|KB|MB|GB|TB)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Ranks:
    """This process's place in a multi-process job (torchrun and accelerate set these)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    local_world: int = 1

    @classmethod
    def from_env(cls) -> Ranks:
        """``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE`` (one process when
        unset).

        Raises:
            ModelLoadError: values that do not fit together (the message shows them).
        """
        env = os.environ
        try:
            world = int(env.get("WORLD_SIZE") or 1)
            rank = int(env.get("RANK") or 0)
            local_rank = int(env.get("LOCAL_RANK") or rank)
            local_world = int(env.get("LOCAL_WORLD_SIZE") or world)
        except ValueError as exc:
            raise ModelLoadError(f"bad torchrun/accelerate environment: {exc}") from exc
        if not (0 <= rank < world and 0 <= local_rank < local_world <= world):
            raise ModelLoadError(f"bad torchrun/accelerate environment: RANK={rank} "
                                 f"WORLD_SIZE={world} LOCAL_RANK={local_rank} "
                                 f"LOCAL_WORLD_SIZE={local_world}")
        return cls(rank, world, local_rank, local_world)


def rank_device(device: str, ranks: Ranks) -> str:
    """The device of this rank: ``auto``/``cuda`` become ``cuda:LOCAL_RANK`` (or cpu without
    a GPU for ``auto``); an explicit ``cuda:N`` or ``cpu`` is kept."""
    if ranks.world == 1 or device not in ("auto", "cuda"):
        return device
    import torch

    if not torch.cuda.is_available():
        if device == "cuda":
            raise ModelLoadError("device 'cuda' requested but no CUDA device is available")
        return "cpu"
    return f"cuda:{ranks.local_rank % torch.cuda.device_count()}"


@dataclass(frozen=True, slots=True)
class Placement:
    """This rank's judge: its device, the dtype its weights load in (never ``auto``), and
    the ``device_map`` / ``max_memory`` passed to ``from_pretrained``."""

    device: str
    dtype: str
    device_map: str | None = None
    max_memory: dict[int | str, str] | None = None


def place_judge(device: str, dtype: str, device_map: str | None, max_memory: str | None,
                ranks: Ranks) -> Placement:
    """Resolve where this rank's judge goes and its weight dtype (imports torch).

    ``dtype="auto"`` becomes what the loader would pick on the device the weights start
    from (bf16 on a GPU, fp32 on CPU; with ``device_map`` and no GPU that is the CPU), so
    the resume key records the dtype the scores are computed in.

    Raises:
        ValueError: a malformed ``max_memory`` spec.
        ModelLoadError: a CUDA device asked for where there is none; fewer GPUs than ranks.
    """
    import torch

    from evaluators.hf_loading import default_dtype, resolve_device

    limits = parse_max_memory(max_memory) if max_memory else None
    where = rank_device(device, ranks)
    memory = max_memory_for(limits, ranks, torch.cuda.device_count()) if device_map else None
    if dtype == "auto":
        dtype = str(default_dtype(resolve_device(where))).removeprefix("torch.")
    return Placement(where, dtype, device_map, memory)


def parse_max_memory(text: str) -> dict[str, str]:
    """``"70GiB"`` (every GPU) or ``"0=70GiB,1=70GiB,cpu=200GiB"`` → {device: size}.

    Keys are GPU indices as strings, ``"cpu"``, or ``"*"`` for every GPU.

    Raises:
        ValueError: a malformed entry (the message shows it).
    """
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, size = part.partition("=")
        key, size = (key.strip(), size.strip()) if sep else ("*", key.strip())
        if not _SIZE.match(size) or not (key in ("*", "cpu") or key.isdigit()):
            raise ValueError(f"--max-memory entries look like 0=70GiB, cpu=200GiB or 70GiB; "
                             f"got {part!r}")
        out[key] = size
    if not out:
        raise ValueError("--max-memory is empty")
    return out


def max_memory_for(limits: dict[str, str] | None, ranks: Ranks,
                   n_gpus: int) -> dict[int | str, str] | None:
    """Per-device limits for ``from_pretrained(device_map="auto")`` on this rank's GPUs.

    With several ranks on a node, each takes its own ``n_gpus // local_world`` GPUs.

    Raises:
        ModelLoadError: fewer GPUs than ranks on this node.
    """
    per = n_gpus // ranks.local_world if n_gpus else 0
    if ranks.local_world > 1 and per == 0:
        raise ModelLoadError(f"--device-map auto with {ranks.local_world} processes per node "
                             f"needs at least that many GPUs; {n_gpus} visible")
    mine = range(ranks.local_rank * per, (ranks.local_rank + 1) * per) if per else range(0)
    if limits is None and ranks.local_world == 1:
        return None
    limits = limits or {}
    out: dict[int | str, str] = {}
    for gpu in mine:
        size = limits.get(str(gpu), limits.get("*"))
        if size is not None or ranks.local_world > 1:
            out[gpu] = size or _total(gpu)
    if "cpu" in limits:
        out["cpu"] = limits["cpu"]
    return out


def _total(gpu: int) -> str:
    import torch

    return f"{torch.cuda.get_device_properties(gpu).total_memory // (1 << 20)}MiB"
