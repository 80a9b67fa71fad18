"""Typing text on an X11 desktop without losing or changing characters.

Measured under Xvfb (US keymap): ``pyautogui.write`` drops non-ASCII and types ``<`` as ``>``;
``xdotool type`` types ASCII, accents, CJK and emoji correctly (with a few ms between keys — at 0 ms
it loses characters) except that it lowercases accented Latin capitals (``Ü`` → ``ü``), which
``xdotool key shift+U00DC`` types correctly. So, in order of preference:

1. ``xdotool`` (Debian package ``xdotool``): everything;
2. ``pyautogui``: ASCII it types correctly;
3. the clipboard (``xclip`` or ``xsel``) and Ctrl+V: anything, in apps that paste with Ctrl+V.

``xdotool`` types a character that is not in the keymap by binding it to a spare keycode, pressing
that key and unbinding it at once. An app that reads the key event after the unbinding (a busy
machine, a stalled app) looks it up in the restored keymap and loses the character: measured with
the app stopped while typing, every non-ASCII character was lost; on 2 loaded cores, 1 string in 6
lost one. :class:`PinnedKeys` therefore binds a text's characters before xdotool runs and keeps them
bound until the device closes, so xdotool finds them in the keymap and never remaps.

The text is always passed as one argv element (or on stdin), never through a shell, so model
output cannot run commands.
"""

from __future__ import annotations

import shutil
import string
import subprocess
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Literal

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


def keysym(ch: str) -> int:
    """The X keysym of a non-ASCII character: Latin-1 ones are the code point, the rest 0x01000000 + it.

    >>> hex(keysym("é")), hex(keysym("世"))
    ('0xe9', '0x1004e16')
    """
    code = ord(ch)
    return code if 0xA0 <= code <= 0xFF else 0x01000000 + code


class PinnedKeys:
    """Keeps the non-ASCII characters being typed bound to unused keycodes of one X display.

    ``pin(text)`` binds the characters of ``text`` not yet bound (all levels of the keycode, so
    Shift cannot change them), least recently used ones making room; characters beyond the spare
    keycodes are left to xdotool's own remapping. The first unused keycode is never taken: it is
    the one xdotool uses as its scratch key. Rebinding happens at the start of a later ``type``,
    long after the earlier text's key events were read. ``release()`` restores the keymap.
    """

    def __init__(self, display: Any) -> None:
        self._display = display
        info = display.display.info
        first, last = info.min_keycode, info.max_keycode
        mapping = display.get_keyboard_mapping(first, last - first + 1)
        self._width = len(mapping[0]) if mapping else 1
        unused = [first + i for i, syms in enumerate(mapping) if not any(syms)]
        self._spare = unused[1:]
        self._bound: OrderedDict[str, int] = OrderedDict()

    @property
    def capacity(self) -> int:
        """How many characters can be bound at once."""
        return len(self._spare) + len(self._bound)

    def bound(self) -> dict[str, int]:
        """The characters bound now, with their keycodes."""
        return dict(self._bound)

    def pin(self, text: str) -> None:
        """Bind the non-ASCII characters of ``text`` (one X round trip when anything changed)."""
        needed = list(dict.fromkeys(ch for ch in text if not ch.isascii()))
        wanted = set(needed)
        changed = False
        for ch in needed:
            if ch in self._bound:
                self._bound.move_to_end(ch)
                continue
            if self._spare:
                code = self._spare.pop()
            else:
                victim = next((c for c in self._bound if c not in wanted), None)
                if victim is None:
                    break  # more distinct characters than spare keycodes: xdotool remaps the rest
                code = self._bound.pop(victim)
            self._display.change_keyboard_mapping(code, [(keysym(ch),) * self._width])
            self._bound[ch] = code
            changed = True
        if changed:
            self._display.sync()

    def release(self) -> None:
        """Unbind every pinned character."""
        for code in self._bound.values():
            self._display.change_keyboard_mapping(code, [(0,) * self._width])
            self._spare.append(code)
        if self._bound:
            self._bound.clear()
            self._display.sync()


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
        pins: PinnedKeys | None = None,
    ) -> None:
        self._env = dict(env)
        self._pins = pins
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
            if self._pins is not None:
                self._pins.pin(text)
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

    def close(self) -> None:
        """Unbind the pinned characters (the keymap as it was)."""
        if self._pins is not None:
            self._pins.release()

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


__all__ = [
    "PYAUTOGUI_SAFE",
    "PinnedKeys",
    "TypingMethod",
    "XTyper",
    "choose_method",
    "clipboard_tool",
    "keysym",
    "xdotool_segments",
]
