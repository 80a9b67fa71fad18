"""GUI-Owl's whole action space, written as GUI-Owl writes it, parsed and executed on every backend.

Mobile-Agent-v3 lists the actions in Tables 9 (``mobile_use``) and 10 (``computer_use``, plus the
tool schema of its training data). Each table row below is one reply, what it parses to, and what
must be observable afterwards: mobile rows on a SimPhone in process and on the Android driver
through SimPhone's adb endpoint; desktop rows under Xvfb on the Tk probe app (tests/apps/tk_probe.py),
which reports every event it saw.

A reply may name points as ``$name``; a row's ``setup`` finds them on the screen first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from string import Template
from typing import Any

import pytest

from agent_runtime.actions import ActionResult, parse_action
from agent_runtime.android_keys import KEYCODES
from agent_runtime.errors import ActionParseError
from agent_runtime.observation import parse_ui_xml
from agent_runtime.roles.gui_owl import allowed_actions, parse_gui_owl
from agent_runtime.simphone import LAUNCHER_PACKAGE, SimPhone
from tests.test_desktop import ProbeApp, needs_xdotool, needs_xvfb, probe_app

SETTINGS = "com.android.settings"
CONTACTS = "com.android.contacts"
BROWSER = "com.android.browser"


def fill(template: str, points: dict[str, list[float]]) -> str:
    """The reply with each ``$name`` replaced by its point as a JSON list."""
    return Template(template).substitute({name: json.dumps(p) for name, p in points.items()})


def parses_to(reply: str, expected: str, platform: str) -> Any:
    """Parse the tool call ``reply`` as the ``single`` graph reads GUI-Owl's whole reply
    (thinking, tool call, conclusion; held to the platform's GUI-Owl actions), and check that its
    action's JSON form holds every field of ``expected``. An action outside GUI-Owl's space on
    this platform (``hscroll`` on a phone) is refused there, and parsed as any role's action."""
    text = (
        f"<thinking>\nI act.\n</thinking>\n<tool_call>\n{reply}\n</tool_call>\n<conclusion>acted</conclusion>"
    )
    if json.loads(expected)["action"] in allowed_actions(platform):
        out = parse_gui_owl(text, platform)
        assert out.thought == "I act." and out.description == "acted"
        action = out.action
    else:
        with pytest.raises(ActionParseError, match="not available"):
            parse_gui_owl(text, platform)
        action = parse_action(reply)
    form = action.to_json()
    for key, value in json.loads(expected).items():
        assert form[key] == value, f"{key}: {form[key]!r} != {value!r} in {form}"
    return action


# --- mobile -------------------------------------------------------------------------------------


class GesturePhone(SimPhone):
    """A real SimPhone that also notes the touches and keys it received, for the effects SimPhone
    does not draw (a volume key, how long a press lasted, a sideways swipe on a screen that ignores it)."""

    def __init__(self) -> None:
        super().__init__(seed=3)
        self.gestures: list[tuple[Any, ...]] = []

    def long_press(self, x: int, y: int, duration_ms: int = 800) -> None:
        self.gestures.append(("long_press", x, y, duration_ms))
        super().long_press(x, y, duration_ms)

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        self.gestures.append(("swipe", x1, y1, x2, y2))
        super().swipe(x1, y1, x2, y2, duration_ms)

    def key(self, code: int) -> None:
        self.gestures.append(("key", code))
        super().key(code)


@dataclass(frozen=True)
class Seen:
    """What a check looks at: the phone after the action, the points the reply named, the result,
    and the screen and clock before the action."""

    phone: GesturePhone
    points: dict[str, list[float]]
    result: ActionResult
    before_png: bytes
    before_now: Any

    def labels(self) -> set[str]:
        return {t for e in parse_ui_xml(self.phone.ui_xml()) for t in (e.text, e.content_desc) if t}

    def unchanged(self) -> bool:
        return self.phone.screenshot_png() == self.before_png


def centre(phone: SimPhone, label: str) -> list[float]:
    element = phone.find(label)
    assert element is not None, label
    return list(element.bounds.center)


def in_display_settings(phone: SimPhone) -> dict[str, list[float]]:
    phone.launch(SETTINGS)
    phone.tap_on("Display")
    return {}


def in_contacts(phone: SimPhone) -> dict[str, list[float]]:
    phone.launch(CONTACTS)
    return {}


def in_contacts_search(phone: SimPhone) -> dict[str, list[float]]:
    phone.launch(CONTACTS)
    phone.tap_on("search_box")
    return {}


def url_typed(phone: SimPhone) -> dict[str, list[float]]:
    phone.launch(BROWSER)
    phone.tap_on("url_bar")
    phone.input_text("eiffel tower height")
    return {}


def home_icons(phone: SimPhone) -> dict[str, list[float]]:
    return {"settings": centre(phone, "Settings")}


def pressed(code: int) -> Callable[[Seen], bool]:
    return lambda seen: ("key", code) in seen.phone.gestures


def in_front(package: str) -> Callable[[Seen], bool]:
    return lambda seen: seen.phone.current_focus()[0] == package


def back_in_settings(seen: Seen) -> bool:
    return (
        seen.phone.current_focus() == (SETTINGS, "com.android.settings.Settings")
        and "Network & internet" in seen.labels()
    )


def long_pressed_settings_icon(seen: Seen) -> bool:
    x, y = (round(v) for v in seen.points["settings"])
    # pressed for time=2 seconds, and the icon's long-press menu is open
    return ("long_press", x, y, 2000) in seen.phone.gestures and {"Open", "App info"} <= seen.labels()


def contacts_scrolled(seen: Seen) -> bool:
    first = min(c.name for c in seen.phone.app(CONTACTS).state.contacts)
    return first not in seen.labels()


def swiped_sideways(direction: int) -> Callable[[Seen], bool]:
    """One horizontal swipe from [540, 1200]; ``direction`` 1: the finger moves left (scroll right)."""

    def check(seen: Seen) -> bool:
        [(_, x1, y1, x2, y2)] = [g for g in seen.phone.gestures if g[0] == "swipe"]
        return (x1, y1, y2) == (540, 1200, 1200) and (x1 - x2) * direction > 100 and seen.unchanged()

    return check


def recorded(**data: str) -> Callable[[Seen], bool]:
    return lambda seen: seen.result.data.items() >= data.items() and seen.unchanged()


def waited(seen: Seen) -> bool:
    return (seen.phone.now - seen.before_now).total_seconds() == 3


@dataclass(frozen=True)
class Row:
    reply: str  #: the tool call as GUI-Owl writes it
    parsed: str  #: fields of the parsed action's JSON form
    check: Callable[[Seen], bool]  #: true when the phone shows the effect
    setup: Callable[[SimPhone], dict[str, list[float]]] = field(default=lambda phone: {})
    on_adb: bool = True  #: False where the Android driver differs on purpose (real-time wait)


def mobile(args: str) -> str:
    return f'{{"name": "mobile_use", "arguments": {args}}}'


MOBILE_ROWS = {
    "key KEYCODE_VOLUME_UP": Row(
        mobile('{"action": "key", "text": "KEYCODE_VOLUME_UP"}'),
        '{"action": "key", "keys": ["KEYCODE_VOLUME_UP"]}',
        pressed(KEYCODES["VOLUME_UP"]),
    ),
    "key volume_down": Row(
        mobile('{"action": "key", "text": "volume_down"}'),
        '{"action": "key", "keys": ["volume_down"]}',
        pressed(KEYCODES["VOLUME_DOWN"]),
    ),
    "key KEYCODE_BACK": Row(
        mobile('{"action": "key", "text": "KEYCODE_BACK"}'),
        '{"action": "key"}',
        back_in_settings,
        in_display_settings,
    ),
    "click": Row(
        mobile('{"action": "click", "coordinate": $settings}'),
        '{"action": "click", "coordinate": $settings}',
        in_front(SETTINGS),
        home_icons,
    ),
    "long_press time=2": Row(
        mobile('{"action": "long_press", "coordinate": $settings, "time": 2}'),
        '{"action": "long_press", "coordinate": $settings, "duration_ms": 2000}',
        long_pressed_settings_icon,
        home_icons,
    ),
    "swipe": Row(
        mobile('{"action": "swipe", "coordinate": [540, 1800], "coordinate2": [540, 500]}'),
        '{"action": "swipe", "coordinate": [540, 1800], "coordinate2": [540, 500]}',
        contacts_scrolled,
        in_contacts,
    ),
    "hscroll right": Row(
        mobile('{"action": "hscroll", "pixels": 2, "coordinate": [540, 1200]}'),
        '{"action": "hscroll", "pixels": 2}',
        swiped_sideways(1),
    ),
    "hscroll left": Row(
        mobile('{"action": "hscroll", "pixels": -1, "coordinate": [540, 1200]}'),
        '{"action": "hscroll", "pixels": -1}',
        swiped_sideways(-1),
    ),
    "type": Row(
        mobile('{"action": "type", "text": "Zoë"}'),
        '{"action": "type", "text": "Zoë"}',
        lambda seen: seen.phone.find("search_box").text == "Zoë",
        in_contacts_search,
    ),
    "system_button Back": Row(
        mobile('{"action": "system_button", "button": "Back"}'),
        '{"action": "system_button", "button": "Back"}',
        back_in_settings,
        in_display_settings,
    ),
    "system_button Home": Row(
        mobile('{"action": "system_button", "button": "Home"}'),
        '{"action": "system_button", "button": "Home"}',
        in_front(LAUNCHER_PACKAGE),
        in_contacts,
    ),
    "system_button Enter": Row(
        mobile('{"action": "system_button", "button": "Enter"}'),
        '{"action": "system_button", "button": "Enter"}',
        lambda seen: "Eiffel Tower - SimWiki" in seen.labels(),
        url_typed,
    ),
    "open": Row(
        mobile('{"action": "open", "text": "Clock"}'),
        '{"action": "open_app", "text": "Clock"}',
        in_front("com.android.deskclock"),
    ),
    "wait": Row(
        mobile('{"action": "wait", "time": 3}'), '{"action": "wait", "time": 3}', waited, on_adb=False
    ),
    "answer": Row(
        mobile('{"action": "answer", "text": "It is 330 m tall."}'),
        '{"action": "answer"}',
        recorded(answer="It is 330 m tall."),
    ),
    "terminate": Row(
        mobile('{"action": "terminate", "status": "failure"}'),
        '{"action": "terminate", "status": "failure"}',
        recorded(status="failure"),
    ),
    "interact": Row(
        mobile('{"action": "interact", "text": "Which Anna do you mean?"}'),
        '{"action": "interact", "text": "Which Anna do you mean?"}',
        recorded(question="Which Anna do you mean?"),
    ),
}


@pytest.fixture(autouse=True)
def _no_real_adb(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never let adbutils start a real adb server from its bundled binary."""
    monkeypatch.setenv("ADBUTILS_ADB_PATH", "/bin/true")


@pytest.fixture(params=["simphone", "adb"])
def backend(request: pytest.FixtureRequest) -> Iterator[tuple[GesturePhone, Any]]:
    """(phone, the device that acts on it): the phone itself, or the Android driver over adb."""
    phone = GesturePhone()
    if request.param == "simphone":
        yield phone, phone
        return
    from agent_runtime.devices.registry import resolve_device
    from agent_runtime.simphone.adb import AdbServer

    server = AdbServer([phone]).start()
    device = resolve_device(
        "adb", adb_port=server.port, start_server=False, settle_poll_s=0.05, settle_min_delay_s=0.02
    )
    try:
        yield phone, device
    finally:
        device.close()
        server.stop()


@pytest.mark.parametrize("row", list(MOBILE_ROWS.values()), ids=list(MOBILE_ROWS))
def test_gui_owl_mobile_reply_runs(row: Row, backend: tuple[GesturePhone, Any]) -> None:
    phone, device = backend
    if device is not phone and not row.on_adb:
        pytest.skip("the Android driver waits in real time; the virtual clock is SimPhone's")
    points = row.setup(phone)
    action = parses_to(fill(row.reply, points), fill(row.parsed, points), "mobile")
    phone.gestures.clear()
    before = (phone.screenshot_png(), phone.now)
    result = device.execute(action)
    assert result.ok, result.error
    seen = Seen(phone, points, result, *before)
    assert row.check(seen), (result, phone.gestures, phone.current_focus(), sorted(seen.labels())[:40])


@pytest.mark.parametrize(
    ("reply", "alternative"),
    [
        ('{"action": "left_click_drag", "coordinate": [540, 600]}', "swipe"),
        ('{"action": "triple_click", "coordinate": [540, 600]}', "click"),
    ],
)
def test_phones_refuse_pointer_actions_and_name_the_alternative(
    reply: str, alternative: str, backend: tuple[GesturePhone, Any]
) -> None:
    phone, device = backend
    before = phone.screenshot_png()
    result = device.execute(parse_action(mobile(reply)))
    assert not result.ok and alternative in (result.error or "")
    assert phone.gestures == [] and phone.screenshot_png() == before


@pytest.mark.parametrize("backend", ["simphone", "adb"], indirect=True)
def test_zero_notch_scrolls_do_not_tap(backend: tuple[GesturePhone, Any]) -> None:
    """A swipe of no length is a tap: a scroll by 0 must not press whatever is in the middle."""
    phone, device = backend
    for reply in ('{"action": "scroll", "pixels": 0}', '{"action": "hscroll", "pixels": 0}'):
        assert device.execute(parse_action(reply)).ok
    assert phone.gestures == []


@pytest.mark.parametrize(
    ("reply", "field_name"),
    [
        (mobile('{"action": "long_press", "coordinate": [5, 5], "time": -1}'), "time"),
        (mobile('{"action": "long_press", "coordinate": [5, 5], "time": "long"}'), "time"),
        (mobile('{"action": "long_press", "coordinate": [5, 5], "time": 2, "duration_ms": 9}'), "time"),
        ('{"name": "computer_use", "arguments": {"action": "hscroll"}}', "pixels"),
        ('{"name": "computer_use", "arguments": {"action": "left_click_drag"}}', "coordinate"),
        (mobile('{"action": "interact", "text": " "}'), "text"),
    ],
)
def test_bad_gui_owl_replies_name_the_field(reply: str, field_name: str) -> None:
    with pytest.raises(ActionParseError) as info:
        parse_action(reply)
    assert info.value.field == field_name and info.value.hint


# --- desktop ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def computer(xvfb: Any) -> Iterator[Any]:
    from agent_runtime.devices.registry import resolve_device

    device = resolve_device(f"desktop:{xvfb.display}", settle_timeout_s=0.5, accessibility=False)
    yield device
    device.close()


@pytest.fixture(scope="module")
def probe(xvfb: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProbeApp]:
    """One probe app for the module: rows check what changed, so their order does not matter."""
    with probe_app(xvfb.display, tmp_path_factory.mktemp("probe") / "state.json") as app:
        yield app


def probe_points(app: ProbeApp) -> dict[str, list[float]]:
    """Widget centres, and nine spots across the target label: rows click on different spots, so
    Tk never joins one row's clicks to another's into a double or triple click."""
    points = {name: app.centre(name) for name in ("button", "entry", "listbox")}
    points.update({f"t{i}": app.centre("target", i / 10) for i in range(1, 10)})
    return points


def near(a: list[float], b: list[float]) -> bool:
    return abs(a[0] - b[0]) <= 1 and abs(a[1] - b[1]) <= 1


@dataclass(frozen=True)
class DesktopRow:
    reply: str  #: the computer_use arguments as GUI-Owl writes them
    parsed: str  #: fields of the parsed action's JSON form
    #: (before, after, points, result) -> True once the app shows the effect
    saw: Callable[[dict[str, Any], dict[str, Any], dict[str, list[float]], ActionResult], bool]
    setup: tuple[str, ...] = ()  #: replies run first


def bumped(counter: str) -> Callable[..., bool]:
    return lambda before, after, points, result: after[counter] == before[counter] + 1


def dragged(start: str, end: str) -> Callable[..., bool]:
    return lambda before, after, points, result: (
        near(after["press"], points[start]) and near(after["release"], points[end])
    )


def nothing_but(**data: Any) -> Callable[..., bool]:
    """The result carries ``data`` and the app saw nothing."""

    def saw(before: dict[str, Any], after: dict[str, Any], points: Any, result: ActionResult) -> bool:
        assert result.data.items() >= data.items()
        return after == before

    return saw


DESKTOP_ROWS = {
    "left_click": DesktopRow(
        '{"action": "left_click", "coordinate": $button}', '{"action": "click"}', bumped("clicks")
    ),
    "right_click": DesktopRow(
        '{"action": "right_click", "coordinate": $t1}', '{"action": "right_click"}', bumped("right_clicks")
    ),
    "middle_click": DesktopRow(
        '{"action": "middle_click", "coordinate": $t2}', '{"action": "middle_click"}', bumped("middle_clicks")
    ),
    "double_click": DesktopRow(
        '{"action": "double_click", "coordinate": $t3}', '{"action": "double_click"}', bumped("double_clicks")
    ),
    "triple_click": DesktopRow(
        '{"action": "triple_click", "coordinate": $t4}', '{"action": "triple_click"}', bumped("triple_clicks")
    ),
    "mouse_move": DesktopRow(
        '{"action": "mouse_move", "coordinate": $t5}',
        '{"action": "mouse_move"}',
        lambda before, after, points, result: near(after["pointer"], points["t5"]),
    ),
    "left_click_drag from the pointer": DesktopRow(
        '{"action": "left_click_drag", "coordinate": $t8}',
        '{"action": "left_click_drag", "coordinate": $t8}',
        dragged("t6", "t8"),
        setup=('{"action": "mouse_move", "coordinate": $t6}',),
    ),
    "drag two points": DesktopRow(
        '{"action": "drag", "coordinate": $t9, "coordinate2": $t7}', '{"action": "drag"}', dragged("t9", "t7")
    ),
    "scroll": DesktopRow(
        '{"action": "scroll", "pixels": -3, "coordinate": $listbox}',
        '{"action": "scroll", "pixels": -3}',
        lambda before, after, points, result: after["list_top"] > before["list_top"],
    ),
    "hscroll right": DesktopRow(
        '{"action": "hscroll", "pixels": 2, "coordinate": $t5}',
        '{"action": "hscroll", "pixels": 2}',
        lambda before, after, points, result: after["hscroll"] == [*before["hscroll"], "right", "right"],
    ),
    "hscroll left": DesktopRow(
        '{"action": "hscroll", "pixels": -1, "coordinate": $t5}',
        '{"action": "hscroll", "pixels": -1}',
        lambda before, after, points, result: after["hscroll"] == [*before["hscroll"], "left"],
    ),
    "key combo": DesktopRow(
        '{"action": "key", "keys": ["ctrl", "k"]}',
        '{"action": "key", "keys": ["ctrl", "k"]}',
        lambda before, after, points, result: after["keys"] == [*before["keys"], "ctrl+k"],
        setup=('{"action": "mouse_move", "coordinate": $t5}',),  # keys go to the window under the pointer
    ),
    "type clear enter": DesktopRow(
        '{"action": "type", "text": "new text", "clear": 1, "enter": 1}',
        '{"action": "type", "text": "new text", "clear": true, "enter": true}',
        lambda before, after, points, result: (
            after["entry"] == "new text" and after["submitted"] == [*before["submitted"], "new text"]
        ),
        setup=(
            '{"action": "left_click", "coordinate": $entry}',
            '{"action": "type", "text": "old text"}',
        ),
    ),
    "wait": DesktopRow('{"action": "wait", "time": 0.3}', '{"action": "wait", "time": 0.3}', nothing_but()),
    "terminate": DesktopRow(
        '{"action": "terminate", "status": "success"}',
        '{"action": "terminate"}',
        nothing_but(status="success"),
    ),
    "answer": DesktopRow(
        '{"action": "answer", "text": "42"}', '{"action": "answer"}', nothing_but(answer="42")
    ),
    "interact": DesktopRow(
        '{"action": "interact", "text": "Save or discard?"}',
        '{"action": "interact"}',
        nothing_but(question="Save or discard?"),
    ),
}


def computer_use(args: str) -> str:
    return f'{{"name": "computer_use", "arguments": {args}}}'


@pytest.mark.desktop
@needs_xvfb
@needs_xdotool
@pytest.mark.parametrize("row", list(DESKTOP_ROWS.values()), ids=list(DESKTOP_ROWS))
def test_gui_owl_desktop_reply_runs(row: DesktopRow, computer: Any, probe: ProbeApp) -> None:
    points = probe_points(probe)
    for step in row.setup:
        assert computer.execute(parse_action(computer_use(fill(step, points)))).ok
    time.sleep(0.1)  # the app writes its state every 30 ms: let it report earlier rows and the setup
    before = probe.state()
    action = parses_to(computer_use(fill(row.reply, points)), fill(row.parsed, points), "desktop")
    started = time.monotonic()
    result = computer.execute(action)
    assert result.ok, result.error
    if action.action == "wait":
        assert time.monotonic() - started >= 0.3
    probe.wait_for(lambda after: row.saw(before, after, points, result))
