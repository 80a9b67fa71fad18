"""``ime`` and ADB Keyboard, the IME agents use to type any Unicode text.

ADB Keyboard (``com.android.adbkeyboard/.AdbIME``) is installed by default but, as on a real
phone, acts only after ``ime enable`` + ``ime set`` made it the current IME. Then its broadcast
receiver commits text to the focused field: ``ADB_INPUT_TEXT --es msg TEXT``, ``ADB_INPUT_B64
--es msg BASE64(UTF-8)``, ``ADB_INPUT_CHARS --eia chars CODEPOINTS``, ``ADB_INPUT_CODE --ei code
KEY``, ``ADB_EDITOR_CODE --ei code N`` and ``ADB_CLEAR_TEXT``. The text goes to the phone as data;
it is never parsed again.
"""

from __future__ import annotations

import base64
import binascii

from agent_runtime.android_keys import ENTER
from agent_runtime.simphone.adb.commands.intent import Intent
from agent_runtime.simphone.adb.context import CommandFn, Context

_USER = "for user #0"


def deliver_broadcast(ctx: Context, intent: Intent) -> bool:
    """Hand a broadcast to ADB Keyboard if it is the current IME and the action is one of its own."""
    if not ctx.device.ime.adb_keyboard_active or not (intent.action or "").startswith("ADB_"):
        return False
    phone = ctx.device.phone
    action = intent.action
    if action == "ADB_INPUT_TEXT":
        text = intent.extras.get("msg")
        if isinstance(text, str):
            phone.input_text(text)
    elif action == "ADB_INPUT_B64":
        encoded = intent.extras.get("msg")
        try:
            text = base64.b64decode(str(encoded), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return True  # the receiver's decode throws; nothing is typed
        phone.input_text(text)
    elif action == "ADB_INPUT_CHARS":
        chars = intent.extras.get("chars")
        if isinstance(chars, list):
            phone.input_text("".join(chr(int(c)) for c in chars if str(c).strip().isdigit()))
    elif action == "ADB_INPUT_CODE":
        code = intent.extras.get("code")
        if isinstance(code, int):
            phone.key(code)
    elif action == "ADB_EDITOR_CODE":
        phone.key(ENTER)
    elif action == "ADB_CLEAR_TEXT":
        phone.clear_text()
    return True


def _list(ctx: Context, flags: list[str]) -> int:
    ime = ctx.device.ime
    ids = list(ime.installed) if "-a" in flags else ime.enabled
    for ime_id in ids:
        if "-s" in flags:
            ctx.print(ime_id)
            continue
        package, _, cls = ime_id.partition("/")
        ctx.print(f"{ime_id}:\n  mId={ime_id} mSettingsActivityName=null\n  Service:\n    ServiceInfo:")
        ctx.print(f"      name={package + cls if cls.startswith('.') else cls}\n      packageName={package}")
    return 0


def ime(ctx: Context, args: list[str]) -> int:
    state = ctx.device.ime
    if not args:
        ctx.print("ime <command>:\n  list [-a] [-s]\n  enable ID\n  disable ID\n  set ID\n  reset")
        return 0
    sub, rest = args[0], args[1:]
    if sub == "list":
        return _list(ctx, rest)
    if sub == "reset":
        state.reset()
        ctx.print(f"Reset current and enabled IMEs {_USER}\n  Selected: {state.selected}")
        return 0
    ids = [a for a in rest if not a.startswith("-")]
    if sub not in ("enable", "disable", "set") or not ids:
        ctx.error(f"Unknown command: {' '.join(args)}")
        return 255
    ime_id = ids[0]
    if ime_id not in state.installed:
        verb = {"enable": "enabled", "disable": "disabled", "set": "selected"}[sub]
        ctx.error(f"Unknown input method {ime_id} cannot be {verb} {_USER}")
        return 255
    if sub == "enable":
        changed = state.enable(ime_id)
        ctx.print(f"Input method {ime_id}: {'now' if changed else 'already'} enabled {_USER}")
    elif sub == "disable":
        changed = state.disable(ime_id)
        ctx.print(f"Input method {ime_id}: {'now' if changed else 'already'} disabled {_USER}")
    elif state.select(ime_id):
        ctx.print(f"Input method {ime_id} selected {_USER}")
    else:
        ctx.error(f"Unknown input method {ime_id} cannot be selected {_USER}")
        return 255
    return 0


COMMANDS: dict[str, CommandFn] = {"ime": ime}
