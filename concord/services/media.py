"""Images as raters receive them: metadata stripped (:mod:`concord.media`), or, in a
study with ``display``, normalised to one size and file type (:mod:`concord.normalise`);
cached.

Every rater-facing image (the image to rate, the ranking grid, zoom, the preloaded next
image, editing-task source images, practice images, thumbnails) goes through
:func:`served_image`, so no generator metadata ever reaches a browser. Originals are only
read. Served copies are kept in memory (a small LRU) and, when a cache folder is given, on
disk, keyed by the file's path, size and modification time and the display size, so a
replaced file is served afresh.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from PIL import Image
from sqlite_utils import Database

from concord.display import Display
from concord.errors import NotFoundError
from concord.media import CleanImage, strip_metadata
from concord.normalise import normalise
from concord.store import studies as study_store

# Bump when strip_metadata changes what it keeps: old disk copies are then ignored.
_CACHE_VERSION = "1"
# Bump when concord.normalise changes its output.
_NORMAL_VERSION = "1"
_MEMORY_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServedImage:
    """Clean bytes, the format Streamlit is told (PNG or JPEG) and the pixel width."""

    data: bytes
    format: str
    width: int


class _Lru:
    """A byte-bounded LRU shared by the threads of one app process."""

    def __init__(self, limit: int) -> None:
        self.limit, self.size = limit, 0
        self.items: OrderedDict[str, ServedImage] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> ServedImage | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def put(self, key: str, value: ServedImage) -> None:
        with self.lock:
            if key in self.items:
                return
            self.items[key] = value
            self.size += len(value.data)
            while self.size > self.limit and len(self.items) > 1:
                _, old = self.items.popitem(last=False)
                self.size -= len(old.data)


_MEMORY = _Lru(_MEMORY_BYTES)


def _key(path: Path, size: int | None) -> str:
    st = path.stat()
    shown = f"n{_NORMAL_VERSION}:{size}" if size else "as-is"
    text = f"{_CACHE_VERSION}|{shown}|{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def served_image(path: Path, cache_dir: Path | None = None, *,
                 size: int | None = None) -> ServedImage:
    """The image at ``path`` as a rater's browser may receive it: metadata stripped, or,
    with ``size`` (the study's display size, or a thumbnail's), normalised to that size
    as a fixed-length PNG.

    Raises:
        OSError: the file cannot be read or decoded (the caller shows a neutral message;
            the path must never reach a rater).
    """
    key = _key(path, size)
    found = _MEMORY.get(key)
    if found is not None:
        return found
    clean = _from_disk(cache_dir, key) if cache_dir is not None else None
    if clean is None:
        data = path.read_bytes()
        clean = normalise(data, size) if size else strip_metadata(data)
        if cache_dir is not None:
            _to_disk(cache_dir, key, clean)
    served = ServedImage(clean.data, clean.format, _width(clean.data))
    _MEMORY.put(key, served)
    return served


def display_size(db: Database, study_name: str) -> int | None:
    """The display size of a study (its ``display`` setting), None when its images are
    served as generated (metadata stripped) or there is no such study (any more)."""
    try:
        study = study_store.get_study(db, study_name)
    except NotFoundError:
        return None
    found = Display.of(study.settings)
    return found.size if found is not None else None


def _width(data: bytes) -> int:
    try:
        with Image.open(io.BytesIO(data)) as im:
            return int(im.size[0])
    except (OSError, SyntaxError, ValueError) as exc:
        raise OSError(f"unreadable image ({exc})") from exc


def _disk_name(key: str, fmt: str) -> str:
    return f"{key}.{'png' if fmt == 'PNG' else 'jpg'}"


def _from_disk(cache_dir: Path, key: str) -> CleanImage | None:
    for fmt in ("PNG", "JPEG"):
        candidate = cache_dir / _disk_name(key, fmt)
        try:
            return CleanImage(candidate.read_bytes(), fmt)
        except FileNotFoundError:
            continue
    return None


def _to_disk(cache_dir: Path, key: str, clean: CleanImage) -> None:
    """Write a clean copy atomically (a reader never sees half a file); best effort."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".tmp-")
    except OSError:
        # A read-only or full disk only costs the next process a re-clean.
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(clean.data)
        os.replace(tmp, cache_dir / _disk_name(key, clean.format))
    except OSError:
        Path(tmp).unlink(missing_ok=True)
