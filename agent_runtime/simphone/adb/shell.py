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
import threading
import weakref
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_runtime.simphone.adb.cmdline import (
    Command,
    Pipeline,
    Redirect,
    ShellSyntaxError,
    parse,
    words,
)
from agent_runtime.simphone.adb.commands import COMMANDS, UNLOCKED
from agent_runtime.simphone.adb.context import SH, Context
from agent_runtime.simphone.adb.fs import FsError, VirtualFS, normalize
from agent_runtime.simphone.adb.state import (
    ADB_IME,
    LATIN_IME,
    SYSTEM_PACKAGES,
    InputMethods,
    default_props,
    default_settings,
)

if TYPE_CHECKING:
    from agent_runtime.simphone import SimPhone

log = logging.getLogger(__name__)

#: Folders whose programs a command may be called by (``/system/bin/input tap …``).
BIN_DIRS = frozenset(("/system/bin", "/system/xbin", "/bin", "/vendor/bin", "/product/bin"))


_SHELLS: weakref.WeakKeyDictionary[SimPhone, AndroidShell] = weakref.WeakKeyDictionary()
_SHELLS_LOCK = threading.Lock()


@dataclass(frozen=True)
class ShellResult:
    """What a ``shell:`` stream carries: stdout and stderr interleaved (adb shell v1), and the exit status."""

    output: bytes
    status: int


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

    @property
    def serial(self) -> str:
        return self.phone.serial

    def packages(self) -> list[str]:
        """Installed packages: the phone's apps, the system packages and the installed IMEs."""
        names = set(self.phone.packages()) | set(SYSTEM_PACKAGES)
        names |= {ime.partition("/")[0] for ime in self.ime.installed}
        return sorted(names)

    def run(self, line: str) -> ShellResult:
        """Run one command line, as ``adb shell LINE`` would."""
        out = bytearray()
        try:
            pipelines = parse(line)
        except ShellSyntaxError as exc:
            return ShellResult(f"{SH}: syntax error: {exc}\n".encode(), 1)
        status = 0
        for pipeline in pipelines:
            if (pipeline.connector == "&&" and status != 0) or (pipeline.connector == "||" and status == 0):
                continue
            status = self._pipeline(pipeline, status, out)
        return ShellResult(bytes(out), status)

    def _pipeline(self, pipeline: Pipeline, last_status: int, out: bytearray) -> int:
        stdin = b""
        status = 0
        for index, command in enumerate(pipeline.commands):
            piped = index < len(pipeline.commands) - 1
            ctx = Context(self, stdin=stdin)
            status = self._command(ctx, command, last_status)
            stdin = bytes(ctx.stdout) if piped else b""
            if not piped:
                out += ctx.stdout
            out += ctx.stderr
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
        if not args:
            return 0
        name = args[0]
        if "/" in name and posixpath.dirname(name) in BIN_DIRS:
            name = posixpath.basename(name)
        fn = COMMANDS.get(name)
        if fn is None:
            ctx.error(f"{SH}: {args[0]}: inaccessible or not found")
            return 127
        try:
            with nullcontext() if name in UNLOCKED else self.phone.lock:
                return fn(ctx, args[1:])
        except FsError as exc:
            ctx.error(f"{name}: {exc}")
            return 1
