"""Typing text on an X11 desktop without losing or changing characters.

Measured under Xvfb (US keymap): ``pyautogui.write`` drops non-ASCII and types ``<`` as ``>``;
``xdotool type`` types ASCII, accents, CJK and emoji correctly (with a few ms between keys — at 0 ms
it loses characters) except that it lowercases accented Latin capitals (``Ü`` → ``ü``), which
``xdotool key shift+U00DC`` types correctly. So, in order of preference:

1. ``xdotool`` (Debian package ``xdotool``): everything;
2. ``pyautogui``: ASCII it types correctly;
3. the clipboard (``xclip`` or ``xsel``) and Ctrl+V: anything, in apps that paste with Ctrl+V.

The text is always passed as one argv element (or on stdin), never through a shell, so model
output cannot run commands.
"""

from __future__ import annotations

import shutil
import string
import subprocess
from collections.abc import Callable, Mapping
from typing import Literal

from agent_runtime.errors import DeviceError

TypingMethod = Literal["auto", "xdotool", "pyautogui", "clipboard"]

#: What pyautogui types correctly under an X server's default US keymap (``<`` comes out as ``>``).
PYAUTOGUI_SAFE = frozenset(set(string.printable) - {"<", "\x0b", "\x0c", "\r"})

INSTALL_HINT = (
    "install xdotool (Debian/Ubuntu: apt-get install xdotool) to type any Unicode text; "
    "xclip or xsel enables clipboard paste as a fallback"
)


def xdotool_segments(text: str) -> list[list[str]]:
    """The xdotool argument lists that type ``text``: runs of ``type``, accented capitals as ``key``.

    >>> xdotool_segments("Über ok")
    [['key', 'shift+U00DC'], ['type', 'ber ok']]
    """
    segments: list[list[str]] = []
    run: list[str] = []
    for ch in text:
        if not ch.isascii() and ch.isupper() and len(ch.lower()) == 1:
            if run:
                segments.append(["type", "".join(run)])
                run = []
            segments.append(["key", f"shift+U{ord(ch):04X}"])
        else:
            run.append(ch)
    if run:
        segments.append(["type", "".join(run)])
    return segments


def clipboard_tool() -> list[str] | None:
    """The argv that puts stdin on the CLIPBOARD selection, or None when no tool is installed."""
    if shutil.which("xclip"):
        return ["xclip", "-selection", "clipboard", "-in"]
    if shutil.which("xsel"):
        return ["xsel", "--clipboard", "--input"]
    return None


def choose_method(text: str, preferred: TypingMethod) -> Literal["xdotool", "pyautogui", "clipboard"]:
    """Pick how to type ``text``; raise :class:`DeviceError` with install advice when nothing can."""
    have_xdotool = shutil.which("xdotool") is not None
    ascii_ok = all(ch in PYAUTOGUI_SAFE for ch in text)
    if preferred == "xdotool" or (preferred == "auto" and have_xdotool):
        if not have_xdotool:
            raise DeviceError(
                "typing method 'xdotool' was configured but xdotool is not installed", hint=INSTALL_HINT
            )
        return "xdotool"
    if preferred == "pyautogui" or (preferred == "auto" and ascii_ok):
        if not ascii_ok:
            bad = sorted({ch for ch in text if ch not in PYAUTOGUI_SAFE})
            raise DeviceError(
                f"pyautogui cannot type {''.join(bad)!r} correctly",
                hint="use typing='auto' (xdotool or the clipboard) for this text; " + INSTALL_HINT,
            )
        return "pyautogui"
    if clipboard_tool() is None:
        raise DeviceError("no way to type non-ASCII text on this desktop", hint=INSTALL_HINT)
    return "clipboard"


class XTyper:
    """Types text on one X display. ``hotkey`` presses a key combination (pyautogui's)."""

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        method: TypingMethod = "auto",
        delay_ms: int = 5,
        write: Callable[[str], None],
        hotkey: Callable[..., None],
        timeout_s: float = 60.0,
    ) -> None:
        self._env = dict(env)
        self._method = method
        self._delay_ms = delay_ms
        self._write = write
        self._hotkey = hotkey
        self._timeout_s = timeout_s

    def type(self, text: str) -> str:
        """Type ``text`` into the focused window; returns the method used."""
        if not text:
            return "none"
        method = choose_method(text, self._method)
        if method == "xdotool":
            for args in xdotool_segments(text):
                self._run(["xdotool", args[0], "--delay", str(self._delay_ms), "--", *args[1:]])
        elif method == "pyautogui":
            self._write(text)
        else:
            tool = clipboard_tool()
            if tool is None:
                raise DeviceError("no clipboard tool found", hint=INSTALL_HINT)
            # xclip/xsel fork a child that owns the selection until another app takes it: it must
            # not inherit our pipes, or run() would wait for it forever.
            self._run(tool, stdin=text.encode("utf-8"), capture=False)
            self._hotkey("ctrl", "v")
        return method

    def _run(self, argv: list[str], stdin: bytes | None = None, *, capture: bool = True) -> None:
        sink = subprocess.PIPE if capture else subprocess.DEVNULL
        try:
            proc = subprocess.run(
                argv,
                input=stdin,
                env=self._env,
                stdout=sink,
                stderr=sink,
                timeout=self._timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DeviceError(f"{argv[0]} failed: {exc}", hint=INSTALL_HINT) from None
        if proc.returncode != 0:
            err = (proc.stderr or b"").decode("utf-8", "replace").strip()
            raise DeviceError(
                f"{argv[0]} exited with {proc.returncode}: {err}", display=self._env.get("DISPLAY")
            )


__all__ = ["PYAUTOGUI_SAFE", "TypingMethod", "XTyper", "choose_method", "clipboard_tool", "xdotool_segments"]
