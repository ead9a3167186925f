"""Writing outputs so that a crash leaves the old output or the new one, never a mix.

A file is written to a temporary file beside its target (same folder, so the same file
system), fsynced and renamed over the target: ``rename`` is atomic on POSIX, so a reader,
or a ``kill -9`` at any moment, sees either the whole previous file or the whole new one.
A folder is built beside its target and swapped in with ``renameat2(RENAME_EXCHANGE)``
where the kernel has it (Linux ≥ 3.15 on ext4, xfs, btrfs, tmpfs...); elsewhere with two
renames, which leave a window of microseconds in which the target is missing (the
previous folder is then still complete under its temporary name).

A killed writer can leave its temporary file (``.<name>.<random>.tmp``) beside the
target; it is hidden, never read, and may be deleted.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from concord.errors import ConcordError

_RENAME_EXCHANGE = 2  # linux/fs.h


def _temp_beside(target: Path, suffix: str = "tmp") -> Path:
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}.{suffix}")


def fsync_dir(folder: Path) -> None:
    """Make a rename inside ``folder`` durable (its directory entry is on disk)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_STREAMS = ("a named pipe", "a character device")  # written in place by write_bytes
_KINDS = ((stat.S_ISFIFO, _STREAMS[0]), (stat.S_ISCHR, _STREAMS[1]),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_kind(path: Path) -> str | None:
    """What ``path`` is when it is a pipe, a device or a socket (``"a named pipe"``...);
    None for a regular file, a folder, or nothing there."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):  # missing, a loop, a NUL in the name: not special
        return None
    return next((kind for test, kind in _KINDS if test(mode)), None)


def refuse_special(target: Path) -> None:
    """ConcordError (one line) when ``target`` is a pipe, device or socket: an output that
    must be a regular file (a database backup, a resumable score file) is never written
    into one, nor is the device or pipe replaced by a file of that name."""
    kind = special_kind(target)
    if kind is not None:
        raise ConcordError(f"cannot write {target}: it is {kind}, not a regular file; "
                           "nothing was written")


def _cannot(target: Path, exc: OSError) -> ConcordError:
    return ConcordError(f"cannot write {target}: {exc.strerror or exc}")


@contextlib.contextmanager
def replacing(target: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; when the block ends without an error,
    the file written there is fsynced and renamed over ``target`` (else removed)."""
    target = Path(target)
    if target.is_dir():
        raise ConcordError(f"cannot write {target}: it is a folder")
    refuse_special(target)
    tmp = _temp_beside(target)
    try:
        yield tmp
        with tmp.open("rb+") as handle:
            os.fsync(handle.fileno())
        with contextlib.suppress(FileNotFoundError):  # keep the previous file's permissions
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except OSError as exc:
        raise _cannot(target, exc) from exc
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically. A stream (a pipe that a process reads,
    ``/dev/stdout``, a character device) is written in place; a pipe that no process
    reads, a socket or a block device is refused (ConcordError), never waited on or
    replaced. ConcordError names the path on failure."""
    target = Path(target)
    if special_kind(target) in _STREAMS:
        _write_stream(target, data)
        return
    with replacing(target) as tmp, open(tmp, "xb") as handle:
        handle.write(data)


def _write_stream(target: Path, data: bytes) -> None:
    try:  # O_NONBLOCK: a pipe without a reader fails at once (ENXIO) instead of waiting
        fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise ConcordError(f"cannot write {target}: no process reads that pipe; "
                               "nothing was written") from exc
        raise _cannot(target, exc) from exc
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
    except OSError as exc:
        raise _cannot(target, exc) from exc
    finally:
        os.close(fd)


def replace_dir(target: Path, files: Mapping[str, bytes]) -> list[Path]:
    """Make ``target`` a folder holding exactly ``files`` (relative path → bytes), in one
    swap. The caller decides whether an existing ``target`` may be replaced."""
    target = Path(target)
    if target.exists() and not target.is_dir():
        raise ConcordError(f"cannot write {target}: it exists and is not a folder")
    tmp = _temp_beside(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
        for rel, data in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        for folder in {(tmp / rel).parent for rel in files} | {tmp}:
            fsync_dir(folder)
        _swap_in(tmp, target)
        fsync_dir(target.parent)
    except OSError as exc:
        raise _cannot(target, exc) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the previous folder, after a swap
    return [target / rel for rel in files]


def _swap_in(new: Path, target: Path) -> None:
    """Put folder ``new`` at ``target``; whatever was at ``target`` ends up at ``new``."""
    if not target.exists():
        os.rename(new, target)
        return
    if _exchange(new, target):
        return
    old = _temp_beside(target, "old")
    os.rename(target, old)  # from here until the next rename, target is missing
    os.rename(new, target)
    os.rename(old, new)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically with renameat2; False when the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):  # not Linux, or glibc < 2.28
        return False
    at_fdcwd = -100
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):  # file system lacks it
        return False
    raise OSError(err, os.strerror(err), str(b))


@contextlib.contextmanager
def building_dir(target: Path) -> Iterator[Path]:
    """Yield an empty folder beside ``target`` to build a whole output folder in (by any
    writer, e.g. a library's ``save_to_disk``); when the block ends without an error, its
    files are fsynced and it is swapped in at ``target`` in one step (else removed). The
    caller decides whether an existing ``target`` may be replaced."""
    target = Path(target)
    if target.exists() and not target.is_dir():
        raise ConcordError(f"cannot write {target}: it exists and is not a folder")
    tmp = _temp_beside(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
        yield tmp
        for folder, _, names in os.walk(tmp):
            for name in names:
                with open(os.path.join(folder, name), "rb+") as handle:
                    os.fsync(handle.fileno())
            fsync_dir(Path(folder))
        _swap_in(tmp, target)
        fsync_dir(target.parent)
    except OSError as exc:
        raise _cannot(target, exc) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the previous folder, after a swap
