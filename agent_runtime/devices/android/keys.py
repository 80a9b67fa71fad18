"""Key names a model writes (``key {text: "back"}``) → Android key codes for ``input keyevent``."""

from __future__ import annotations

import re

#: Friendly names → ``KeyEvent.KEYCODE_*`` values.
KEYCODES: dict[str, int] = {
    "home": 3,
    "back": 4,
    "call": 5,
    "endcall": 6,
    "up": 19,
    "down": 20,
    "left": 21,
    "right": 22,
    "center": 23,
    "volume_up": 24,
    "volume_down": 25,
    "power": 26,
    "camera": 27,
    "tab": 61,
    "space": 62,
    "enter": 66,
    "return": 66,
    "delete": 67,
    "del": 67,
    "backspace": 67,
    "menu": 82,
    "search": 84,
    "play_pause": 85,
    "page_up": 92,
    "page_down": 93,
    "escape": 111,
    "esc": 111,
    "forward_del": 112,
    "move_home": 122,
    "move_end": 123,
    "volume_mute": 164,
    "app_switch": 187,
    "recent": 187,
    "recents": 187,
    "recent_apps": 187,
    "sleep": 223,
    "wakeup": 224,
}
_KEYCODE_NAME = re.compile(r"^KEYCODE_[A-Z0-9_]+$")


def keycode_for(name: str) -> int | str | None:
    """A code (or a literal ``KEYCODE_*`` name ``input keyevent`` accepts), or None if unknown.

    >>> keycode_for("Back"), keycode_for("volume up"), keycode_for("KEYCODE_CAMERA"), keycode_for("66")
    (4, 24, 'KEYCODE_CAMERA', 66)
    >>> keycode_for("rm -rf /") is None
    True
    """
    text = name.strip()
    if text.isdigit() and 0 < int(text) < 400:
        return int(text)
    if _KEYCODE_NAME.match(text.upper()):
        return text.upper()
    key = re.sub(r"[\s-]+", "_", text.lower())
    if key.startswith("keycode_"):
        key = key.removeprefix("keycode_")
    if key in KEYCODES:
        return KEYCODES[key]
    if len(key) == 1 and key.isalnum():
        return f"KEYCODE_{key.upper()}"
    return None


__all__ = ["KEYCODES", "keycode_for"]
