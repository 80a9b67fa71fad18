"""Typing command lines (devices/android/text.py), key names (android_keys) and app names (android/apps.py).

The oracle for ``input text`` is a port of Android's own ``Input.sendText`` escape handling
(``%s`` → space), and ``shlex.split`` plays the device shell: a command line is safe when the
shell hands ``input`` exactly one argument that decodes back to the typed text.
"""

from __future__ import annotations

import base64
import shlex

from hypothesis import given
from hypothesis import strategies as st

from agent_runtime.devices.android import text as tx
from agent_runtime.devices.android.apps import resolve_app, suggest
from agent_runtime.devices.android.device import keyevent_arg


def android_send_text(arg: str) -> str:
    """Android's ``Input.sendText``: after a '%', an 's' becomes a space and the '%' is dropped."""
    buff = list(arg)
    escape = False
    i = 0
    while i < len(buff):
        if escape:
            escape = False
            if buff[i] == "s":
                buff[i] = " "
                del buff[i - 1]
                i -= 1
        if buff[i] == "%":
            escape = True
        i += 1
    return "".join(buff)


ascii_text = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)


@given(ascii_text)
def test_input_text_round_trips_through_sh_and_android(text: str) -> None:
    typed = ""
    for command in tx.input_text_commands(text):
        argv = shlex.split(command)
        assert argv[:2] == ["input", "text"] and len(argv) == 3
        assert " " not in argv[2]
        typed += android_send_text(argv[2])
    assert typed == text


@given(st.text(max_size=40))
def test_adb_keyboard_broadcast_carries_any_text_as_one_inert_argument(text: str) -> None:
    argv = shlex.split(tx.b64_broadcast(text))
    assert argv[:5] == ["am", "broadcast", "-a", "ADB_INPUT_B64", "--es"]
    assert argv[5] == "msg" and len(argv) == 7
    assert base64.b64decode(argv[6]).decode("utf-8") == text


def test_percent_s_needs_two_commands_in_one_line() -> None:
    assert tx.input_text_commands("100%sure") == ["input text '100%'", "input text 'sure'"]
    assert tx.input_text_commands("a b") == ["input text 'a%sb'"]
    assert tx.input_text_commands("") == []


def test_input_text_refuses_what_the_keyboard_cannot_type() -> None:
    for text in ("é", "a\nb", "tab\t", "🙂"):
        assert not tx.input_text_ok(text)
    assert tx.input_text_ok("plain ASCII ~!@#$%^&*()")


def test_ime_ids_from_the_device_are_validated_before_reuse() -> None:
    assert (
        tx.ime_id_or_none("com.android.inputmethod.latin/.LatinIME\n")
        == "com.android.inputmethod.latin/.LatinIME"
    )
    assert tx.ime_id_or_none("null") is None
    assert tx.ime_id_or_none("x/y; reboot") is None
    assert shlex.split(tx.ime_set_command("a.b/.C")) == ["ime", "set", "a.b/.C"]


def test_clear_is_one_keyevent_command() -> None:
    assert tx.clear_keys_command(3) == "input keyevent 123 67 67 67"
    assert tx.clear_keys_command(0) == "input keyevent 123"


def test_key_names() -> None:
    assert [keyevent_arg(k) for k in ("Back", "HOME", "enter", "Delete", "app switch", "5")] == [
        4,
        3,
        66,
        67,
        187,
        5,
    ]
    assert keyevent_arg("a") == 29  # KEYCODE_A
    assert keyevent_arg("KEYCODE_DPAD_UP") == 19
    assert keyevent_arg("keycode_media_record") == "KEYCODE_MEDIA_RECORD"  # not in our table: the phone's
    for bad in ("$(reboot)", "back; reboot", "999", ""):
        assert keyevent_arg(bad) is None


def test_app_names_resolve_by_table_package_and_fuzzy_words() -> None:
    installed = [
        "com.google.android.deskclock",
        "com.google.android.apps.messaging",
        "com.whatsapp",
        "org.example.recipekeeper",
        "com.tencent.mm",
    ]
    assert resolve_app("Clock", installed).package == "com.google.android.deskclock"
    assert resolve_app("Messages", installed).package == "com.google.android.apps.messaging"
    assert resolve_app("WhatsApp", installed).package == "com.whatsapp"
    assert resolve_app("微信", installed).package == "com.tencent.mm"
    assert resolve_app("Recipe Keeper", installed).package == "org.example.recipekeeper"
    assert resolve_app("com.whatsapp", installed).package == "com.whatsapp"
    missing = resolve_app("Calculator", installed)
    assert missing.package is None and missing.how == "no match"
    assert resolve_app("  ", installed).package is None
    assert "Clock (com.google.android.deskclock)" in suggest("clok", installed)
