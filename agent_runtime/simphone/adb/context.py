"""What a shell command gets: the phone, its shell state, stdin, and stdout/stderr buffers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent_runtime.simphone.adb.fs import FsError

if TYPE_CHECKING:
    from agent_runtime.simphone.adb.shell import AndroidShell

SH = "/system/bin/sh"


@dataclass
class Context:
    """One command's view of the world. Commands write to ``stdout``/``stderr`` and return an exit code."""

    device: AndroidShell
    stdin: bytes = b""
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)

    def print(self, text: str = "", end: str = "\n") -> None:
        self.stdout += (text + end).encode("utf-8")

    def error(self, text: str) -> None:
        self.stderr += (text + "\n").encode("utf-8")

    def java_exception(self, command: str, exc_class: str, message: str) -> int:
        """How ``cmd``-based tools (``input``, ``am``) report an uncaught exception: stderr, exit 255."""
        self.error(f"Exception occurred while executing '{command}':\n{exc_class}: {message}")
        return 255

    def write_file(self, path: str, data: bytes, *, append: bool = False) -> None:
        """Write to the virtual file system; ``/dev/null`` swallows, ``/dev/tty`` / ``/dev/stdout`` print."""
        if path == "/dev/null":
            return
        if path in ("/dev/tty", "/dev/stdout"):
            self.stdout += data
            return
        if path == "/dev/stderr":
            self.stderr += data
            return
        self.device.fs.write(path, data, append=append)


#: A shell command: ``(context, argv without the command name) -> exit status``.
CommandFn = Callable[[Context, list[str]], int]

__all__ = ["SH", "CommandFn", "Context", "FsError"]
