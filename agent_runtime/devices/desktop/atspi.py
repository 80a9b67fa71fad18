"""The optional accessibility tree of an X11 desktop, read through AT-SPI.

pyatspi (Debian ``python3-pyatspi``) exists only for the system Python, not in a virtualenv,
so the tree is read by a small stand-alone script (:mod:`desktop_atspi_dump`) run with that
Python; it prints uiautomator-style XML (``<hierarchy><node class text bounds …>``) in screenshot
pixels, the format the rest of agent-runtime already parses. One dump costs ~0.2 s.

AT-SPI needs a D-Bus session bus; without one pyatspi may try to auto-launch a bus per call, so
no dump is attempted. A dump that fails or times out disables the tree for the rest of the
session (the reason is kept): a bus does not appear mid-run, and every observation would
otherwise pay the timeout. Observations then carry ``ui_xml=None`` and a ``ui_error`` that says why.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

UNAVAILABLE = "no accessibility tree (AT-SPI not available)"
SCRIPT = Path(__file__).with_name("atspi_dump.py")


class AtspiTree:
    """Runs the dump script with ``python`` (availability checked once, on first use)."""

    def __init__(self, python: str, env: Mapping[str, str], *, timeout_s: float = 5.0) -> None:
        self._python = python
        self._env = dict(env)
        self._timeout_s = timeout_s
        self._disabled: str | None = None
        self._checked = False

    def _check(self) -> None:
        self._checked = True
        if not (self._env.get("DBUS_SESSION_BUS_ADDRESS") or self._env.get("AT_SPI_BUS_ADDRESS")):
            self._disabled = f"{UNAVAILABLE}: no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset)"
            return
        try:
            probe = subprocess.run(
                [self._python, "-c", "import pyatspi"], env=self._env, capture_output=True, timeout=10
            )
            ok = probe.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if not ok:
            self._disabled = (
                f"{UNAVAILABLE}: {self._python} cannot import pyatspi (apt-get install python3-pyatspi)"
            )

    @property
    def available(self) -> bool:
        if not self._checked:
            self._check()
        return self._disabled is None

    def dump(self, monitor: Mapping[str, Any], scale: tuple[float, float]) -> tuple[str | None, str | None]:
        """``(xml, None)`` or ``(None, why not)``; never raises — the screenshot still counts."""
        if not self.available:
            return None, self._disabled
        argv = [
            self._python,
            str(SCRIPT),
            *(str(int(monitor[k])) for k in ("left", "top", "width", "height")),
            repr(float(scale[0])),
            repr(float(scale[1])),
        ]
        try:
            proc = subprocess.run(argv, env=self._env, capture_output=True, timeout=self._timeout_s)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self._disabled = f"{UNAVAILABLE}: dump failed ({exc}); disabled for this session"
            return None, self._disabled
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            self._disabled = f"{UNAVAILABLE}: dump failed ({err[-1] if err else proc.returncode}); disabled"
            return None, self._disabled
        xml = proc.stdout.decode("utf-8")
        if "<node" not in xml:
            return None, "no accessibility tree: AT-SPI lists no accessible windows (Tk apps expose none)"
        return xml, None


__all__ = ["UNAVAILABLE", "AtspiTree"]
