"""Typing on Android: ``input text`` for ASCII, ADB Keyboard for everything else.

The command lines come from :mod:`.text` (quoting, ``%s`` handling, base64). This
module decides the route, switches to ADB Keyboard only for the text that needs it and switches
back to the user's keyboard in the same adb call that types, so a failure cannot leave the phone
on ADB Keyboard.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from agent_runtime.actions import ActionResult
from agent_runtime.android_keys import ENTER
from agent_runtime.devices.android import text as tx
from agent_runtime.devices.android.adb import AdbLink
from agent_runtime.errors import DeviceError
from agent_runtime.observation import parse_ui_xml

#: How many characters ``clear`` deletes when the UI tree cannot say (DEL in an empty field is harmless).
UNKNOWN_LENGTH = 64


def run_input(link: AdbLink, command: str) -> ActionResult:
    """Run a command line that changes the device; ``input``/``am`` report failures in their output."""
    out = link.shell(command, idempotent=False)
    if "Exception" in out or "Error:" in out:
        return ActionResult.failure(f"{command.split(' &&')[0]} failed: {out.strip()[-300:]}")
    return ActionResult.success(command)


class AndroidTyper:
    """Types into the focused field of one device."""

    def __init__(
        self,
        link: AdbLink,
        *,
        ui_dump: Callable[[], tuple[str | None, str | None]],
        ime_switch_timeout_s: float = 3.0,
    ) -> None:
        self._link = link
        self._ui_dump = ui_dump
        self._ime_timeout_s = ime_switch_timeout_s

    def type(self, text: str, *, clear: bool, enter: bool) -> ActionResult:
        if not tx.input_text_ok(text):
            return self._with_adb_keyboard(text, clear=clear, enter=enter)
        parts = [tx.clear_keys_command(self._focused_text_length())] if clear else []
        parts += tx.input_text_commands(text)
        if enter:
            parts.append(f"input keyevent {ENTER}")
        if not parts:
            return ActionResult.success("nothing to type", method="input text")
        result = run_input(self._link, " && ".join(parts))
        if not result.ok:
            return result
        return ActionResult.success(f"typed {len(text)} characters", method="input text")

    def _focused_text_length(self) -> int:
        xml, _ = self._ui_dump()
        if not xml:
            return UNKNOWN_LENGTH
        return next((len(el.text) for el in parse_ui_xml(xml) if el.has("focused") and el.text), 0)

    def _with_adb_keyboard(self, text: str, *, clear: bool, enter: bool) -> ActionResult:
        link = self._link
        if tx.ADB_IME not in link.shell("ime list -a -s").split():
            raise DeviceError(
                f"typing {text[:20]!r} needs ADB Keyboard, which is not installed on {link.serial}",
                hint=tx.ADB_KEYBOARD_HINT,
            )
        previous = tx.ime_id_or_none(link.shell("settings get secure default_input_method"))
        if previous != tx.ADB_IME:
            link.shell(f"ime enable {tx.ADB_IME} && ime set {tx.ADB_IME}", idempotent=False)
            self._wait_for_ime(tx.ADB_IME)
        parts = [tx.CLEAR_BROADCAST] if clear else []
        parts.append(tx.b64_broadcast(text))
        if enter:
            parts.append(f"input keyevent {ENTER}")
        command = " && ".join(parts)
        if previous and previous != tx.ADB_IME:
            command = f"{command}; {tx.ime_set_command(previous)}"  # restore even if typing failed
        out = link.shell(command, idempotent=False)
        if "Broadcast completed" not in out:
            return ActionResult.failure(f"ADB Keyboard broadcast failed: {out.strip()[-300:]}")
        return ActionResult.success(
            f"typed {len(text)} characters", method="adb_keyboard", restored_ime=previous or ""
        )

    def _wait_for_ime(self, ime: str) -> None:
        """``ime set`` returns before the IME is bound; a broadcast sent earlier would be lost."""
        deadline = time.monotonic() + self._ime_timeout_s
        while True:
            out = self._link.shell("dumpsys input_method | grep mCurMethodId")
            if f"mCurMethodId={ime}" in out:
                return
            if time.monotonic() > deadline:
                raise DeviceError(
                    f"ADB Keyboard did not become the input method on {self._link.serial}: {out.strip()!r}",
                    hint=tx.ADB_KEYBOARD_HINT,
                )
            time.sleep(0.1)


__all__ = ["UNKNOWN_LENGTH", "AndroidTyper", "run_input"]
