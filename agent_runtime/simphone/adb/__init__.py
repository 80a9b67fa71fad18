"""SimPhone's adb endpoint: serve virtual phones to unmodified adb clients (adbutils, ``adb``).

``AdbServer(phones).start()`` listens on the adb host protocol; each phone gets an
:class:`AndroidShell` that runs the shell commands clients send (``input``, ``screencap``,
``uiautomator dump``, ``am``, ``dumpsys``, …) without ever invoking a real shell.
"""

from __future__ import annotations

from agent_runtime.simphone.adb.context import ShellResult
from agent_runtime.simphone.adb.server import FEATURES, AdbServer
from agent_runtime.simphone.adb.shell import AndroidShell

__all__ = ["FEATURES", "AdbServer", "AndroidShell", "ShellResult"]
