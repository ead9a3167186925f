"""Is the Hugging Face hub reachable? Asked once, in at most a few seconds.

Without ``HF_HUB_OFFLINE`` a hub id that is not in the local cache makes transformers retry
the network for tens of seconds before failing. A quick TCP probe of the endpoint first
lets the loader go straight to the local cache (``local_files_only``) when the hub cannot
answer, and fail with one line when the model is not there.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
from urllib.parse import urlsplit

PROBE_SECONDS = 3.0
_TRUE = {"1", "true", "yes", "on"}


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) forbids hub access."""
    return any(os.environ.get(v, "").strip().lower() in _TRUE
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def endpoint() -> str:
    """The hub URL (``HF_ENDPOINT`` or https://huggingface.co)."""
    return os.environ.get("HF_ENDPOINT", "").strip().rstrip("/") or "https://huggingface.co"


@functools.cache
def reachable(url: str | None = None, timeout: float = PROBE_SECONDS) -> bool:
    """Whether a TCP connection to the hub's host opens within ``timeout`` seconds.

    Name resolution has no timeout of its own, so the probe runs on a daemon thread and is
    abandoned when it takes too long.
    """
    parts = urlsplit(url or endpoint())
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    result: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True, name="concord-hub-probe")
    thread.start()
    thread.join(timeout)
    return bool(result and result[0])
