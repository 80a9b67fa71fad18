"""Processes and the shell itself: ``ps pidof date sh export unset``.

SimPhone runs no processes; ``ps`` shows the ones a phone would have — Android's system processes
plus one per app that is running (the foreground app and apps started since their last
``am force-stop``). An app's pid is stable (``1000 + its task id``, the number ``dumpsys activity
top`` prints), so ``pidof`` and ``ps`` agree with ``dumpsys``.

``date`` reads SimPhone's virtual clock, the one the status bar shows (time zone UTC).
"""

from __future__ import annotations

import datetime as dt
import re

from agent_runtime.simphone.adb.context import SH, CommandFn, Context, Device

#: (user, pid, ppid, name) of the system processes every phone runs.
SYSTEM_PROCESSES = (
    ("root", 1, 0, "init"),
    ("logd", 271, 1, "logd"),
    ("system", 302, 1, "servicemanager"),
    ("root", 329, 1, "zygote64"),
    ("system", 412, 1, "surfaceflinger"),
    ("shell", 488, 1, "adbd"),
    ("system", 560, 329, "system_server"),
    ("u0_a100", 734, 329, "com.android.systemui"),
    ("u0_a101", 790, 329, "com.android.inputmethod.latin"),
)
_ZYGOTE = 329
#: The shell ``adb shell`` runs in, and the ``ps`` it runs.
SHELL_PID = 4200
#: ``sh -c 'sh -c …'`` nesting SimPhone follows before it refuses.
MAX_DEPTH = 16
_DEFAULT_FIELDS = ["USER", "PID", "PPID", "VSZ", "RSS", "WCHAN", "ADDR", "S", "NAME"]
_NAME_ALIASES = ("CMD", "CMDLINE", "ARGS", "COMM", "COMMAND")
_PS_FIELDS = frozenset((*_DEFAULT_FIELDS, "UID", *_NAME_ALIASES))
#: Columns printed left-aligned (the rest are numbers, right-aligned).
_LEFT = frozenset(("USER", "WCHAN", "S", "NAME", *_NAME_ALIASES))


def task_id(device: Device, package: str) -> int:
    """The task id ``dumpsys activity`` shows for a package (stable: its rank among the packages)."""
    packages = sorted(device.packages())
    return 10 + packages.index(package) if package in packages else 1


def app_pid(device: Device, package: str) -> int:
    return 1000 + task_id(device, package)


def processes(device: Device) -> list[dict[str, str]]:
    """Every process as ``ps -A`` fields: the system's, then one per running app."""
    rows = [(user, pid, ppid, name) for user, pid, ppid, name in SYSTEM_PROCESSES]
    for package in device.running():
        rows.append((f"u0_a{task_id(device, package)}", app_pid(device, package), _ZYGOTE, package))
    rows.append(("shell", SHELL_PID, 488, "sh"))
    rows.append(("shell", SHELL_PID + 1, SHELL_PID, "ps"))
    return [_row(*row) for row in rows]


def _row(user: str, pid: int, ppid: int, name: str) -> dict[str, str]:
    uid = {"root": 0, "system": 1000, "shell": 2000, "logd": 1036}.get(user)
    if uid is None:
        uid = 10000 + int(user.removeprefix("u0_a"))
    return {
        "USER": user,
        "UID": str(uid),
        "PID": str(pid),
        "PPID": str(ppid),
        "VSZ": str(2_000_000 + pid * 1024),
        "RSS": str(40_000 + (pid % 97) * 512),
        "WCHAN": "0",
        "ADDR": "0",
        "S": "R" if name == "ps" else "S",
        "NAME": name,
    }


def _cell(row: dict[str, str], column: str) -> str:
    return row["NAME"] if column in _NAME_ALIASES else row[column]


def ps(ctx: Context, args: list[str]) -> int:
    """``ps [-A|-e] [-o FIELD,...] [-p PID,...] [NAME...]`` (toybox's columns)."""
    everyone, columns, pids, names = False, list(_DEFAULT_FIELDS), set[str](), set[str]()
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg in ("-o", "-p") and not rest:
            ctx.error(f"ps: Missing argument to {arg}")
            return 1
        if arg == "-o":
            columns = [c.strip().upper().partition("=")[0] for c in rest.pop(0).split(",") if c.strip()]
            unknown = [c for c in columns if c not in _PS_FIELDS]
            if unknown:
                ctx.error(f"ps: bad -o {unknown[0]}")
                return 1
        elif arg == "-p":
            pids |= set(rest.pop(0).split(","))
        elif arg.startswith("-"):
            everyone |= bool(set(arg[1:]) & set("Ae"))
        else:
            names.add(arg)
    rows = processes(ctx.device)
    if pids or names:
        rows = [r for r in rows if r["PID"] in pids or r["NAME"] in names]
    elif not everyone:
        rows = [r for r in rows if int(r["PID"]) >= SHELL_PID]
    widths = {c: max([len(c)] + [len(_cell(r, c)) for r in rows]) for c in columns}

    def line(cells: list[str]) -> str:
        parts = []
        for index, (column, cell) in enumerate(zip(columns, cells, strict=True)):
            align = "<" if column in _LEFT else ">"
            parts.append(cell if index == len(columns) - 1 else f"{cell:{align}{widths[column]}}")
        return " ".join(parts)

    ctx.print(line(columns))
    for row in rows:
        ctx.print(line([_cell(row, c) for c in columns]))
    return 0


def pidof(ctx: Context, args: list[str]) -> int:
    """``pidof [-s] NAME...``: the pids, space-separated; exit 1 when none runs."""
    single = "-s" in args
    names = [a for a in args if not a.startswith("-")]
    found = [row["PID"] for row in processes(ctx.device) if row["NAME"] in names]
    if not found:
        return 1
    ctx.print(" ".join(found[:1] if single else found))
    return 0


def now_utc(device: Device) -> dt.datetime:
    """SimPhone's virtual clock (what the status bar shows), as a UTC time."""
    return device.phone.now.replace(tzinfo=dt.UTC)


def _strftime(moment: dt.datetime, fmt: str) -> str:
    """``strftime`` plus toybox's ``%s`` (epoch seconds) and ``%N`` (nanoseconds)."""

    def one(match: re.Match[str]) -> str:
        code = match[1]
        if code == "s":
            return str(int(moment.timestamp()))
        if code == "N":
            return f"{moment.microsecond * 1000:09d}"
        if code == "%":
            return "%"
        return moment.strftime("%" + code)

    return re.sub(r"%([-_0^#]?[A-Za-z%])", one, fmt)


def date(ctx: Context, args: list[str]) -> int:
    """``date [-u] [+FORMAT]``; setting the clock is refused, as for adb's shell user."""
    fmt = "%a %b %e %H:%M:%S %Z %Y"
    for arg in args:
        if arg.startswith("+"):
            fmt = arg[1:]
        elif arg in ("-u", "--utc"):
            continue
        elif arg == "-s" or arg[:1].isdigit():
            ctx.error("date: cannot set date: Operation not permitted")
            return 1
        else:
            ctx.error(f"date: Unknown option '{arg}'")
            return 1
    ctx.print(_strftime(now_utc(ctx.device), fmt))
    return 0


class _Bytes:
    """A stdin that is already here (a pipe into ``sh``)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read_all(self) -> bytes:
        return self.data


def sh(ctx: Context, args: list[str]) -> int:
    """``sh -c LINE``, ``sh FILE`` or ``sh`` reading a script from stdin, line by line, until ``exit``."""
    if ctx.depth >= MAX_DEPTH:
        ctx.error(f"{SH}: too many nested shells")
        return 2
    device = ctx.device
    flags = [a for a in args if a.startswith("-")]
    if "-c" in args:
        index = args.index("-c")
        if index + 1 >= len(args):
            ctx.error(f"{SH}: -c: option requires an argument")
            return 2
        lines = [args[index + 1]]
        source = ctx.stdin_source or _Bytes(ctx.stdin)
    else:
        operands = [a for a in args if a not in flags]
        if operands:
            with device.phone.lock:
                script = device.fs.read(operands[0])
        else:
            script = ctx.stdin_source.read_all() if ctx.stdin_source else ctx.stdin
        lines = script.decode("utf-8", "replace").splitlines()
        source = _Bytes(b"")
    status = 0
    for text in lines:
        result = device.run(text, stdin=source, depth=ctx.depth + 1, status=status)
        for fd, data in result.chunks:
            (ctx.stdout if fd == 1 else ctx.stderr).extend(data)
        status = result.status
        if result.exited:
            break
    return status


def export(ctx: Context, args: list[str]) -> int:
    """``export``/``unset``/``set``: SimPhone keeps no variables, so these change nothing."""
    return 0


COMMANDS: dict[str, CommandFn] = {
    "date": date,
    "export": export,
    "pidof": pidof,
    "ps": ps,
    "set": export,
    "sh": sh,
    "unset": export,
}
