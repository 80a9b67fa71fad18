"""The shell commands SimPhone understands, by name (one module per command family)."""

from __future__ import annotations

from collections.abc import Callable

from agent_runtime.simphone.adb.commands import (
    activity,
    files,
    ime,
    input,
    process,
    screen,
    services,
    system,
)
from agent_runtime.simphone.adb.context import CommandFn

COMMANDS: dict[str, CommandFn] = {
    **activity.COMMANDS,
    **files.COMMANDS,
    **ime.COMMANDS,
    **input.COMMANDS,
    **process.COMMANDS,
    **screen.COMMANDS,
    **services.COMMANDS,
    **system.COMMANDS,
}

#: Commands that run without the phone lock: they wait (``sleep``, a swipe's duration, a nested
#: shell's commands) and take the lock themselves for what they change.
UNLOCKED = frozenset(("cmd", "input", "sh", "sleep"))

#: Commands that read stdin, and when (``cat`` with no file): the shell fetches the client's stdin first.
STDIN_READERS: dict[str, Callable[[list[str]], bool]] = {
    **files.STDIN_READERS,
    "sh": lambda args: "-c" not in args and not [a for a in args if not a.startswith("-")],
}
