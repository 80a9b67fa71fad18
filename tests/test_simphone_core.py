"""SimPhone core: launcher, navigation, keyboard, scrolling, rendering, XML, actions, determinism."""

from __future__ import annotations

import io
import threading

import pytest
from PIL import Image

from agent_runtime.actions import (
    Answer,
    Click,
    DoubleClick,
    Drag,
    Key,
    LongPress,
    OpenApp,
    Scroll,
    Swipe,
    SystemButton,
    Terminate,
    Type,
    Wait,
)
from agent_runtime.devices import resolve_device
from agent_runtime.errors import ConfigError, DeviceError
from agent_runtime.observation import parse_ui_xml
from agent_runtime.simphone import LAUNCHER_PACKAGE, SimPhone
from agent_runtime.simphone.ui.paint import paint_tree
from agent_runtime.simphone.ui.render import adler32_combine

SETTINGS = "com.android.settings"


def pixels(phone: SimPhone) -> Image.Image:
    return Image.open(io.BytesIO(phone.screenshot_png())).convert("RGB")


def labels(phone: SimPhone) -> set[str]:
    return {t for e in parse_ui_xml(phone.ui_xml()) for t in (e.text, e.content_desc) if t}


@pytest.fixture
def phone() -> SimPhone:
    return SimPhone(seed=3)


def test_registry_resolves_simphone_with_seed() -> None:
    device = resolve_device("simphone:7")
    assert isinstance(device, SimPhone)
    assert device.seed == 7 and device.screen_size == (1080, 2400)
    assert device.info().spec == "simphone:7"
    with pytest.raises(ConfigError):
        SimPhone.from_spec("seven")
    with pytest.raises(ConfigError):
        SimPhone.from_spec("1", colour="red")
    assert isinstance(device.lock, type(threading.RLock()))


def test_packages_and_labels(phone: SimPhone) -> None:
    labels_ = set(phone.packages().values())
    assert {
        "Settings",
        "Clock",
        "Contacts",
        "Messages",
        "Calendar",
        "Browser",
        "Notes",
        "Expenses",
        "Shop",
    } <= labels_
    assert phone.packages()[LAUNCHER_PACKAGE] == "Launcher"
    assert phone.current_focus() == ("com.android.launcher3", "com.android.launcher3.Launcher")
    with pytest.raises(DeviceError):
        phone.app("com.example.nope")
    assert phone.launch("com.example.nope") is False


def test_launcher_tap_opens_app_and_drawer_lists_all(phone: SimPhone) -> None:
    phone.tap_on("Settings")
    assert phone.current_focus()[0] == SETTINGS
    assert "Network & internet" in labels(phone)
    phone.home()
    assert "Shop" not in labels(phone)  # drawer-only app
    phone.swipe(540, 1900, 540, 700)
    assert {"Shop", "Expenses", "Search apps"} <= labels(phone)
    phone.tap_on("Shop")
    assert phone.current_focus()[0] == "com.simphone.shop"


def test_back_and_home_navigation(phone: SimPhone) -> None:
    phone.launch(SETTINGS)
    phone.tap_on("Display")
    assert phone.current_focus() == (SETTINGS, "com.android.settings.SubSettings")
    phone.back()
    assert "Network & internet" in labels(phone)
    phone.back()
    assert phone.current_focus()[0] == LAUNCHER_PACKAGE
    phone.launch(SETTINGS)
    phone.tap_on("Display")
    phone.key(3)  # HOME
    assert phone.current_focus()[0] == LAUNCHER_PACKAGE
    phone.launch(SETTINGS)  # resumes where it was, like a real task
    assert "Dark theme" in labels(phone)
    phone.tap_on("Navigate up")
    assert "Network & internet" in labels(phone)


def test_keyboard_appears_on_focus_and_is_in_xml(phone: SimPhone) -> None:
    phone.launch("com.android.contacts")
    assert "q" not in labels(phone)
    assert phone.execute(Type(text="x")).ok is False  # nothing focused
    phone.tap_on("search_box")
    nodes = parse_ui_xml(phone.ui_xml())
    keys = {
        e.content_desc: e
        for e in nodes
        if e.package == "com.google.android.inputmethod.latin" and e.content_desc
    }
    assert {"q", "m", "Shift", "Delete", "Space", "Enter", "Symbols"} <= keys.keys()
    field = next(e for e in nodes if e.class_name == "android.widget.EditText")
    assert field.has("focused")
    # Tapping keys types; the keyboard is drawn where its nodes are.
    phone.tap(*keys["a"].bounds.center)
    phone.tap(*keys["n"].bounds.center)
    assert phone.find("search_box").text == "an"
    img = pixels(phone)
    kb = next(e for e in nodes if e.resource_id.endswith("keyboard_view"))
    assert img.getpixel((kb.bounds.x1 + 3, kb.bounds.y1 + 3)) == phone.theme.keyboard_bg
    phone.key(67)  # DEL
    assert phone.find("search_box").text == "a"
    phone.execute(Type(text="Zoë 名", clear=True))
    assert phone.find("search_box").text == "Zoë 名"
    phone.back()  # hides the keyboard first
    assert "Space" not in labels(phone) and phone.current_focus()[0] == "com.android.contacts"


def test_shift_and_symbol_layers(phone: SimPhone) -> None:
    phone.launch("com.android.contacts")
    phone.tap_on("search_box")
    phone.tap_on("Shift")
    phone.tap_on("H")
    phone.tap_on("i")  # shift is one-shot
    phone.tap_on("Symbols")
    phone.tap_on("7")
    assert phone.find("search_box").text == "Hi7"


def test_toggle_switch_changes_state_xml_and_pixels(phone: SimPhone) -> None:
    phone.launch(SETTINGS)
    phone.tap_on("Display")
    before = pixels(phone).getpixel((5, 1500))
    switch = next(
        e
        for e in parse_ui_xml(phone.ui_xml())
        if e.class_name == "android.widget.Switch" and e.content_desc == "Dark theme"
    )
    assert switch.has("checkable") and not switch.has("checked")
    phone.tap(*switch.bounds.center)
    assert phone.app(SETTINGS).state.dark_theme is True
    switch = next(e for e in parse_ui_xml(phone.ui_xml()) if e.content_desc == "Dark theme")
    assert switch.has("checked")
    after = pixels(phone).getpixel((5, 1500))
    assert sum(after) < sum(before)  # the whole phone went dark


def test_seek_bar_tap_sets_value(phone: SimPhone) -> None:
    phone.launch(SETTINGS)
    phone.tap_on("Display")
    bar = phone.find("Brightness level", clickable=True)
    assert bar is not None and bar.class_name == "android.widget.SeekBar"
    phone.tap(bar.bounds.x2 - 1, bar.bounds.center[1])
    assert phone.app(SETTINGS).state.brightness == 100
    phone.tap(bar.bounds.center[0], bar.bounds.center[1])
    assert 45 <= phone.app(SETTINGS).state.brightness <= 55


def test_scrolling_reveals_items_and_clips_bounds(phone: SimPhone) -> None:
    phone.launch("com.android.contacts")
    names = sorted(c.name for c in phone.app("com.android.contacts").state.contacts)
    assert names[-1] not in labels(phone)
    scroller = next(e for e in parse_ui_xml(phone.ui_xml()) if e.has("scrollable"))
    for _ in range(4):
        phone.swipe(540, 1800, 540, 700)
    assert names[-1] in labels(phone)
    assert names[0] not in labels(phone)
    for e in parse_ui_xml(phone.ui_xml()):
        if e.resource_id.endswith("contact_item"):
            assert e.bounds.inside(scroller.bounds)
    phone.execute(Scroll(pixels=20))  # wheel up: back to the top
    assert names[0] in labels(phone)


def test_xml_bounds_match_drawn_widgets(phone: SimPhone) -> None:
    phone.launch("com.android.contacts")
    img = pixels(phone)
    t = phone.theme
    fab = phone.find("Create contact")
    assert fab is not None
    cx, cy = fab.bounds.center
    assert img.getpixel((cx, cy - 40)) == t.primary  # inside, off the glyph
    assert img.getpixel((fab.bounds.x1 - 4, cy)) == t.bg  # just outside
    search = phone.find("search_box")
    assert img.getpixel((search.bounds.center[0], search.bounds.center[1])) != t.bg
    for el in parse_ui_xml(phone.ui_xml()):
        assert 0 <= el.bounds.x1 <= el.bounds.x2 <= 1080 and 0 <= el.bounds.y1 <= el.bounds.y2 <= 2400


def test_tap_hits_topmost_clickable(phone: SimPhone) -> None:
    phone.launch(SETTINGS)
    phone.tap_on("Display")
    phone.tap_on("Font size")  # opens a dialog over the page
    assert "Largest" in labels(phone)
    dark = phone.find("Dark theme")
    phone.tap(*dark.bounds.center)  # the scrim is on top: this cancels the dialog
    assert phone.app(SETTINGS).state.dark_theme is False
    assert "Largest" not in labels(phone)
    phone.tap_on("Font size")
    phone.back()
    assert "Largest" not in labels(phone) and "Dark theme" in labels(phone)


def test_png_bands_decode_to_the_full_render() -> None:
    phone = SimPhone(seed=1)
    for step in ("home", "app", "type"):
        if step == "app":
            phone.launch("com.android.contacts")
        if step == "type":
            phone.tap_on("search_box")
            phone.input_text("o")
        decoded = pixels(phone)
        frame = phone._current()
        ops = paint_tree(frame.root, phone.theme.density, phone.theme.bg)
        assert decoded.tobytes() == phone._renderer.image(ops).tobytes()


def test_adler32_combine_matches_zlib() -> None:
    import zlib

    a, b = b"hello " * 1000, b"world" * 777
    assert adler32_combine(zlib.adler32(a), zlib.adler32(b), len(b)) == zlib.adler32(a + b)


def test_same_seed_same_bytes_different_seed_differs() -> None:
    one, two, other = SimPhone(seed=11), SimPhone(seed=11), SimPhone(seed=12)
    for p in (one, two, other):
        p.launch("com.android.messaging")
    assert one.screenshot_png() == two.screenshot_png()
    assert one.ui_xml() == two.ui_xml()
    assert one.ui_xml() != other.ui_xml()
    assert one.now == two.now


def test_randomize_varies_look_deterministically() -> None:
    looks = set()
    for seed in range(6):
        a, b = SimPhone(seed, randomize=True), SimPhone(seed, randomize=True)
        assert a.screenshot_png() == b.screenshot_png()
        s = a.app(SETTINGS).state
        looks.add((a.wallpaper, s.dark_theme, s.font_scale, tuple(a.app(LAUNCHER_PACKAGE).state.home)))
    assert len(looks) >= 4
    plain = SimPhone(0)
    assert plain.app(SETTINGS).state.font_scale == 1.0 and plain.wallpaper == 0


def test_small_screen_still_lays_out() -> None:
    phone = SimPhone(seed=2, width=540, height=1200)
    phone.tap_on("Clock")
    img = pixels(phone)
    assert img.size == (540, 1200)
    assert phone.find("Add alarm") is not None


def test_execute_actions(phone: SimPhone) -> None:
    settings = phone.find("Settings")
    assert phone.execute(Click(coordinate=settings.bounds.center)).ok
    assert phone.current_focus()[0] == SETTINGS
    assert phone.execute(SystemButton(button="Home")).ok
    res = phone.execute(OpenApp(text="clock"))
    assert res.ok and phone.current_focus()[0] == "com.android.deskclock"
    assert phone.execute(OpenApp(text="Chrome")).ok and phone.current_focus()[0] == "com.android.browser"
    bad = phone.execute(OpenApp(text="Contacs"))
    assert bad.ok and phone.current_focus()[0] == "com.android.contacts"  # close enough
    bad = phone.execute(OpenApp(text="Photoshop"))
    assert not bad.ok and "installed apps" in bad.error
    near = phone.execute(OpenApp(text="Calender app"))
    assert near.ok or near.data.get("suggestions")
    before = phone.now
    assert phone.execute(Wait(time=45)).ok
    assert (phone.now - before).total_seconds() == 45
    assert phone.execute(Answer(text="42")).data["answer"] == "42"
    assert phone.execute(Terminate(status="success")).ok
    for desktop in (DoubleClick(coordinate=(1, 1)), Drag(coordinate=(1, 1), coordinate2=(5, 5))):
        res = phone.execute(desktop)
        assert not res.ok and "desktop action" in res.error
    assert not phone.execute(Key(keys=["ctrl", "c"])).ok
    assert phone.execute(Key(keys=["home"])).ok and phone.current_focus()[0] == LAUNCHER_PACKAGE
    assert phone.execute(Swipe(coordinate=(540, 1900), coordinate2=(540, 600))).ok
    assert "Search apps" in labels(phone)
    phone.execute(SystemButton(button="Back"))
    assert "Search apps" not in labels(phone)
    r = phone.execute(LongPress(coordinate=(540, 1200)))
    assert r.ok and r.duration_ms >= 0


def test_type_action_with_enter_submits(phone: SimPhone) -> None:
    phone.launch("com.android.browser")
    phone.tap_on("url_bar")
    res = phone.execute(Type(text="eiffel tower height", enter=True))
    assert res.ok
    assert "Eiffel Tower - SimWiki" in labels(phone)
    assert phone.focused_field() is None


def test_observe_reports_app_and_picks_up_state_changes(phone: SimPhone) -> None:
    obs = phone.observe()
    assert obs.app == LAUNCHER_PACKAGE and obs.size == (1080, 2400)
    assert obs.image().size == (1080, 2400)
    phone.launch(SETTINGS)
    phone.app(SETTINGS).state.device_name = "Pixel Test"
    assert any(e.text == "Pixel Test" for e in phone.observe().elements)
    assert phone.observe().activity == "com.android.settings.Settings"


def test_hostile_text_keeps_xml_valid_and_stays_fast(phone: SimPhone) -> None:
    import time

    phone.launch("com.simphone.notes")
    phone.tap_on("New note")
    phone.input_text('<b a="1">&amp;</b>\x00\x07\ud800 ok\ttab')
    phone.tap_on("note_title", cls="EditText")
    started = time.perf_counter()
    phone.input_text("x" * 5000)
    phone.tap_on("note_body", cls="EditText")
    phone.input_text("y" * 3000)
    obs = phone.observe()
    assert time.perf_counter() - started < 5
    body = next(e for e in obs.elements if e.resource_id.endswith("note_body"))
    assert body.text.startswith('<b a="1">&amp;</b> ok\ttab')
    assert pixels(phone).size == (1080, 2400)
