"""Split an adb shell command line the way ``/system/bin/sh`` would — without ever running a shell.

Two passes keep quoting exactly POSIX: :func:`parse` finds the *unquoted* operators
(``;`` ``&&`` ``||`` ``|`` ``&`` and redirections ``>`` ``>>`` ``<`` ``N>`` ``N>&M``) and keeps the
text between them raw; :func:`words` later turns each raw piece into arguments with
:func:`shlex.split` (POSIX mode), after replacing an unquoted ``$?`` with the last exit status
(adbutils' ``shell2`` appends ``; echo X4EXIT:$?``). Nothing else is expanded: ``$(…)``, backticks
and ``$VAR`` stay literal text, so typed text can never become a command.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

_OPERATORS = ("&&", "||", ">>", ">&", ";", "|", "&", ">", "<")


class ShellSyntaxError(Exception):
    """The line is not valid ``sh`` (unclosed quote, misplaced operator); nothing of it runs."""


@dataclass(frozen=True)
class Redirect:
    """``fd op target``: ``1 > path``, ``2 >> path``, ``0 < path`` or ``2 >& 1``."""

    fd: int
    op: str
    target: str


@dataclass
class Command:
    """One simple command: raw text pieces, each redirection operator followed by the text after it."""

    pieces: list[str | tuple[int, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not any(isinstance(p, tuple) or p.strip() for p in self.pieces)


@dataclass
class Pipeline:
    """Commands joined by ``|``, run when ``connector`` (the operator before it) allows."""

    connector: str | None
    commands: list[Command]


def _scan(line: str) -> list[str | tuple[str, int]]:
    """Raw text runs and ``(operator, fd)`` items; quotes and backslashes are kept for shlex."""
    out: list[str | tuple[str, int]] = []
    buf: list[str] = []
    i, n = 0, len(line)
    quote: str | None = None
    while i < n:
        c = line[i]
        if quote == "'":
            buf.append(c)
            quote = None if c == "'" else quote
        elif quote == '"':
            buf.append(c)
            if c == "\\" and i + 1 < n:
                buf.append(line[i + 1])
                i += 1
            elif c == '"':
                quote = None
        elif c == "\\":
            buf.append(line[i : i + 2])
            i += 1
        elif c in "'\"":
            quote = c
            buf.append(c)
        elif c in ";|&<>":
            op = next(o for o in _OPERATORS if line.startswith(o, i))
            fd = -1
            if c in "<>" and buf and buf[-1].isdigit() and (len(buf) == 1 or buf[-2] in " \t"):
                fd = int(buf.pop())
            out.append("".join(buf))
            buf = []
            out.append((op, fd))
            i += len(op)
            continue
        else:
            buf.append(c)
        i += 1
    if quote is not None:
        raise ShellSyntaxError("no closing quote")
    out.append("".join(buf))
    return out


def parse(line: str) -> list[Pipeline]:
    """Parse a command line into pipelines. Raises :class:`ShellSyntaxError` for invalid lines."""
    pipelines: list[Pipeline] = []
    connector: str | None = None
    commands: list[Command] = []
    current = Command()
    for item in _scan(line.replace("\r", "")):
        if isinstance(item, str):
            current.pieces.append(item)
            continue
        op, fd = item
        if op in ("<", ">", ">>", ">&"):
            current.pieces.append((fd if fd >= 0 else (0 if op == "<" else 1), op))
            continue
        if current.empty:
            raise ShellSyntaxError(f"'{op}' unexpected")
        commands.append(current)
        current = Command()
        if op != "|":
            pipelines.append(Pipeline(connector, commands))
            connector, commands = op, []
    if current.empty:
        if commands or (connector is not None and connector not in (";", "&")):
            raise ShellSyntaxError("unexpected end of line")
    else:
        commands.append(current)
    if commands:
        pipelines.append(Pipeline(connector, commands))
    for pipeline in pipelines:
        for command in pipeline.commands:
            _check_redirects(command)
    return pipelines


def _check_redirects(command: Command) -> None:
    """Every redirection operator needs a word after it (``echo >`` is a syntax error)."""
    pieces = command.pieces
    for index, piece in enumerate(pieces):
        if isinstance(piece, tuple):
            following = pieces[index + 1] if index + 1 < len(pieces) else ""
            if not isinstance(following, str) or not following.strip():
                raise ShellSyntaxError(f"'{piece[1]}' unexpected")


def expand_status(raw: str, status: int) -> str:
    """Replace ``$?`` outside single quotes (and not backslash-escaped) with ``status``."""
    out: list[str] = []
    i, n = 0, len(raw)
    quote: str | None = None
    while i < n:
        c = raw[i]
        if quote == "'":
            quote = None if c == "'" else quote
        elif c == "\\" and i + 1 < n:
            out.append(raw[i : i + 2])
            i += 2
            continue
        elif c in "'\"":
            quote = None if quote == c else (quote or c)
        elif c == "$" and raw.startswith("$?", i):
            out.append(str(status))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def words(command: Command, status: int) -> tuple[list[str], list[Redirect]]:
    """The command's arguments and redirections; ``$?`` expands to ``status``."""
    args: list[str] = []
    redirects: list[Redirect] = []
    pending: tuple[int, str] | None = None
    for piece in command.pieces:
        if isinstance(piece, tuple):
            if pending is not None:
                raise ShellSyntaxError(f"'{pending[1]}' unexpected")
            pending = piece
            continue
        try:
            split = shlex.split(expand_status(piece, status), posix=True)
        except ValueError as exc:
            raise ShellSyntaxError(str(exc)) from None
        if pending is not None:
            if not split:
                raise ShellSyntaxError(f"'{pending[1]}' unexpected")
            redirects.append(Redirect(pending[0], pending[1], split.pop(0)))
            pending = None
        args.extend(split)
    if pending is not None:
        raise ShellSyntaxError(f"'{pending[1]}' unexpected")
    return args, redirects
