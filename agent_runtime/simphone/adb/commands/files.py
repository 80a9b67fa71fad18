"""toybox-style file and text commands: ``echo cat rm ls mkdir touch grep head true false sleep``.

Messages copy toybox's (``cat: PATH: No such file or directory``) because clients match on them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime

from agent_runtime.simphone.adb.context import CommandFn, Context
from agent_runtime.simphone.adb.fs import FsError, Node
from agent_runtime.simphone.adb.numbers import BadNumber, integer, number

#: The longest ``sleep`` SimPhone does: a longer one is refused rather than holding a client for hours.
MAX_SLEEP_S = 3600
_SLEEP_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

_ECHO_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "\\": "\\",
    "a": "\a",
    "b": "\b",
    "r": "\r",
    "v": "\v",
    "f": "\f",
    "e": "\x1b",
}


def _flags(args: list[str], allowed: str) -> tuple[set[str], list[str]]:
    """Split leading single-letter flags (``-rf`` -> {r, f}) from operands; stops at ``--``."""
    flags: set[str] = set()
    rest = list(args)
    while rest and rest[0].startswith("-") and len(rest[0]) > 1:
        if rest[0] == "--":
            rest.pop(0)
            break
        if not set(rest[0][1:]) <= set(allowed):
            break
        flags |= set(rest.pop(0)[1:])
    return flags, rest


def echo(ctx: Context, args: list[str]) -> int:
    flags, rest = _flags(args, "neE")
    text = " ".join(rest)
    if "e" in flags:
        text = re.sub(r"\\(.)", lambda m: _ECHO_ESCAPES.get(m[1], "\\" + m[1]), text)
    ctx.print(text, end="" if "n" in flags else "\n")
    return 0


def cat(ctx: Context, args: list[str]) -> int:
    status = 0
    for path in args or ["-"]:
        if path == "-":
            ctx.stdout += ctx.stdin
            continue
        try:
            ctx.stdout += ctx.device.fs.read(path)
        except FsError as exc:
            ctx.error(f"cat: {path}: {exc}")
            status = 1
    return status


def rm(ctx: Context, args: list[str]) -> int:
    flags, paths = _flags(args, "rRfiv")
    force, recursive = "f" in flags, bool(flags & {"r", "R"})
    if not paths and not force:
        ctx.error("rm: Need 1 argument")
        return 1
    status = 0
    for path in paths:
        try:
            ctx.device.fs.remove(path, recursive=recursive)
        except FsError as exc:
            if force and str(exc) == "No such file or directory":
                continue
            ctx.error(f"rm: {path}: {exc}")
            status = 1
    return status


def _ls_line(name: str, node: Node) -> str:
    perms = "drwxrwx--x" if node.is_dir else "-rw-rw----"
    stamp = datetime.fromtimestamp(node.mtime, UTC).strftime("%Y-%m-%d %H:%M")
    return f"{perms} 1 root sdcard_rw {node.size:>8} {stamp} {name}"


def ls(ctx: Context, args: list[str]) -> int:
    flags, paths = _flags(args, "laA1Rh")
    fs = ctx.device.fs
    status = 0
    targets = paths or ["/"]
    for path in targets:
        node = fs.stat(path)
        if node is None:
            ctx.error(f"ls: {path}: No such file or directory")
            status = 1
            continue
        entries = fs.listdir(path) if node.is_dir else [(path, node)]
        if len(targets) > 1 and node.is_dir:
            ctx.print(f"{path}:")
        for name, child in entries:
            if "l" in flags:
                ctx.print(_ls_line(name, child))
            else:
                ctx.print(name)
    return status


def mkdir(ctx: Context, args: list[str]) -> int:
    flags, paths = _flags(args, "pv")
    status = 0
    for path in paths:
        try:
            ctx.device.fs.mkdir(path, parents="p" in flags)
        except FsError as exc:
            ctx.error(f"mkdir: {path}: {exc}")
            status = 1
    return status


def touch(ctx: Context, args: list[str]) -> int:
    status = 0
    for path in _flags(args, "acm")[1]:
        try:
            ctx.device.fs.write(path, b"", append=True)
        except FsError as exc:
            ctx.error(f"touch: {path}: {exc}")
            status = 1
    return status


def _bre_to_re(pattern: str) -> str:
    """Basic regular expressions treat ``( ) | + ? { }`` as literals unless escaped: swap them for ``re``."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern) and pattern[i + 1] in "()|+?{}":
            out.append(pattern[i + 1])
            i += 2
            continue
        out.append("\\" + c if c in "()|+?{}" else c)
        i += 1
    return "".join(out)


def grep(ctx: Context, args: list[str]) -> int:
    flags, rest = _flags(args, "ivEFcqe")
    if not rest:
        ctx.error("grep: Need 1 argument")
        return 2
    pattern, files = rest[0], rest[1:]
    if "F" in flags:
        regex = re.escape(pattern)
    else:
        regex = pattern if "E" in flags else _bre_to_re(pattern)
    try:
        compiled = re.compile(regex, re.IGNORECASE if "i" in flags else 0)
    except re.error as exc:
        ctx.error(f"grep: bad regex '{pattern}': {exc}")
        return 2
    sources: list[bytes] = []
    for path in files or ["-"]:
        try:
            sources.append(ctx.stdin if path == "-" else ctx.device.fs.read(path))
        except FsError as exc:
            ctx.error(f"grep: {path}: {exc}")
    matched = [
        line
        for data in sources
        for line in data.decode("utf-8", "replace").splitlines()
        if bool(compiled.search(line)) != ("v" in flags)
    ]
    if "c" in flags:
        ctx.print(str(len(matched)))
    elif "q" not in flags:
        for line in matched:
            ctx.print(line)
    return 0 if matched else 1


def head(ctx: Context, args: list[str]) -> int:
    """``head [-n N | -N | -c BYTES] [FILE...]``."""
    rest = list(args)
    lines, nbytes = 10, None
    try:
        while rest and rest[0].startswith("-") and len(rest[0]) > 1:
            option = rest.pop(0)
            if option in ("-n", "-c"):
                value = integer(rest.pop(0), lo=0, hi=None)
                lines, nbytes = (value, None) if option == "-n" else (lines, value)
            else:
                lines = integer(option.removeprefix("-n").lstrip("-"), lo=0, hi=None)
    except (BadNumber, IndexError):
        ctx.error(f"head: bad number in '{' '.join(args)}'")
        return 1
    status = 0
    data = bytearray()
    for path in rest or ["-"]:
        try:
            data += ctx.stdin if path == "-" else ctx.device.fs.read(path)
        except FsError as exc:
            ctx.error(f"head: {path}: {exc}")
            status = 1
    ctx.stdout += data[:nbytes] if nbytes is not None else b"".join(data.splitlines(keepends=True)[:lines])
    return status


def true(ctx: Context, args: list[str]) -> int:
    return 0


def false(ctx: Context, args: list[str]) -> int:
    return 1


def sleep(ctx: Context, args: list[str]) -> int:
    """``sleep N[smhd]...``: really waits (without the phone lock), at most ``MAX_SLEEP_S`` in all."""
    if not args:
        ctx.error("sleep: Need 1 argument")
        return 1
    total = 0.0
    for arg in args:
        value, unit = (arg[:-1], arg[-1]) if arg[-1:] in _SLEEP_UNITS else (arg, "s")
        try:
            total += number(value, lo=0, what="number") * _SLEEP_UNITS[unit]
        except BadNumber:
            ctx.error(f"sleep: Bad number '{arg}'")
            return 1
    if total > MAX_SLEEP_S:
        ctx.error(f"sleep: '{' '.join(args)}': SimPhone sleeps at most {MAX_SLEEP_S} seconds")
        return 1
    time.sleep(total)
    return 0


def pwd(ctx: Context, args: list[str]) -> int:
    ctx.print("/")
    return 0


def _no_files(args: list[str], allowed: str, operands_before_files: int = 0) -> bool:
    """True when the command reads stdin: no file operands (or ``-``)."""
    rest = _flags(args, allowed)[1]
    files = rest[operands_before_files:]
    return not files or "-" in files


#: When each command reads stdin (see ``commands.STDIN_READERS``).
STDIN_READERS: dict[str, Callable[[list[str]], bool]] = {
    "cat": lambda args: _no_files(args, "uvAetn"),
    "grep": lambda args: _no_files(args, "ivEFcqe", 1),
    "head": lambda args: not [a for a in args if not a.startswith("-") and not a.isdigit()] or "-" in args,
}

COMMANDS: dict[str, CommandFn] = {
    "cat": cat,
    "echo": echo,
    "false": false,
    "grep": grep,
    "head": head,
    "ls": ls,
    "mkdir": mkdir,
    "pwd": pwd,
    "rm": rm,
    "sleep": sleep,
    "touch": touch,
    "true": true,
}
