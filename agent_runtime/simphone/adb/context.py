"""What a shell command gets: the phone, its shell state, stdin, and stdout/stderr buffers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from agent_runtime.simphone.adb.fs import FsError

if TYPE_CHECKING:
    from agent_runtime.simphone.adb.shell import AndroidShell

SH = "/system/bin/sh"


class StdinSource(Protocol):
    """The client's stdin (``adb shell`` with shell_v2): everything up to close-stdin, read on demand."""

    def read_all(self) -> bytes: ...


@dataclass
class Context:
    """One command's view of the world. Commands write to ``stdout``/``stderr`` and return an exit code.

    ``stdin`` is what a pipe or ``<`` gave the command. ``stdin_source`` is the client's own stdin,
    not read yet: the shell reads it into ``stdin`` only for a command that reads stdin (``cat``
    with no file), as a real command reads its stdin only if it wants to.
    """

    device: AndroidShell
    stdin: bytes = b""
    stdin_source: StdinSource | None = None
    #: How many ``sh -c`` levels deep this command runs.
    depth: int = 0
    #: ``$?`` when the command started.
    last_status: int = 0
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
        if path in ("/dev/null", "/dev/zero"):
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

__all__ = ["SH", "CommandFn", "Context", "FsError", "StdinSource"]
