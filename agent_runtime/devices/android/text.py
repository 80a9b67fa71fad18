"""Shell command lines that type text on Android — and can never run it.

Two routes, as on every Android agent runtime:

* ``input text`` types printable ASCII (the virtual keyboard's charmap). Android's ``input``
  turns ``%s`` into a space, so spaces are sent as ``%s``; a literal ``%s`` in the text cannot be
  expressed in one ``input text`` argument at all, so the text is split after that ``%`` into
  several ``input text`` commands joined by ``&&`` (still one adb call).
* Everything else (accents, CJK, emoji, newlines, tabs) goes through ADB Keyboard's
  ``ADB_INPUT_B64`` broadcast: the text travels base64-encoded, so it contains only
  ``[A-Za-z0-9+/=]`` by construction.

Every argument is wrapped in single quotes by :func:`quote` (``'`` written as ``'"'"'``), which
the device's ``sh`` never expands: no ``$()``, backticks, ``;`` or globbing survive as syntax.
"""

from __future__ import annotations

import base64
import re

from agent_runtime.android_keys import DEL, MOVE_END

ADB_IME = "com.android.adbkeyboard/.AdbIME"
ADB_KEYBOARD_PACKAGE = "com.android.adbkeyboard"
ADB_KEYBOARD_HINT = (
    "install ADB Keyboard to type non-ASCII text: download ADBKeyboard.apk from "
    "https://github.com/senzhk/ADBKeyBoard/releases, run 'adb install ADBKeyboard.apk', then "
    f"'adb shell ime enable {ADB_IME}' (agent-runtime selects it only while typing, then restores "
    "your keyboard)"
)
#: An IME id as ``settings``/``ime`` print it; anything else is not passed back to the shell unquoted.
_IME_ID = re.compile(r"^[A-Za-z0-9_.]+/[A-Za-z0-9_.$]+$")


def quote(arg: str) -> str:
    """Always single-quote (``shlex.quote`` leaves "safe" words bare): ``'`` becomes ``'"'"'``.

    >>> print(quote("a b"), quote("it's"))
    'a b' 'it'"'"'s'
    """
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def input_text_ok(text: str) -> bool:
    """True when ``input text`` can type ``text``: printable ASCII only (no newline or tab)."""
    return all(" " <= ch <= "~" for ch in text)


def input_text_commands(text: str) -> list[str]:
    """``input text`` command lines that type ``text`` exactly (printable ASCII only).

    >>> input_text_commands("a b")
    ["input text 'a%sb'"]
    >>> input_text_commands("100%sure")
    ["input text '100%'", "input text 'sure'"]
    """
    if not input_text_ok(text):
        raise ValueError("input text takes printable ASCII only; use ADB Keyboard for other text")
    # After a '%', an 's' would be read as an escaped space: start a new command there.
    pieces = re.split(r"(?<=%)(?=s)", text)
    return [f"input text {quote(piece.replace(' ', '%s'))}" for piece in pieces if piece]


def b64_broadcast(text: str) -> str:
    """ADB Keyboard's broadcast that commits ``text`` (any Unicode) to the focused field."""
    payload = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return f"am broadcast -a ADB_INPUT_B64 --es msg {quote(payload)}"


CLEAR_BROADCAST = "am broadcast -a ADB_CLEAR_TEXT"


def clear_keys_command(length: int) -> str:
    """One ``input keyevent`` that moves to the end and deletes ``length`` characters."""
    return "input keyevent " + " ".join([str(MOVE_END), *[str(DEL)] * max(length, 0)])


def ime_id_or_none(text: str) -> str | None:
    """A well-formed IME id from device output, or None (``null``, empty, anything odd)."""
    text = text.strip()
    return text if _IME_ID.match(text) else None


def ime_set_command(ime_id: str) -> str:
    return f"ime set {quote(ime_id)}"


__all__ = [
    "ADB_IME",
    "ADB_KEYBOARD_HINT",
    "CLEAR_BROADCAST",
    "b64_broadcast",
    "clear_keys_command",
    "ime_id_or_none",
    "ime_set_command",
    "input_text_commands",
    "input_text_ok",
    "quote",
]
