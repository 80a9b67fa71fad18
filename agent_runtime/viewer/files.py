"""Reading and writing the viewer's files without ever blocking on one that is not a file.

A run directory is untrusted: anything may sit where a screenshot or a trace file should be. A
FIFO opened the ordinary way blocks until something writes to it (``traces view`` would hang
for ever), a device can be endless, a huge file fills memory. So a file is opened with
``O_NONBLOCK`` (opening a FIFO then returns at once), checked with ``fstat`` on the open
descriptor (no gap between the check and the read for the file to be swapped in), read only
when it is a regular file, and only up to a size cap.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from agent_runtime.errors import TraceError

#: The largest screenshot embedded in a page (a 4K PNG is well under it).
MAX_SCREEN_BYTES = 32 * 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def open_regular(path: Path, *, name: str | None = None) -> tuple[BinaryIO, int]:
    """``path`` opened for reading, and its size, if it is a regular file.

    Raises :class:`TraceError` (its message names ``name``, default the path) for anything
    else — a FIFO, a device, a directory — and for an OS error, without blocking on any of them.
    """
    shown = name or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise TraceError(f"{shown}: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise TraceError(f"{shown} is {_kind(info.st_mode)}, not a regular file; not read")
    return os.fdopen(fd, "rb"), info.st_size


def read_regular(path: Path, limit: int, *, name: str | None = None) -> bytes:
    """The bytes of ``path`` if it is a regular file (:func:`open_regular`) of at most ``limit``
    bytes; :class:`TraceError` otherwise, so the caller shows a placeholder instead of hanging."""
    shown = name or str(path)
    fh, size = open_regular(path, name=name)
    with fh:
        if size > limit:
            raise TraceError(f"{shown} is {_megabytes(size)}, over the viewer's {_megabytes(limit)} limit")
        data = fh.read(limit + 1)
    if len(data) > limit:  # it grew while being read
        raise TraceError(f"{shown} is over the viewer's {_megabytes(limit)} limit")
    return data


def require_regular(paths: Iterable[Path]) -> None:
    """Raise :class:`TraceError` when one of ``paths`` exists but is not a regular file (the
    trace reader would block on a FIFO there); absent paths are fine."""
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise TraceError(f"{path}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):
            raise TraceError(
                f"{path} is {_kind(mode)}, not a regular file; the run is not read",
                hint="a run directory holds the files agent-runtime wrote; replace this one",
            )


def write_regular(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (created or truncated), refusing anything but a regular file
    there — checked before opening, for a clear message, and again on the open descriptor:
    opening a FIFO non-blocking for writing fails at once (no reader) or is caught by ``fstat``
    before a byte is written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not stat.S_ISREG(mode := os.stat(path).st_mode):
            raise _cannot_write(path, f"it is {_kind(mode)}, not a regular file")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise _cannot_write(path, exc.strerror or str(exc)) from None
    with os.fdopen(fd, "wb") as fh:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _cannot_write(path, f"it is {_kind(mode)}, not a regular file")
        try:
            fh.truncate(0)
            fh.write(text.encode("utf-8"))
        except OSError as exc:
            raise _cannot_write(path, exc.strerror or str(exc)) from None


def _cannot_write(path: Path, why: str) -> TraceError:
    return TraceError(f"cannot write {path}: {why}", hint="pass --out FILE elsewhere")
