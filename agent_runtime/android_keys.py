"""Android key codes: the one table SimPhone and the Android driver both read.

It lives at the top of the package, not in :mod:`agent_runtime.simphone` or
:mod:`agent_runtime.devices`, so either may import it without importing the other.

Two ways to name a key:

* :func:`keycode` — what ``adb shell input keyevent`` accepts: a number, an Android name
  (``BACK``) or ``KEYCODE_`` + name. SimPhone's adb shell parses with it, so it refuses what a
  real phone refuses (``input keyevent recent`` is an error there too).
* :func:`key_for` — what a model writes in a ``key`` action (``"Back"``, ``"volume up"``,
  ``"recent apps"``, ``"a"``): :func:`keycode`'s names in any case, words joined by spaces or
  dashes, and the friendlier :data:`ALIASES`.
"""

from __future__ import annotations

import re
import string

# fmt: off
#: Android's ``KeyEvent.KEYCODE_*`` names (without the prefix) → codes, the ones agents use.
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

#: Names models write that Android spells differently.
ALIASES: dict[str, int] = {
    "UP": KEYCODES["DPAD_UP"],
    "DOWN": KEYCODES["DPAD_DOWN"],
    "LEFT": KEYCODES["DPAD_LEFT"],
    "RIGHT": KEYCODES["DPAD_RIGHT"],
    "CENTER": KEYCODES["DPAD_CENTER"],
    "RETURN": KEYCODES["ENTER"],
    "DELETE": KEYCODES["DEL"],
    "BACKSPACE": KEYCODES["DEL"],
    "ESC": KEYCODES["ESCAPE"],
    "PLAY_PAUSE": KEYCODES["MEDIA_PLAY_PAUSE"],
    "RECENT": KEYCODES["APP_SWITCH"],
    "RECENTS": KEYCODES["APP_SWITCH"],
    "RECENT_APPS": KEYCODES["APP_SWITCH"],
}

HOME = KEYCODES["HOME"]
BACK = KEYCODES["BACK"]
MENU = KEYCODES["MENU"]
ENTER = KEYCODES["ENTER"]
DEL = KEYCODES["DEL"]
MOVE_END = KEYCODES["MOVE_END"]

#: The ``system_button`` action's buttons → their keys.
BUTTONS: dict[str, int] = {"Back": BACK, "Home": HOME, "Menu": MENU, "Enter": ENTER}

#: The character each typing key types without a modifier (Android's virtual keyboard map).
CHARACTERS: dict[int, str] = {
    **{KEYCODES[c]: c.lower() for c in string.digits + string.ascii_uppercase},
    **{
        KEYCODES[name]: char
        for name, char in {
            "COMMA": ",",
            "PERIOD": ".",
            "SPACE": " ",
            "MINUS": "-",
            "EQUALS": "=",
            "SLASH": "/",
            "AT": "@",
            "PLUS": "+",
        }.items()
    },
}

#: ``key_for``'s bound on numeric names: Android's codes stay below it, so "999" is a mistake.
_MAX_CODE = 400


def keycode(name: str) -> int | None:
    """``"4"``, ``"BACK"`` or ``"KEYCODE_BACK"`` -> 4, as ``input keyevent`` reads it; None if unknown.

    >>> keycode("4"), keycode("BACK"), keycode("keycode_back"), keycode("recent")
    (4, 4, 4, None)
    """
    text = name.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    return KEYCODES.get(text.upper().removeprefix("KEYCODE_"))


def key_for(name: str) -> int | None:
    """The code of a key name a model wrote (module docstring), or None if it names no key.

    >>> key_for("Back"), key_for("volume up"), key_for("app-switch"), key_for("KEYCODE_CAMERA")
    (4, 24, 187, 27)
    >>> key_for("a"), key_for("66"), key_for("999"), key_for("rm -rf /")
    (29, 66, None, None)
    """
    text = name.strip()
    if text.isdigit():
        return int(text) if 0 < int(text) < _MAX_CODE else None
    key = re.sub(r"[\s-]+", "_", text.upper()).removeprefix("KEYCODE_")
    return ALIASES.get(key, KEYCODES.get(key))


__all__ = [
    "ALIASES",
    "BACK",
    "BUTTONS",
    "CHARACTERS",
    "DEL",
    "ENTER",
    "HOME",
    "KEYCODES",
    "MENU",
    "MOVE_END",
    "key_for",
    "keycode",
]
