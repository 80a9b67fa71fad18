"""The Android driver against SimPhone's adb endpoint, through real adbutils (and the adb binary).

Each test gets a fresh SimPhone served on a free port; assertions read the phone's own state
(``server`` → ``phone.app(...).state``), so the driver is judged by what the phone actually did.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.actions import parse_action
from agent_runtime.errors import DeviceError, DeviceNotFoundError

CLOCK = "com.android.deskclock"
LATIN_IME = "com.android.inputmethod.latin/.LatinIME"


@pytest.fixture(autouse=True)
def _no_real_adb(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never let adbutils start a real adb server from its bundled binary."""
    monkeypatch.setenv("ADBUTILS_ADB_PATH", "/bin/true")


@pytest.fixture()
def phone() -> Any:
    from agent_runtime.simphone import SimPhone

    return SimPhone(0)


@pytest.fixture()
def server(phone: Any) -> Iterator[Any]:
    from agent_runtime.simphone.adb import AdbServer

    srv = AdbServer([phone]).start()
    yield srv
    srv.stop()


def connect(port: int, serial: str | None = None, **options: Any) -> Any:
    from agent_runtime.devices.registry import resolve_device

    opts = {
        "adb_port": port,
        "start_server": False,
        "settle_timeout_s": 2.0,
        "settle_poll_s": 0.05,
        "settle_min_delay_s": 0.02,
    }
    return resolve_device(f"adb:{serial}" if serial else "adb", **{**opts, **options})


@pytest.fixture()
def device(server: Any) -> Iterator[Any]:
    dev = connect(server.port)
    yield dev
    dev.close()


def act(device: Any, obj: dict[str, Any]) -> Any:
    result = device.execute(parse_action(obj))
    assert result.ok, result.error
    return result


def find(
    device: Any, *, text: str | None = None, rid: str | None = None, cls: str | None = None, nth: int = 0
) -> Any:
    hits = [
        e
        for e in device.observe().elements
        if (text is None or text in (e.text, e.content_desc))
        and (rid is None or e.resource_id.endswith(rid))
        and (cls is None or e.class_name.endswith(cls))
    ]
    assert len(hits) > nth, f"no element text={text!r} rid={rid!r} cls={cls!r}"
    return hits[nth]


def tap(device: Any, element: Any) -> Any:
    return act(device, {"action": "click", "coordinate": element.bounds.center})


def test_observe_reads_screen_tree_and_focus(device: Any, phone: Any) -> None:
    from agent_runtime.observation import parse_ui_xml

    obs = device.observe()
    assert obs.size == (1080, 2400) == device.screen_size
    assert obs.screenshot.startswith(b"\x89PNG")
    with phone.lock:
        assert obs.screenshot == phone.screenshot_png()
        package, activity = phone.current_focus()
    assert (obs.app, obs.activity) == (package, activity)
    assert obs.ui_error is None and parse_ui_xml(obs.ui_xml)
    assert obs.extra["rotation"] == 0 and obs.extra["serial"] == phone.serial
    info = device.info()
    assert info.kind == "adb" and info.spec == f"adb:{phone.serial}" and info.screen == (1080, 2400)


def test_open_clock_add_alarm_and_label_it_in_cjk_and_emoji(device: Any, phone: Any) -> None:
    result = act(device, {"action": "open_app", "text": "Clock"})
    assert result.data["package"] == CLOCK and result.data["settle"]["stable"]
    assert device.observe().app == CLOCK

    tap(device, find(device, text="Add alarm"))
    tap(device, find(device, cls="EditText", nth=0))
    assert act(device, {"action": "type", "text": "7", "clear": 1}).data["method"] == "input text"
    tap(device, find(device, cls="EditText", nth=1))
    act(device, {"action": "type", "text": "45", "clear": 1})
    tap(device, find(device, text="OK"))
    alarms = phone.app(CLOCK).state.alarms
    new = [a for a in alarms if (a.hour, a.minute) == (7, 45)]
    assert len(new) == 1 and new[0].enabled

    tap(device, find(device, text="7:45 AM"))
    tap(device, find(device, rid="edit_label"))
    label = "起床 ☕ 🙂 $(reboot) `id` 'q'"
    typed = act(device, {"action": "type", "text": label, "clear": 1})
    assert typed.data["method"] == "adb_keyboard" and typed.data["restored_ime"] == LATIN_IME
    assert find(device, rid="edit_label").text == label
    tap(device, find(device, text="Done"))
    assert [a.label for a in phone.app(CLOCK).state.alarms if a.id == new[0].id] == [label]
    # The user's keyboard is back.
    assert device.link.shell("settings get secure default_input_method") == LATIN_IME


INJECTIONS = [
    "$(touch /sdcard/pwned)",
    "`touch /sdcard/pwned`",
    "a; touch /sdcard/pwned",
    "a && touch /sdcard/pwned || true",
    "it's a 'quoted' \"string\"",
    "100%sure 50% off %s %%s",
    "back\\slash | pipe > out < in & bg * ? [x] ~ # !",
    "  leading and trailing spaces  ",
    "-starts with a dash",
    "ünïcødé $(touch /sdcard/pwned) 漢字 🙂",
    "two\nlines; `touch /sdcard/pwned`",
]


def test_typed_text_is_never_run_by_the_device_shell(device: Any) -> None:
    act(device, {"action": "open_app", "text": "Clock"})
    tap(device, find(device, text="9:30 AM"))
    tap(device, find(device, rid="edit_label"))
    for text in INJECTIONS:
        act(device, {"action": "type", "text": text, "clear": 1})
        expected = text.replace("\n", " ")  # a single-line field turns a newline into a space
        assert find(device, rid="edit_label").text == expected
    listing = device.link.shell("ls /sdcard/pwned out 2>&1")
    assert listing.count("No such file") == 2


def test_type_enter_and_clear_with_input_text(device: Any, phone: Any) -> None:
    act(device, {"action": "open_app", "text": "Clock"})
    tap(device, find(device, text="9:30 AM"))
    tap(device, find(device, rid="edit_label"))
    act(device, {"action": "type", "text": "first"})
    act(device, {"action": "type", "text": " second"})
    assert find(device, rid="edit_label").text == "Medicinefirst second"
    act(device, {"action": "type", "text": "Gym", "clear": 1, "enter": 1})
    assert find(device, rid="edit_label").text == "Gym"


def test_no_adb_keyboard_is_a_device_error_with_install_hint(phone: Any) -> None:
    from agent_runtime.simphone.adb import AdbServer

    with AdbServer([phone], adb_keyboard=False) as srv:
        dev = connect(srv.port)
        act(dev, {"action": "open_app", "text": "Clock"})
        tap(dev, find(dev, text="9:30 AM"))
        tap(dev, find(dev, rid="edit_label"))
        act(dev, {"action": "type", "text": "ascii still works"})
        with pytest.raises(DeviceError) as err:
            dev.execute(parse_action({"action": "type", "text": "日本語"}))
        assert "ADB Keyboard" in err.value.message and "adb install" in (err.value.hint or "")
        dev.close()


def test_buttons_keys_and_gestures(device: Any, phone: Any) -> None:
    act(device, {"action": "open_app", "text": "clock"})
    act(device, {"action": "system_button", "button": "Home"})
    assert device.observe().app == "com.android.launcher3"
    act(device, {"action": "open_app", "text": "com.android.deskclock"})
    act(device, {"action": "key", "keys": ["back"]})
    assert device.observe().app == "com.android.launcher3"
    bad = device.execute(parse_action({"action": "key", "keys": ["warp drive"]}))
    assert not bad.ok and "warp drive" in bad.error
    for gesture in (
        {"action": "swipe", "coordinate": [540, 1800], "coordinate2": [540, 600], "duration_ms": 300},
        {"action": "long_press", "coordinate": [540, 1200]},
        {"action": "scroll", "pixels": -3},
        {"action": "double_click", "coordinate": [540, 1200]},
    ):
        act(device, gesture)
    assert act(device, {"action": "answer", "text": "42"}).data["answer"] == "42"
    assert act(device, {"action": "terminate", "status": "failure"}).data["status"] == "failure"
    assert not device.execute(parse_action({"action": "right_click", "coordinate": [1, 1]})).ok


def test_unknown_app_fails_with_close_matches(device: Any) -> None:
    result = device.execute(parse_action({"action": "open_app", "text": "Clok"}))
    assert not result.ok
    assert "Clock (com.android.deskclock)" in result.error
    assert "Clock (com.android.deskclock)" in result.data["suggestions"]
    assert not device.execute(parse_action({"action": "open_app", "text": "Teleporter"})).ok


def test_every_simphone_app_resolves_by_its_label(phone: Any) -> None:
    from agent_runtime.devices.android.apps import resolve_app

    contract = {
        "Settings": "com.android.settings",
        "Clock": "com.android.deskclock",
        "Contacts": "com.android.contacts",
        "Messages": "com.android.messaging",
        "Calendar": "com.android.calendar",
        "Browser": "com.android.browser",
        "Notes": "com.simphone.notes",
        "Expenses": "com.simphone.expenses",
        "Shop": "com.simphone.shop",
    }
    installed = [*contract.values(), "com.android.launcher3", "com.android.inputmethod.latin", "android"]
    for label, package in contract.items():
        assert resolve_app(label, installed).package == package, label
        assert resolve_app(label.lower() + " app", installed).package == package, label
    for package, label in phone.packages().items():
        assert resolve_app(label, list(phone.packages())).package == package, label


def test_missing_server_serial_and_bad_options() -> None:
    from agent_runtime.errors import ConfigError

    with pytest.raises(DeviceError, match="no adb server") as err:
        connect(1)  # nothing listens on port 1
    assert "USB debugging" in (err.value.hint or "")
    with pytest.raises(ConfigError):
        connect(5037, settle_probe="vibes")


def test_unknown_serial_is_device_not_found(server: Any) -> None:
    with pytest.raises(DeviceNotFoundError, match="emulator-5554 \\(device\\)"):
        connect(server.port, serial="R58M123ABC")


def test_env_port_is_honoured(server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_runtime.devices.registry import resolve_device

    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(server.port))
    dev = resolve_device("adb:emulator-5554", start_server=False)
    assert dev.info().details["adb_server"] == f"127.0.0.1:{server.port}"
    dev.close()


def test_device_states_give_actionable_errors() -> None:
    from agent_runtime.devices.android.adb import _check_state

    with pytest.raises(DeviceError) as err:
        _check_state("X", "unauthorized")
    assert "Allow USB debugging" in (err.value.hint or "")
    with pytest.raises(DeviceError) as err:
        _check_state("X", "offline")
    assert "adb reconnect" in (err.value.hint or "")


def test_reconnects_when_the_endpoint_restarts(phone: Any) -> None:
    from agent_runtime.simphone.adb import AdbServer

    first = AdbServer([phone]).start()
    port = first.port
    dev = connect(port, reconnect_backoff_s=0.1, reconnect_attempts=6)
    act(dev, {"action": "open_app", "text": "Clock"})
    first.stop()
    restarted: list[Any] = []

    def restart() -> None:
        time.sleep(0.4)
        restarted.append(AdbServer([phone], port=port).start())

    thread = threading.Thread(target=restart)
    thread.start()
    try:
        act(dev, {"action": "system_button", "button": "Home"})  # refused → reconnect → sent once
        obs = dev.observe()
        assert obs.app == "com.android.launcher3"
        assert dev.info().details["reconnects"] >= 1
    finally:
        thread.join()
        for srv in restarted:
            srv.stop()
        dev.close()


def test_gives_up_with_a_clear_error_when_the_endpoint_stays_down(phone: Any) -> None:
    from agent_runtime.simphone.adb import AdbServer

    srv = AdbServer([phone]).start()
    dev = connect(srv.port, reconnect_backoff_s=0.05, reconnect_attempts=3)
    dev.observe()
    srv.stop()
    start = time.monotonic()
    with pytest.raises(DeviceError, match="could not reconnect after 3 attempts"):
        dev.observe()
    assert time.monotonic() - start < 5
    dev.close()


def test_adb_binary_from_the_adbutils_wheel_sees_what_the_driver_did(device: Any, server: Any) -> None:
    import adbutils

    adb = Path(adbutils.__file__).parent / "binaries" / "adb"  # the wheel's own binary, not /bin/true
    if not adb.is_file():
        pytest.skip(f"this adbutils wheel ships no adb binary at {adb}")
    act(device, {"action": "open_app", "text": "Clock"})
    run = lambda *args: subprocess.run([adb, "-P", str(server.port), *args], capture_output=True, timeout=30)  # noqa: E731
    devices = run("devices").stdout.decode()
    assert "emulator-5554\tdevice" in devices
    assert "com.android.deskclock" in run("shell", "dumpsys", "window").stdout.decode()
    assert run("exec-out", "screencap", "-p").stdout == device.screenshot()


def test_failed_ui_dump_leaves_the_screenshot_and_says_why(server: Any) -> None:
    dev = connect(server.port, ui_dump_path="/nonexistent/dir/dump.xml", ui_dump_retries=1)
    obs = dev.observe()
    assert obs.screenshot.startswith(b"\x89PNG") and obs.app == "com.android.launcher3"
    assert obs.ui_xml is None
    assert obs.ui_error.startswith("uiautomator dump failed after 2 tries: ERROR: could not write")
    dev.close()
