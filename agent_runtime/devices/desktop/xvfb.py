"""Start a private virtual X display (Xvfb) — for headless runs, tests and benchmarks.

Xvfb picks a free display number itself (``-displayfd``), so parallel runs never collide, and
reports it once the server accepts connections, so no polling or sleeping is needed.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import time
from types import TracebackType
from typing import Self

from agent_runtime.errors import DeviceError

INSTALL_HINT = "install Xvfb (Debian/Ubuntu: apt-get install xvfb xdotool)"


def _read_line(fd: int, timeout_s: float) -> str:
    """Read up to a newline. Xvfb writes the number and the newline separately, and it dies
    ("Cannot write display number") if the pipe is closed in between."""
    deadline = time.monotonic() + timeout_s
    data = b""
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 64) if ready else b""
        if not chunk:
            break
        data += chunk
    return data.decode().strip()


class Xvfb:
    """A running Xvfb server; ``display`` is its name (``":5"``). Use as a context manager."""

    def __init__(
        self, width: int = 1920, height: int = 1080, depth: int = 24, *, timeout_s: float = 10.0
    ) -> None:
        exe = shutil.which("Xvfb")
        if exe is None:
            raise DeviceError("Xvfb is not installed", hint=INSTALL_HINT)
        # A file, not a pipe, for Xvfb's log: nobody reads it while it runs, and a full pipe would block it.
        self._log = tempfile.TemporaryFile()
        read_fd, write_fd = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [
                    exe,
                    "-displayfd",
                    str(write_fd),
                    "-screen",
                    "0",
                    f"{width}x{height}x{depth}",
                    "-nolisten",
                    "tcp",
                ],
                pass_fds=(write_fd,),
                stdout=subprocess.DEVNULL,
                stderr=self._log,
            )
        finally:
            os.close(write_fd)
        try:
            number = _read_line(read_fd, timeout_s)
        finally:
            os.close(read_fd)
        if not number.isdigit():
            self._proc.kill()
            self._proc.wait()
            self._log.seek(0)
            err = self._log.read().decode("utf-8", "replace")
            self.stop()
            raise DeviceError(f"Xvfb did not start: {err.strip()[-300:] or 'no display number reported'}")
        self.display = f":{number}"
        self.size = (width, height)

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


__all__ = ["Xvfb"]
