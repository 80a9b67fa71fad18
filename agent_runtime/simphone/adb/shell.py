"""``AndroidShell``: one SimPhone's shell — the state adb clients see beside the screen, and the
interpreter that runs their command lines.

The interpreter understands what ``/system/bin/sh`` lines from adb clients contain — ``;``
``&&`` ``||`` ``|``, redirections, ``$?`` — and dispatches each simple command to a Python
function in :mod:`.commands`. It never runs a real shell, subprocess or ``eval``: arguments are
split by :func:`shlex.split` and passed to those functions as data.
"""

from __future__ import annotations

import logging
import posixpath
import re
import threading
import weakref
from contextlib import nullcontext
from typing import TYPE_CHECKING

from agent_runtime.simphone.adb.cmdline import (
    Command,
    Pipeline,
    Redirect,
    ShellSyntaxError,
    parse,
    words,
)
from agent_runtime.simphone.adb.commands import COMMANDS, STDIN_READERS, UNLOCKED
from agent_runtime.simphone.adb.context import SH, Context, ShellResult, StdinSource
from agent_runtime.simphone.adb.fs import FsError, VirtualFS, normalize
from agent_runtime.simphone.adb.numbers import BadNumber
from agent_runtime.simphone.adb.state import (
    ADB_IME,
    LATIN_IME,
    SYSTEM_PACKAGES,
    InputMethods,
    default_props,
    default_settings,
)

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

log = logging.getLogger(__name__)

#: Folders whose programs a command may be called by (``/system/bin/input tap …``).
BIN_DIRS = frozenset(("/system/bin", "/system/xbin", "/bin", "/vendor/bin", "/product/bin"))


_SHELLS: weakref.WeakKeyDictionary[SimPhone, AndroidShell] = weakref.WeakKeyDictionary()
_SHELLS_LOCK = threading.Lock()


class _Output:
    """A command line's output as it is produced: interleaved, and per stream."""

    def __init__(self) -> None:
        self.chunks: list[tuple[int, bytes]] = []

    def write(self, fd: int, data: bytes | bytearray) -> None:
        if data:
            self.chunks.append((fd, bytes(data)))

    def result(self, status: int, exited: bool = False) -> ShellResult:
        output = b"".join(data for _, data in self.chunks)
        return ShellResult(output, status, tuple(self.chunks), exited)


class _Exit(Exception):
    """``exit [N]``: stop the command line (and the session) with status N."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


#: ``NAME=value`` before a command (``ANDROID_LOG_TAGS=x cmd``): the shell sets it for that command.
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


class AndroidShell:
    """A SimPhone plus the Android state adb clients expect: files, settings, properties, IMEs.

    ``adb_keyboard=False`` builds a phone without ADB Keyboard installed.
    Thread-safe: every command runs holding ``phone.lock``.
    """

    @classmethod
    def of(cls, phone: SimPhone, *, adb_keyboard: bool = True) -> AndroidShell:
        """The phone's one shell, so files, settings and IMEs outlive an adb server restart.

        ``adb_keyboard`` installs or uninstalls ADB Keyboard on a phone that already has a shell.
        """
        with _SHELLS_LOCK:
            shell = _SHELLS.get(phone)
            if shell is None:
                shell = _SHELLS[phone] = cls(phone, adb_keyboard=adb_keyboard)
            else:
                with phone.lock:
                    shell.ime.set_installed(ADB_IME, adb_keyboard)
            return shell

    def __init__(self, phone: SimPhone, *, adb_keyboard: bool = True) -> None:
        self.phone = phone
        self.fs = VirtualFS()
        size = phone.screen_size
        self.settings = default_settings(f"{phone.serial}:{phone.seed}")
        self.props = default_props(phone.serial, size.width, size.height)
        self.ime = InputMethods(self.settings, (LATIN_IME, ADB_IME) if adb_keyboard else (LATIN_IME,))
        #: ``input motionevent DOWN`` position and time, until the matching UP.
        self.touch_down: tuple[int, int, float] | None = None
        #: Apps seen in the foreground since their last ``am force-stop`` (``ps``, ``pidof``).
        self.started: set[str] = {phone.foreground}
        #: ``cmd statusbar expand-notifications`` / ``expand-settings`` / ``collapse``.
        self.statusbar = "collapsed"
        #: The battery level before ``dumpsys battery set level`` (``dumpsys battery reset``).
        self.battery_unplugged = phone.battery

    @property
    def serial(self) -> str:
        return self.phone.serial

    def packages(self) -> list[str]:
        """Installed packages: the phone's apps, the system packages and the installed IMEs."""
        names = set(self.phone.packages()) | set(SYSTEM_PACKAGES)
        names |= {ime.partition("/")[0] for ime in self.ime.installed}
        return sorted(names)

    def running(self) -> list[str]:
        """App packages with a process: the foreground app and apps started since their last force-stop."""
        with self.phone.lock:
            self.started.add(self.phone.foreground)
            return sorted(p for p in self.started if p in self.phone.apps)

    def run(
        self, line: str, *, stdin: StdinSource | None = None, depth: int = 0, status: int = 0
    ) -> ShellResult:
        """Run one command line, as ``adb shell LINE`` would.

        ``stdin`` is the client's stdin (shell_v2), read only by the first command that reads stdin;
        ``status`` is ``$?`` before the line (the previous line's, in a session).
        """
        out = _Output()
        try:
            pipelines = parse(line)
        except ShellSyntaxError as exc:
            out.write(2, f"{SH}: syntax error: {exc}\n".encode())
            return out.result(1)
        try:
            for pipeline in pipelines:
                if (pipeline.connector == "&&" and status != 0) or (
                    pipeline.connector == "||" and status == 0
                ):
                    continue
                status = self._pipeline(pipeline, status, out, stdin, depth)
        except _Exit as exc:
            return out.result(exc.status, exited=True)
        return out.result(status)

    def _pipeline(
        self, pipeline: Pipeline, last_status: int, out: _Output, source: StdinSource | None, depth: int
    ) -> int:
        stdin = b""
        status = 0
        for index, command in enumerate(pipeline.commands):
            piped = index < len(pipeline.commands) - 1
            ctx = Context(
                self,
                stdin=stdin,
                stdin_source=source if index == 0 else None,
                depth=depth,
                last_status=last_status,
            )
            try:
                status = self._command(ctx, command, last_status)
            except _Exit:
                if len(pipeline.commands) == 1:  # `exit` in a pipeline only ends its own subshell
                    out.write(1, ctx.stdout)
                    out.write(2, ctx.stderr)
                    raise
                status = 0
            stdin = bytes(ctx.stdout) if piped else b""
            if not piped:
                out.write(1, ctx.stdout)
            out.write(2, ctx.stderr)
        return status

    def _command(self, ctx: Context, command: Command, last_status: int) -> int:
        """Run one simple command; its unredirected output is left in ``ctx.stdout``/``ctx.stderr``."""
        try:
            args, redirects = words(command, last_status)
        except ShellSyntaxError as exc:
            ctx.error(f"{SH}: syntax error: {exc}")
            return 1
        with self.phone.lock:
            targets = self._open_redirects(ctx, redirects)
        if targets is None:
            return 1
        status = self._dispatch(ctx, args)
        with self.phone.lock:
            self._route(ctx, targets)
        return status

    def _open_redirects(self, ctx: Context, redirects: list[Redirect]) -> dict[int, str] | None:
        """Apply redirections in order: ``{fd: "1" | "2" | path}``, or None (after a message) on failure."""
        targets = {1: "1", 2: "2"}
        for redirect in redirects:
            if redirect.op == "<":
                ctx.stdin_source = None
                if redirect.target in ("/dev/null", "/dev/zero"):
                    ctx.stdin = b""
                    continue
                try:
                    ctx.stdin = self.fs.read(redirect.target)
                except FsError as exc:
                    ctx.error(f"{SH}: can't open {redirect.target}: {exc}")
                    return None
            elif redirect.op == ">&":
                if redirect.target not in ("1", "2"):
                    ctx.error(f"{SH}: {redirect.target}: bad file descriptor")
                    return None
                targets[redirect.fd] = targets[int(redirect.target)]
            else:
                try:
                    ctx.write_file(redirect.target, b"", append=redirect.op == ">>")
                except FsError as exc:
                    ctx.error(f"{SH}: can't create {redirect.target}: {exc}")
                    return None
                targets[redirect.fd] = normalize(redirect.target)
        return targets

    def _route(self, ctx: Context, targets: dict[int, str]) -> None:
        """Send the command's stdout/stderr where its redirections point (stream, other stream, file)."""
        stdout, stderr = bytes(ctx.stdout), bytes(ctx.stderr)
        ctx.stdout.clear()
        ctx.stderr.clear()
        for fd, data in ((1, stdout), (2, stderr)):
            target = targets.get(fd, str(fd))
            if target in ("1", "2"):
                (ctx.stdout if target == "1" else ctx.stderr).extend(data)
            elif data:
                try:
                    ctx.write_file(target, data, append=True)
                except FsError as exc:
                    ctx.error(f"{SH}: can't write {target}: {exc}")

    def _dispatch(self, ctx: Context, args: list[str]) -> int:
        while args and _ASSIGNMENT.match(args[0]):
            args = args[1:]  # SimPhone expands no variables, so an assignment changes nothing
        if not args:
            return 0
        name = args[0]
        if "/" in name and posixpath.dirname(name) in BIN_DIRS:
            name = posixpath.basename(name)
        if name == "exit":
            raise _Exit(self._exit_status(ctx, args[1:]))
        fn = COMMANDS.get(name)
        if fn is None:
            ctx.error(f"{SH}: {args[0]}: inaccessible or not found")
            return 127
        reads_stdin = STDIN_READERS.get(name)
        if ctx.stdin_source is not None and reads_stdin is not None and reads_stdin(args[1:]):
            ctx.stdin = ctx.stdin_source.read_all()  # before the lock: the client may take its time
            ctx.stdin_source = None
        try:
            with nullcontext() if name in UNLOCKED else self.phone.lock:
                self.started.add(self.phone.foreground)
                status = fn(ctx, args[1:])
                self.started.add(self.phone.foreground)
                return status
        except FsError as exc:
            ctx.error(f"{name}: {exc}")
            return 1
        except BadNumber as exc:
            ctx.error(f"{name}: {exc}")
            return 1

    @staticmethod
    def _exit_status(ctx: Context, args: list[str]) -> int:
        if not args:
            return ctx.last_status
        if not args[0].isdigit() or len(args[0]) > 18 or len(args) > 1:
            ctx.error(f"{SH}: exit: {' '.join(args)}: bad number")
            return 2
        return int(args[0]) % 256
