"""Checking image files before they enter a study."""

from __future__ import annotations

import hashlib
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from concord.errors import Problem
from concord.importers.tables import regular_file_problem

FORMATS = {"PNG": ".png", "JPEG": ".jpg", "WEBP": ".webp"}
EXTENSIONS = {".png", ".jpg", ".jpeg", ".webp"}
# 64 MP is 8192×8192: larger than any T2I output we know, small enough to stop bombs.
DEFAULT_MAX_PIXELS = 64_000_000


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """What a verified image file looks like."""

    rel_path: str
    sha256: str
    bytes: int
    width: int
    height: int
    format: str


def safe_relative(root: Path, path: Path, *, label: str) -> tuple[str | None, Problem | None]:
    """``path`` relative to ``root`` (posix), or a problem when it escapes the root.

    A path whose ``..`` parts climb out of the root is refused before the disk is
    touched; then symlinks are resolved, so a link that points outside the root is refused.
    """
    base = root.resolve()
    lexical = Path(os.path.normpath(base / path))
    if not lexical.is_relative_to(base):
        return None, Problem(label, f"path leaves the study root {root} (points to {lexical})",
                             field="path")
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        return None, Problem(label, "file not found", field="path")
    except (OSError, RuntimeError, ValueError) as exc:
        # RuntimeError: a symbolic link loop (Python < 3.13); ValueError: a NUL in the path
        return None, Problem(label, f"path cannot be resolved ({exc})", field="path")
    if not resolved.is_relative_to(base):
        return None, Problem(label, f"path leaves the study root {root} (resolves to {resolved})",
                             field="path")
    return resolved.relative_to(base).as_posix(), None


def verify_image(root: Path, path: Path, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> ImageInfo:
    """Open, fully decode and hash one image; raise ValueError naming what is wrong."""
    rel, problem = safe_relative(root, path, label=str(path))
    if problem is None:  # a pipe or device would block the read below for ever
        problem = regular_file_problem(path)
    if problem is not None:
        raise ValueError(problem.message)
    size, digest = _hash(path)
    if not size:
        raise ValueError("empty file")
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(path) as probe:
                fmt, (w, h) = probe.format, probe.size
        except Image.DecompressionBombWarning as exc:
            raise ValueError(f"image too large ({exc})") from exc
        except Image.DecompressionBombError as exc:
            raise ValueError(f"image too large ({exc})") from exc
        except OSError as exc:
            raise ValueError(f"not a readable image ({exc})") from exc
    if fmt not in FORMATS:
        raise ValueError(f"unsupported image format {fmt} (use PNG, JPEG or WebP)")
    if w * h > max_pixels:
        raise ValueError(f"image has {w}×{h} = {w * h:,} pixels, above the limit of "
                         f"{max_pixels:,} (set max_pixels in the manifest to allow it)")
    _decode_fully(path)
    return ImageInfo(str(rel), digest, size, w, h, fmt)


def _hash(path: Path) -> tuple[int, str]:
    """Size and SHA-256 of a file, read in blocks (memory stays small for any size)."""
    sha, size = hashlib.sha256(), 0
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            sha.update(block)
            size += len(block)
    return size, sha.hexdigest()


def _decode_fully(path: Path) -> None:
    # verify() catches broken chunks/CRCs, load() catches truncated pixel data;
    # Pillow needs a fresh handle for each.
    try:
        with Image.open(path) as im:
            im.verify()
        with Image.open(path) as im:
            im.load()
    except (OSError, SyntaxError, ValueError) as exc:
        raise ValueError(f"corrupt or truncated image ({exc})") from exc


def verify_many(
    root: Path, paths: list[Path], *, max_pixels: int = DEFAULT_MAX_PIXELS, progress=None
) -> tuple[dict[Path, ImageInfo], list[Problem]]:
    """Verify many images on a thread pool (decoding releases the GIL).

    Returns:
        The infos by path and one problem per bad file (file named, field 'image').
    """
    infos: dict[Path, ImageInfo] = {}
    problems: list[Problem] = []

    def one(p: Path) -> tuple[Path, ImageInfo | None, str | None]:
        try:
            return p, verify_image(root, p, max_pixels=max_pixels), None
        except (ValueError, OSError) as exc:
            return p, None, str(exc)

    workers = min(8, (os.cpu_count() or 2) * 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for p, info, err in pool.map(one, paths):
            if info is not None:
                infos[p] = info
            else:
                problems.append(Problem(str(p), err or "unreadable", field="image"))
            if progress is not None:
                progress.update(1)
    return infos, problems
