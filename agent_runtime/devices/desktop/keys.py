"""Key names as models write them → pyautogui key names.

Models write ``Control``, ``Return``, ``cmd``, ``ArrowUp``, ``PageDown`` or ``ctrl+A``; pyautogui
knows ``ctrl``, ``enter``, ``win``, ``up``, ``pagedown`` and lowercase letters (an uppercase ``A``
would add Shift to the combination, which ``ctrl+A`` does not mean).
"""

from __future__ import annotations

from typing import Any

ALIASES = {
    "control": "ctrl",
    "ctl": "ctrl",
    "lctrl": "ctrlleft",
    "rctrl": "ctrlright",
    "return": "enter",
    "escape": "esc",
    "cmd": "win",
    "command": "win",
    "super": "win",
    "meta": "win",
    "windows": "win",
    "option": "alt",
    "arrowup": "up",
    "arrowdown": "down",
    "arrowleft": "left",
    "arrowright": "right",
    "page_up": "pageup",
    "page_down": "pagedown",
    "pgdown": "pagedown",
    "back_space": "backspace",
    "bksp": "backspace",
    "del": "delete",
    "ins": "insert",
    "spacebar": "space",
    "plus": "+",
    "minus": "-",
    "caps_lock": "capslock",
    "menu": "apps",
}


def normalise_key(name: str) -> str:
    """One key name in pyautogui's vocabulary (not checked).

    >>> [normalise_key(k) for k in ("Control", "A", "ArrowUp", "Page_Down", "F5", " ")]
    ['ctrl', 'a', 'up', 'pagedown', 'f5', ' ']
    """
    if len(name) == 1:
        return name.lower() if name.isascii() and name.isalpha() else name
    key = name.strip().lower().replace("-", "_")
    return ALIASES.get(key, key).replace("_", "")


def normalise_keys(keys: list[str], pyautogui: Any) -> tuple[list[str], list[str]]:
    """Normalised names and the ones pyautogui cannot press on this display (``bad``).

    A single ``"ctrl+c"`` element is split into its parts.
    """
    parts: list[str] = []
    for key in keys:
        if len(key) > 1 and "+" in key:
            parts.extend(p for p in key.split("+") if p)
        else:
            parts.append(key)
    names = [normalise_key(k) for k in parts]
    known = set(pyautogui.KEY_NAMES)
    mapping = getattr(getattr(pyautogui, "_pyautogui_x11", None), "keyboardMapping", None)
    bad = [
        orig
        for orig, name in zip(parts, names, strict=True)
        if name not in known or (mapping is not None and mapping.get(name) is None)
    ]
    return names, bad


__all__ = ["ALIASES", "normalise_key", "normalise_keys"]
