"""What a shell command gets: the phone, its shell state, stdin, and stdout/stderr buffers.

Commands see the shell through :class:`Device`, the part of
:class:`~agent_runtime.simphone.adb.shell.AndroidShell` they use, so the command modules sit below
the interpreter that dispatches to them instead of importing it back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from agent_runtime.simphone.adb.fs import FsError, VirtualFS
from agent_runtime.simphone.adb.state import InputMethods

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

SH = "/system/bin/sh"


class StdinSource(Protocol):
    """The client's stdin (``adb shell`` with shell_v2): everything up to close-stdin, read on demand."""

    def read_all(self) -> bytes: ...


@dataclass(frozen=True)
class ShellResult:
    """What a command line printed and its exit status.

    ``output`` is stdout and stderr interleaved, as a ``shell:`` (v1) stream carries them;
    ``chunks`` keeps them apart, in order, as ``(fd, bytes)`` for shell_v2's stdout/stderr packets.
    ``exited`` is True when the line ran ``exit`` (an interactive session ends there).
    """

    output: bytes
    status: int
    chunks: tuple[tuple[int, bytes], ...] = ()
    exited: bool = False

    @property
    def stdout(self) -> bytes:
        return b"".join(data for fd, data in self.chunks if fd == 1)

    @property
    def stderr(self) -> bytes:
        return b"".join(data for fd, data in self.chunks if fd == 2)


class Device(Protocol):
    """The shell a command runs in: the phone plus the Android state adb clients expect."""

    phone: SimPhone
    fs: VirtualFS
    settings: dict[str, dict[str, str]]
    props: dict[str, str]
    ime: InputMethods
    #: ``input motionevent DOWN`` position and time, until the matching UP.
    touch_down: tuple[int, int, float] | None
    #: Apps seen in the foreground since their last ``am force-stop`` (``ps``, ``pidof``).
    started: set[str]
    statusbar: str
    battery_unplugged: int

    @property
    def serial(self) -> str: ...

    def packages(self) -> list[str]: ...

    def running(self) -> list[str]: ...

    def run(
        self, line: str, *, stdin: StdinSource | None = None, depth: int = 0, status: int = 0
    ) -> ShellResult:
        """Run one command line (a nested ``sh``'s lines)."""
        ...


@dataclass
class Context:
    """One command's view of the world. Commands write to ``stdout``/``stderr`` and return an exit code.

    ``stdin`` is what a pipe or ``<`` gave the command. ``stdin_source`` is the client's own stdin,
    not read yet: the shell reads it into ``stdin`` only for a command that reads stdin (``cat``
    with no file), as a real command reads its stdin only if it wants to.
    """

    device: Device
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

__all__ = ["SH", "CommandFn", "Context", "Device", "FsError", "ShellResult", "StdinSource"]
