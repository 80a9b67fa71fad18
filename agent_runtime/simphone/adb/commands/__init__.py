"""The shell commands SimPhone understands, by name (one module per command family)."""

from __future__ import annotations

from agent_runtime.simphone.adb.commands import activity, files, ime, input, screen, system
from agent_runtime.simphone.adb.context import CommandFn

COMMANDS: dict[str, CommandFn] = {
    **activity.COMMANDS,
    **files.COMMANDS,
    **ime.COMMANDS,
    **input.COMMANDS,
    **screen.COMMANDS,
    **system.COMMANDS,
}

#: Commands that run without the phone lock (they wait, and touch no state).
UNLOCKED = frozenset(("sleep",))
