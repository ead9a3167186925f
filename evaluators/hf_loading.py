"""Loading a Hugging Face image-text-to-text checkpoint by hub id or local path.

Kept apart from scoring so that tests (and other callers) can inject any
``loader: Callable[[], tuple[model, processor]]`` instead.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

import torch

from evaluators import hub
from evaluators.base import ModelLoadError
from evaluators.hub import hub_offline

logger = logging.getLogger(__name__)


def resolve_device(device: str) -> torch.device:
    """``auto`` → cuda when available, else cpu; ``cuda`` without a GPU is an error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(f"device {device!r} requested but no CUDA device is available")
    if device != "cpu" and not device.startswith("cuda"):
        raise ModelLoadError(f"unknown device {device!r} (use auto, cuda, cuda:N or cpu)")
    return torch.device(device)


def default_dtype(device: torch.device) -> torch.dtype:
    """bf16 on GPU (what the references run), fp32 on CPU (bf16 matmuls are slow there)."""
    return torch.bfloat16 if device.type == "cuda" else torch.float32


def _looks_like_path(model: str) -> bool:
    # hub ids are "name" or "org/name"; anything else must be a folder on disk
    return model.startswith(("/", ".", "~")) or model.count("/") > 1 or "\\" in model


def _source(model: str) -> str:
    """The argument for ``from_pretrained``; a clear error for a missing local folder."""
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path)
    if path.exists():
        raise ModelLoadError(f"model path {model!r} is a file; give the checkpoint folder")
    if _looks_like_path(model):
        raise ModelLoadError(f"model path {model!r} does not exist")
    return model


def _load_error(model: str, exc: Exception, trust_remote_code: bool,
                local_only: bool) -> ModelLoadError:
    """Turn a transformers/hub exception into one actionable line."""
    text = " ".join(str(exc).split())
    if "trust_remote_code" in text and not trust_remote_code:
        return ModelLoadError(
            f"model {model!r} ships its own modelling code (remote code); rerun with "
            "--trust-remote-code if you trust it, or use a transformers-native conversion")
    if "Unrecognized configuration class" in text or "does not recognize this architecture" \
            in text:
        return ModelLoadError(
            f"model {model!r} is not an image-text-to-text model that transformers can load "
            f"with AutoModelForImageTextToText ({text[:160]})")
    if local_only and not Path(model).expanduser().exists():
        why = "HF_HUB_OFFLINE=1" if hub_offline() else f"the hub ({hub.endpoint()}) is unreachable"
        return ModelLoadError(
            f"model {model!r} not found locally and {why}: download it on a machine "
            "with hub access (hf download MODEL) or pass a local folder")
    return ModelLoadError(f"cannot load model {model!r}: {text[:300]}")


def _from_pretrained(source: str, dtype: torch.dtype, device: torch.device,
                     kwargs: dict[str, Any], placement: dict[str, Any]) -> tuple[Any, Any]:
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    # the config first: it is what says whether the checkpoint needs remote code
    AutoConfig.from_pretrained(source, **kwargs)
    processor = AutoProcessor.from_pretrained(source, **kwargs)
    if placement.get("device_map"):
        # one judge over several devices; accelerate's hooks move activations between them
        net = AutoModelForImageTextToText.from_pretrained(source, dtype=dtype, **placement,
                                                          **kwargs)
        return processor, net
    if importlib.util.find_spec("accelerate") is not None:
        # with accelerate the weights go straight to the device (no CPU copy first)
        kwargs = {**kwargs, "device_map": {"": str(device)}}
    net = AutoModelForImageTextToText.from_pretrained(source, dtype=dtype, **kwargs)
    # transformers wraps PreTrainedModel.to in a decorator whose type takes the model as
    # the first argument, so a bound call looks wrong to mypy.
    return processor, net.to(device)  # type: ignore[arg-type]


def load_pretrained(
    model: str,
    *,
    device: torch.device,
    dtype: torch.dtype | None = None,
    trust_remote_code: bool = False,
    device_map: str | None = None,
    max_memory: dict[Any, str] | None = None,
) -> tuple[Any, Any]:
    """``AutoModelForImageTextToText`` + ``AutoProcessor`` from a hub id or a local folder.

    Args:
        model: hub id (``Qwen/Qwen3-VL-8B-Instruct``) or checkpoint folder.
        device: where the weights go (loaded there directly when accelerate is installed).
        dtype: weight dtype; default bf16 on GPU, fp32 on CPU.
        trust_remote_code: allow checkpoints that run their own Python code.
        device_map: ``"auto"`` spreads the weights over the visible GPUs (and CPU);
            ``device`` is then only where the inputs start.
        max_memory: per-device limits for ``device_map`` (keys: GPU index or ``"cpu"``).

    Returns:
        ``(model, processor)``, the model in eval mode.

    Raises:
        ModelLoadError: missing folder, not cached while offline, remote code not allowed,
            not an image-text-to-text checkpoint.
    """
    source = _source(model)
    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    # a local folder or an unreachable hub: the cache only, no network retries
    local_only = hub_offline() or Path(source).is_dir() or not hub.reachable()
    if local_only:
        kwargs["local_files_only"] = True
    placement = {"device_map": device_map, "max_memory": max_memory} if device_map else {}
    try:
        processor, net = _from_pretrained(source, dtype or default_dtype(device), device,
                                          kwargs, placement)
    except (OSError, ValueError, KeyError, ImportError) as exc:
        raise _load_error(model, exc, trust_remote_code, local_only) from exc
    if not hasattr(processor, "image_processor"):
        # AutoProcessor silently falls back to the bare tokenizer for unknown processors
        raise ModelLoadError(
            f"model {model!r}: AutoProcessor gave {type(processor).__name__}, not a multimodal "
            "processor (no image processor in the checkpoint?)")
    logger.info("loaded %s (%s) on %s", model, type(net).__name__, device)
    return net.eval(), processor
