"""The desktop driver under a real Xvfb, acting on a real Tk app (tests/apps/tk_probe.py).

The app writes its state to a JSON file; every assertion reads what the app saw, so a driver
that clicks the wrong place, drops characters or never releases a button fails here.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.actions import parse_action
from agent_runtime.errors import ConfigError, DeviceError

APP = Path(__file__).parent / "apps" / "tk_probe.py"

needs_xvfb = pytest.mark.skipif(
    shutil.which("Xvfb") is None, reason="Xvfb is not installed (apt-get install xvfb xdotool)"
)
needs_xdotool = pytest.mark.skipif(shutil.which("xdotool") is None, reason="xdotool is not installed")


@pytest.fixture(scope="session")
def desktop(xvfb: Any) -> Iterator[Any]:
    from agent_runtime.devices.registry import resolve_device

    device = resolve_device(f"desktop:{xvfb.display}", settle_timeout_s=1.0, accessibility=False)
    yield device
    device.close()


class ProbeApp:
    """The running Tk probe: its state file and where its widgets are."""

    def __init__(self, proc: subprocess.Popen[bytes], state_file: Path) -> None:
        self.proc = proc
        self.state_file = state_file

    def state(self) -> dict[str, Any]:
        return json.loads(self.state_file.read_text(encoding="utf-8"))

    def wait_for(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 3.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            if self.state_file.exists():
                state = self.state()
                if pred(state):
                    return state
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"app state never matched; last: {self.state() if self.state_file.exists() else None}"
                )
            time.sleep(0.03)

    def centre(self, widget: str, fx: float = 0.5, fy: float = 0.5) -> list[float]:
        x, y, w, h = self.state()["geometry"][widget]
        return [x + w * fx, y + h * fy]


@contextmanager
def probe_app(display: str, state: Path) -> Iterator[ProbeApp]:
    """The Tk probe app on ``display``, laid out and reporting into ``state``."""
    env = {**os.environ, "DISPLAY": display}
    proc = subprocess.Popen([sys.executable, str(APP), str(state)], env=env)
    probe = ProbeApp(proc, state)
    try:
        probe.wait_for(lambda s: s["ready"] and s["geometry"]["button"][2] > 1, timeout=10)
        yield probe
    finally:
        proc.terminate()
        proc.wait(timeout=5)


@pytest.fixture()
def app(xvfb: Any, tmp_path: Path) -> Iterator[ProbeApp]:
    with probe_app(xvfb.display, tmp_path / "state.json") as probe:
        yield probe


def act(device: Any, obj: dict[str, Any]) -> Any:
    result = device.execute(parse_action(obj))
    assert result.ok, result.error
    return result


@pytest.mark.desktop
@needs_xvfb
@needs_xdotool
def test_click_type_drag_scroll(desktop: Any, app: ProbeApp) -> None:
    act(desktop, {"action": "click", "coordinate": app.centre("button")})
    app.wait_for(lambda s: s["clicks"] == 1)

    act(desktop, {"action": "click", "coordinate": app.centre("entry")})
    app.wait_for(lambda s: s["focus"].endswith("entry"))
    result = act(desktop, {"action": "type", "text": "héllo 世界"})
    assert result.data["method"] == "xdotool"
    assert result.data["settle"]["stable"] is True
    app.wait_for(lambda s: s["entry"] == "héllo 世界")

    points = app.state()["scale_points"]
    act(desktop, {"action": "drag", "coordinate": points["0"], "coordinate2": points["50"]})
    state = app.wait_for(lambda s: s["scale"] != 0)
    assert abs(state["scale"] - 50) <= 2

    act(desktop, {"action": "scroll", "pixels": -3, "coordinate": app.centre("listbox")})
    top = app.wait_for(lambda s: s["list_top"] > 0)["list_top"]
    act(desktop, {"action": "scroll", "pixels": 1, "coordinate": app.centre("listbox")})
    app.wait_for(lambda s: 0 <= s["list_top"] < top)


@pytest.mark.desktop
@needs_xvfb
@needs_xdotool
def test_type_is_literal_and_clear_enter_work(desktop: Any, app: ProbeApp, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    nasty = f"$(touch {marker}) `touch {marker}`; rm -rf x | cat & 'q' \"d\" <a> %s \\n Über Ωмир 🙂"
    act(desktop, {"action": "click", "coordinate": app.centre("entry")})
    act(desktop, {"action": "type", "text": "old text"})
    app.wait_for(lambda s: s["entry"] == "old text")
    act(desktop, {"action": "type", "text": nasty, "clear": 1, "enter": 1})
    state = app.wait_for(lambda s: s["submitted"] != [])
    assert state["entry"] == nasty
    assert state["submitted"] == [nasty]
    assert not marker.exists()


@pytest.mark.desktop
@needs_xvfb
@needs_xdotool
def test_typing_survives_an_app_that_reads_its_events_late(xvfb: Any, app: ProbeApp) -> None:
    """xdotool unbinds a remapped key right after pressing it: an app stopped while we type reads
    the press after the unbinding and, without pinned keys, loses every non-ASCII character."""
    import signal

    from agent_runtime.devices.desktop.device import DesktopDevice

    device = DesktopDevice.from_spec(xvfb.display, settle_timeout_s=0.3, accessibility=False)
    display = device._pg._pyautogui_x11._display
    info = display.display.info

    def keymap() -> set[int]:
        rows = display.get_keyboard_mapping(info.min_keycode, info.max_keycode - info.min_keycode + 1)
        return {sym for row in rows for sym in row}

    before = keymap()
    text = "héllo 世界 Ünï ça"
    act(device, {"action": "click", "coordinate": app.centre("entry")})
    app.wait_for(lambda s: s["focus"].endswith("entry"))
    app.proc.send_signal(signal.SIGSTOP)
    try:
        act(device, {"action": "type", "text": text})
    finally:
        app.proc.send_signal(signal.SIGCONT)
    app.wait_for(lambda s: s["entry"] == text)
    assert {0xE9, 0x1004E16, 0xDC} <= keymap()  # é, 世 and Ü stay bound while the device lives
    device.close()
    assert keymap() == before  # and close() gives the keymap back


@pytest.mark.desktop
@needs_xvfb
def test_pinned_keys_make_room_and_leave_the_rest_to_xdotool(xvfb: Any, desktop: Any) -> None:
    from agent_runtime.devices.desktop.text_entry import PinnedKeys

    pins = PinnedKeys(desktop._pg._pyautogui_x11._display)
    room = pins.capacity
    assert room > 2
    many = "".join(chr(0x4E00 + i) for i in range(room + 3))
    pins.pin(many)  # more characters than spare keycodes: the first `room` are bound
    assert set(pins.bound()) == set(many[:room])
    pins.pin("é" + many[-1])  # new characters evict the least recently used ones
    bound = pins.bound()
    assert len(bound) == room and {"é", many[-1]} <= set(bound) and many[0] not in bound
    assert len(set(bound.values())) == room  # one keycode each
    pins.release()
    assert pins.bound() == {} and pins.capacity == room


@pytest.mark.desktop
@needs_xvfb
def test_pyautogui_typing_method_and_its_limits(xvfb: Any, desktop: Any, app: ProbeApp) -> None:
    from agent_runtime.devices.desktop.device import DesktopDevice

    device = DesktopDevice.from_spec(xvfb.display, typing="pyautogui", settle_timeout_s=0.5)
    act(device, {"action": "click", "coordinate": app.centre("entry")})
    result = act(device, {"action": "type", "text": "ascii only: a+b=c!"})
    assert result.data["method"] == "pyautogui"
    app.wait_for(lambda s: s["entry"] == "ascii only: a+b=c!")
    with pytest.raises(DeviceError, match="cannot type"):
        device.execute(parse_action({"action": "type", "text": "1 < 2"}))
    device.close()


@pytest.mark.desktop
@needs_xvfb
@pytest.mark.skipif(
    shutil.which("xclip") is None and shutil.which("xsel") is None, reason="no clipboard tool (xclip/xsel)"
)
def test_clipboard_typing_method(xvfb: Any, desktop: Any, app: ProbeApp) -> None:
    from agent_runtime.devices.desktop.device import DesktopDevice

    device = DesktopDevice.from_spec(xvfb.display, typing="clipboard", settle_timeout_s=0.5)
    act(device, {"action": "click", "coordinate": app.centre("entry")})
    assert act(device, {"action": "type", "text": "剪贴板 ok"}).data["method"] == "clipboard"
    app.wait_for(lambda s: s["entry"] == "剪贴板 ok")
    device.close()


@pytest.mark.desktop
@needs_xvfb
def test_mouse_buttons_and_key_combos(desktop: Any, app: ProbeApp) -> None:
    target = app.centre("target")
    act(desktop, {"action": "double_click", "coordinate": target})
    act(desktop, {"action": "right_click", "coordinate": target})
    act(desktop, {"action": "middle_click", "coordinate": target})
    act(desktop, {"action": "mouse_move", "coordinate": app.centre("button")})
    app.wait_for(lambda s: (s["double_clicks"], s["right_clicks"], s["middle_clicks"]) == (1, 1, 1))
    act(desktop, {"action": "key", "keys": ["ctrl", "k"]})
    act(desktop, {"action": "key", "keys": ["Control+Shift+K"]})
    app.wait_for(lambda s: s["keys"] == ["ctrl+k", "ctrl+shift+k"])

    bad = desktop.execute(parse_action({"action": "key", "keys": ["ctrl", "hyperdrive"]}))
    assert not bad.ok and "hyperdrive" in bad.error
    for phone_only in (
        {"action": "system_button", "button": "Back"},
        {"action": "open_app", "text": "Files"},
    ):
        result = desktop.execute(parse_action(phone_only))
        assert not result.ok and result.error
    answer = desktop.execute(parse_action({"action": "answer", "text": "42"}))
    assert answer.ok and answer.data["answer"] == "42"
    done = desktop.execute(parse_action({"action": "terminate", "status": "success"}))
    assert done.ok and done.data["status"] == "success"


@pytest.mark.desktop
@needs_xvfb
def test_observe_and_info(xvfb: Any, desktop: Any, app: ProbeApp) -> None:
    from PIL import Image

    from agent_runtime.devices.desktop.device import DesktopDevice

    obs = desktop.observe()
    assert obs.size == (1920, 1080)
    img = Image.open(io.BytesIO(obs.screenshot))
    assert (img.format, img.size) == ("JPEG", (1920, 1080))
    # The Tk button's face colour is visible where the app says the button is.
    x, y = (int(v) for v in app.centre("button"))
    assert img.getpixel((x, y + 12)) != img.getpixel((1900, 1060))
    assert obs.ui_xml is None and "AT-SPI not available" in (obs.ui_error or "")
    assert obs.extra["scale_x"] == 1.0 and obs.extra["display"] == xvfb.display
    info = desktop.info()
    assert info.kind == "desktop" and info.screen == (1920, 1080)
    assert info.details["monitor_rect"] == [0, 0, 1920, 1080]

    png = DesktopDevice.from_spec(xvfb.display, image_format="png", accessibility=False)
    assert png.observe().screenshot.startswith(b"\x89PNG")
    png.close()


@pytest.mark.desktop
@needs_xvfb
def test_accessibility_without_a_session_bus_says_why(
    xvfb: Any, desktop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_runtime.devices.desktop.device import DesktopDevice

    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.delenv("AT_SPI_BUS_ADDRESS", raising=False)
    device = DesktopDevice.from_spec(xvfb.display)
    obs = device.observe()
    assert obs.ui_xml is None
    assert obs.ui_error.startswith("no accessibility tree (AT-SPI not available)")
    assert "D-Bus" in obs.ui_error and device.info().details["accessibility"] is False
    device.close()


@pytest.mark.desktop
@needs_xvfb
def test_hidpi_scale_maps_screenshot_pixels_to_input_points(desktop: Any, app: ProbeApp) -> None:
    """With a 2x screenshot (as on a HiDPI screen) a click at screenshot pixels lands on the widget."""
    from agent_runtime.coords import Size

    original = desktop._scale_grab, desktop._size
    desktop._scale_grab, desktop._size = (2.0, 2.0), Size(3840, 2160)
    try:
        assert desktop.scale == (2.0, 2.0)
        x, y = app.centre("button")
        act(desktop, {"action": "click", "coordinate": [2 * x, 2 * y]})
        app.wait_for(lambda s: s["clicks"] == 1)
    finally:
        desktop._scale_grab, desktop._size = original


def test_no_display_is_a_device_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_runtime.devices.desktop.device import DesktopDevice

    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(DeviceError) as err:
        DesktopDevice.from_spec(None)
    assert "DISPLAY" in err.value.message and "Xvfb" in (err.value.hint or "")


def test_dead_display_is_a_device_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_runtime.devices.desktop.device import DesktopDevice

    monkeypatch.setenv("DISPLAY", ":0")  # restored afterwards; the device sets it while connecting
    with pytest.raises(DeviceError, match="cannot open X display :947"):
        DesktopDevice.from_spec(":947")


def test_bad_options_are_config_errors() -> None:
    from agent_runtime.devices.desktop.device import DesktopDevice

    with pytest.raises(ConfigError):
        DesktopDevice.from_spec(":1", image_format="gif")
    with pytest.raises(ConfigError):
        DesktopDevice.from_spec(":1", monitr=2)


def test_xdotool_segments_keep_capitals_and_order() -> None:
    from agent_runtime.devices.desktop.text_entry import xdotool_segments

    assert xdotool_segments("École Ünïcode 世界") == [
        ["key", "shift+U00C9"],
        ["type", "cole "],
        ["key", "shift+U00DC"],
        ["type", "nïcode 世界"],
    ]
    assert xdotool_segments("plain") == [["type", "plain"]]


def test_typing_doctests() -> None:
    import doctest

    from agent_runtime.devices.desktop import text_entry as desktop_typing

    result = doctest.testmod(desktop_typing)
    assert result.attempted >= 2 and result.failed == 0


def test_key_names_normalise() -> None:
    import types

    from agent_runtime.devices.desktop.keys import normalise_keys

    fake = types.SimpleNamespace(KEY_NAMES=["ctrl", "shift", "a", "enter", "pagedown", "+"])
    assert normalise_keys(["Control", "Shift", "A"], fake) == (["ctrl", "shift", "a"], [])
    assert normalise_keys(["ctrl+a"], fake) == (["ctrl", "a"], [])
    assert normalise_keys(["+"], fake) == (["+"], [])
    assert normalise_keys(["Return", "Page_Down", "warp"], fake) == (["enter", "pagedown", "warp"], ["warp"])


GTK_APP = """
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk
w = Gtk.Window(title="atspi probe")
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
box.add(Gtk.Button(label="Press me"))
box.add(Gtk.CheckButton(label="Check it"))
w.add(box); w.show_all(); Gtk.main()
"""


def _system_python_has(*modules: str) -> bool:
    probe = "; ".join(f"import {m}" for m in modules)
    try:
        return (
            subprocess.run(["/usr/bin/python3", "-c", probe], capture_output=True, timeout=20).returncode == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.desktop
@needs_xvfb
@pytest.mark.skipif(
    not (
        shutil.which("dbus-daemon")
        and Path("/usr/libexec/at-spi-bus-launcher").exists()
        and _system_python_has("pyatspi", "gi")
    ),
    reason="AT-SPI stack not installed (python3-pyatspi at-spi2-core gir1.2-gtk-3.0 python3-gi dbus)",
)
def test_accessibility_tree_through_atspi(xvfb: Any, desktop: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_runtime.devices.desktop.device import DesktopDevice

    bus = subprocess.run(
        ["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    address, pid = bus.stdout.split()[:2]
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
    env = {**os.environ, "DISPLAY": xvfb.display}
    launcher = subprocess.Popen(
        ["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"], env=env, stderr=subprocess.DEVNULL
    )
    app = None
    try:
        time.sleep(1.0)
        app = subprocess.Popen(["/usr/bin/python3", "-c", GTK_APP], env=env, stderr=subprocess.DEVNULL)
        device = DesktopDevice.from_spec(xvfb.display, settle_timeout_s=0.5)
        deadline = time.monotonic() + 10
        while True:
            obs = device.observe()
            if obs.ui_xml and "Press me" in obs.ui_xml or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert obs.ui_error is None, obs.ui_error
        button = next(e for e in obs.elements if e.text == "Press me")
        check = next(e for e in obs.elements if e.text == "Check it")
        assert button.has("clickable") and button.class_name == "atspi.push_button"
        assert check.has("checkable") and not check.has("checked")
        act(device, {"action": "click", "coordinate": check.bounds.center})
        assert next(e for e in device.observe().elements if e.text == "Check it").has("checked")
        assert device.info().details["accessibility"] is True
        device.close()
    finally:
        if app is not None:
            app.terminate()
            app.wait(timeout=5)
        launcher.terminate()
        launcher.wait(timeout=5)
        os.kill(int(pid), 15)


@pytest.mark.desktop
@needs_xvfb
def test_missing_monitor_is_a_config_error(xvfb: Any, desktop: Any) -> None:
    from agent_runtime.devices.desktop.device import DesktopDevice

    with pytest.raises(ConfigError, match="monitor 7 does not exist"):
        DesktopDevice.from_spec(xvfb.display, monitor=7)
    whole = DesktopDevice.from_spec(xvfb.display, monitor=0, accessibility=False)
    assert whole.screen_size == (1920, 1080)
    whole.close()
