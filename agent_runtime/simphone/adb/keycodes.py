"""Android key codes by name.

``input keyevent`` accepts a number, a name (``BACK``) or ``KEYCODE_`` + name; the code goes to
:meth:`SimPhone.key`, which acts on system keys and typing keys and ignores the rest, like an app
that does not handle a key.
"""

from __future__ import annotations

import string

# fmt: off
KEYCODES: dict[str, int] = {
    "UNKNOWN": 0, "SOFT_LEFT": 1, "SOFT_RIGHT": 2, "HOME": 3, "BACK": 4, "CALL": 5, "ENDCALL": 6,
    "STAR": 17, "POUND": 18, "DPAD_UP": 19, "DPAD_DOWN": 20, "DPAD_LEFT": 21, "DPAD_RIGHT": 22,
    "DPAD_CENTER": 23, "VOLUME_UP": 24, "VOLUME_DOWN": 25, "POWER": 26, "CAMERA": 27, "CLEAR": 28,
    "COMMA": 55, "PERIOD": 56, "ALT_LEFT": 57, "ALT_RIGHT": 58, "SHIFT_LEFT": 59, "SHIFT_RIGHT": 60,
    "TAB": 61, "SPACE": 62, "SYM": 63, "EXPLORER": 64, "ENVELOPE": 65, "ENTER": 66, "DEL": 67,
    "GRAVE": 68, "MINUS": 69, "EQUALS": 70, "LEFT_BRACKET": 71, "RIGHT_BRACKET": 72, "BACKSLASH": 73,
    "SEMICOLON": 74, "APOSTROPHE": 75, "SLASH": 76, "AT": 77, "NUM": 78, "HEADSETHOOK": 79, "FOCUS": 80,
    "PLUS": 81, "MENU": 82, "NOTIFICATION": 83, "SEARCH": 84, "MEDIA_PLAY_PAUSE": 85, "MEDIA_STOP": 86,
    "MEDIA_NEXT": 87, "MEDIA_PREVIOUS": 88, "PAGE_UP": 92, "PAGE_DOWN": 93, "ESCAPE": 111,
    "FORWARD_DEL": 112, "CTRL_LEFT": 113, "CTRL_RIGHT": 114, "MOVE_HOME": 122, "MOVE_END": 123,
    "VOLUME_MUTE": 164, "APP_SWITCH": 187, "BRIGHTNESS_DOWN": 220, "BRIGHTNESS_UP": 221,
    "SLEEP": 223, "WAKEUP": 224, "ALL_APPS": 284,
}
# fmt: on
KEYCODES.update({str(d): 7 + d for d in range(10)})
KEYCODES.update({c: 29 + i for i, c in enumerate(string.ascii_uppercase)})


def keycode(name: str) -> int | None:
    """``"4"``, ``"BACK"`` or ``"KEYCODE_BACK"`` -> 4; None for an unknown name."""
    text = name.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    key = text.upper().removeprefix("KEYCODE_")
    return KEYCODES.get(key)
