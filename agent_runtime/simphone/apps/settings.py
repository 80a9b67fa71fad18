"""Settings (``com.android.settings``, label ``Settings``).

State — :class:`SettingsState` (tasks may set and check every field):
    ``wifi`` (bool), ``wifi_network`` (connected SSID, "" when none), ``networks`` (SSIDs in
    range), ``bluetooth`` (bool), ``paired_devices`` (names), ``airplane_mode`` (bool),
    ``dark_theme`` (bool; switches the whole phone's theme), ``brightness`` (0–100),
    ``font_scale`` (0.85/1.0/1.15/1.3 = Small/Default/Large/Largest; scales all text),
    ``screen_timeout`` (one of :data:`TIMEOUTS`), ``media_volume`` / ``ring_volume`` (0–100),
    ``do_not_disturb`` (bool), ``battery_saver`` (bool), ``device_name`` (str).

Screens (app-bar titles; list-item titles in quotes):
    * ``main`` "Settings": "Network & internet", "Connected devices", "Display",
      "Sound & vibration", "Battery", "About phone".
    * ``network`` "Network & internet": "Wi-Fi" (row opens the Wi-Fi page; its Switch toggles
      Wi-Fi), "Airplane mode" switch, "Mobile network".
    * ``wifi`` "Wi-Fi": "Use Wi-Fi" switch, then one item per network (summary "Connected" on
      the current one); tapping a network connects to it.
    * ``devices`` "Connected devices": "Bluetooth" switch, "Paired devices" section.
    * ``display`` "Display": "Brightness level" SeekBar (tap position sets 0–100), "Dark theme"
      switch, "Font size" (choice dialog), "Screen timeout" (choice dialog).
    * ``sound`` "Sound & vibration": "Media volume" and "Ring volume" SeekBars,
      "Do Not Disturb" switch.
    * ``battery`` "Battery": level text, "Battery Saver" switch.
    * ``about`` "About phone": "Device name" (prompt dialog), "Android version" 14, "Model".
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

TIMEOUTS = ("15 seconds", "30 seconds", "1 minute", "2 minutes", "5 minutes", "10 minutes")
FONT_SIZES = {"Small": 0.85, "Default": 1.0, "Large": 1.15, "Largest": 1.3}
_SSIDS = (
    "HomeNet-5G",
    "CoffeeCorner",
    "Office-Guest",
    "Library WiFi",
    "Airport_Free",
    "Apt 4B",
    "NETGEAR-2G",
    "Pixel Hotspot",
)
_DEVICES = ("Pixel Buds", "Car Audio", "JBL Flip 5", "Galaxy Watch", "Bose QC45")


@dataclass
class SettingsState:
    wifi: bool = True
    wifi_network: str = "HomeNet-5G"
    networks: list[str] = field(default_factory=lambda: list(_SSIDS[:4]))
    bluetooth: bool = False
    paired_devices: list[str] = field(default_factory=lambda: list(_DEVICES[:2]))
    airplane_mode: bool = False
    dark_theme: bool = False
    brightness: int = 60
    font_scale: float = 1.0
    screen_timeout: str = "30 seconds"
    media_volume: int = 50
    ring_volume: int = 70
    do_not_disturb: bool = False
    battery_saver: bool = False
    device_name: str = "SimPhone"


_TITLES = {
    "main": "Settings",
    "network": "Network & internet",
    "wifi": "Wi-Fi",
    "devices": "Connected devices",
    "display": "Display",
    "sound": "Sound & vibration",
    "battery": "Battery",
    "about": "About phone",
}


class SettingsApp(App):
    package = "com.android.settings"
    label = "Settings"
    activity = "com.android.settings.Settings"

    def initial_state(self, rng: random.Random) -> SettingsState:
        networks = rng.sample(_SSIDS, 4)
        state = SettingsState(
            wifi_network=networks[0],
            networks=networks,
            paired_devices=rng.sample(_DEVICES, 2),
            brightness=rng.randrange(30, 90, 5),
            media_volume=rng.randrange(20, 80, 10),
        )
        state.dark_theme = self.phone.dark_default
        state.font_scale = self.phone.font_scale_default
        return state

    def activity_name(self) -> str:
        return self.activity if self.screen.name == "main" else "com.android.settings.SubSettings"

    def build(self, ui: UI) -> View:
        name = self.screen.name
        body = getattr(self, f"_{name}")(ui)
        return ui.page(_TITLES[name], body, back=name != "main", scroll_key=name)

    def _set(self, attr: str, value: object) -> Callable[[], None]:
        def run() -> None:
            setattr(self.state, attr, value)

        return run

    def _toggle(self, attr: str) -> Callable[[], None]:
        def run() -> None:
            setattr(self.state, attr, not getattr(self.state, attr))
            if attr == "wifi" and not self.state.wifi:
                self.state.wifi_network = ""
            if attr == "airplane_mode" and self.state.airplane_mode:
                self.state.wifi, self.state.bluetooth, self.state.wifi_network = False, False, ""

        return run

    def _main(self, ui: UI) -> list[View | None]:
        s = self.state
        go = self._go
        wifi = (
            f"Wi-Fi: {s.wifi_network}"
            if s.wifi and s.wifi_network
            else ("Wi-Fi on" if s.wifi else "Wi-Fi off")
        )
        return [
            ui.list_item("Network & internet", wifi, go("network"), leading=ui.icon("wifi"), rid="network"),
            ui.list_item(
                "Connected devices",
                "Bluetooth on" if s.bluetooth else "Bluetooth off",
                go("devices"),
                leading=ui.icon("bluetooth"),
                rid="devices",
            ),
            ui.list_item(
                "Display",
                "Dark theme, font size, brightness",
                go("display"),
                leading=ui.icon("dot"),
                rid="display",
            ),
            ui.list_item(
                "Sound & vibration",
                f"Media volume {s.media_volume}%",
                go("sound"),
                leading=ui.icon("alarm"),
                rid="sound",
            ),
            ui.list_item(
                "Battery",
                f"{self.phone.battery}%",
                go("battery"),
                leading=ui.icon(f"battery:{self.phone.battery}"),
                rid="battery",
            ),
            ui.list_item("About phone", s.device_name, go("about"), leading=ui.icon("more"), rid="about"),
        ]

    def _go(self, name: str) -> Callable[[], None]:
        def run() -> None:
            self.push(name)

        return run

    def _network(self, ui: UI) -> list[View | None]:
        s = self.state
        summary = s.wifi_network if s.wifi and s.wifi_network else ("On" if s.wifi else "Off")
        wifi_row = ui.list_item(
            "Wi-Fi",
            summary,
            self._go("wifi"),
            trailing=ui.switch(s.wifi, self._toggle("wifi"), desc="Wi-Fi"),
            rid="wifi",
        )
        return [
            wifi_row,
            ui.switch_row(
                "Airplane mode", s.airplane_mode, self._toggle("airplane_mode"), rid="airplane_mode"
            ),
            ui.list_item(
                "Mobile network", "Off" if s.airplane_mode else "SimMobile", None, rid="mobile_network"
            ),
        ]

    def _wifi(self, ui: UI) -> list[View | None]:
        s = self.state
        body: list[View | None] = [ui.switch_row("Use Wi-Fi", s.wifi, self._toggle("wifi"), rid="use_wifi")]
        if not s.wifi:
            body.append(ui.empty("To see available networks, turn Wi-Fi on."))
            return body
        body.append(ui.section("Available networks"))
        ordered = sorted(s.networks, key=lambda n: n != s.wifi_network)
        for ssid in ordered:
            connected = ssid == s.wifi_network
            body.append(
                ui.list_item(
                    ssid,
                    "Connected" if connected else "Saved",
                    self._connect(ssid),
                    leading=ui.icon("wifi", ui.t.primary if connected else None),
                    rid="network_item",
                )
            )
        return body

    def _connect(self, ssid: str) -> Callable[[], None]:
        def run() -> None:
            self.state.wifi_network = ssid
            self.toast(f"Connected to {ssid}")

        return run

    def _devices(self, ui: UI) -> list[View | None]:
        s = self.state
        body: list[View | None] = [
            ui.switch_row(
                "Bluetooth",
                s.bluetooth,
                self._toggle("bluetooth"),
                summary="On" if s.bluetooth else "Off",
                rid="bluetooth",
            )
        ]
        body.append(ui.section("Paired devices"))
        for name in s.paired_devices:
            body.append(
                ui.list_item(
                    name,
                    "Available" if s.bluetooth else "Turn on Bluetooth to connect",
                    None,
                    leading=ui.icon("bluetooth"),
                )
            )
        return body

    def _seek(self, attr: str) -> Callable[[float], None]:
        def run(value: float) -> None:
            setattr(self.state, attr, round(value * 100))

        return run

    def _display(self, ui: UI) -> list[View | None]:
        s = self.state
        size_name = next((k for k, v in FONT_SIZES.items() if abs(v - s.font_scale) < 0.01), "Default")
        return [
            ui.section("Brightness"),
            ui.text("Brightness level", 16, pad=(16, 4, 16, 0)),
            ui.seek("Brightness level", s.brightness / 100, self._seek("brightness"), rid="brightness"),
            ui.switch_row(
                "Dark theme",
                s.dark_theme,
                self._toggle("dark_theme"),
                summary="Use a dark background",
                rid="dark_theme",
            ),
            ui.list_item(
                "Font size",
                size_name,
                self._choose(
                    "Font size",
                    list(FONT_SIZES),
                    size_name,
                    lambda v: setattr(self.state, "font_scale", FONT_SIZES[v]),
                ),
                rid="font_size",
            ),
            ui.list_item(
                "Screen timeout",
                f"After {s.screen_timeout} of inactivity",
                self._choose(
                    "Screen timeout",
                    list(TIMEOUTS),
                    s.screen_timeout,
                    lambda v: setattr(self.state, "screen_timeout", v),
                ),
                rid="screen_timeout",
            ),
        ]

    def _choose(
        self, title: str, options: list[str], current: str, apply: Callable[[str], None]
    ) -> Callable[[], None]:
        return lambda: self.show(dialogs.choice(self, title, options, current, apply))

    def _sound(self, ui: UI) -> list[View | None]:
        s = self.state
        return [
            ui.text("Media volume", 16, pad=(16, 12, 16, 0)),
            ui.seek("Media volume", s.media_volume / 100, self._seek("media_volume"), rid="media_volume"),
            ui.text("Ring volume", 16, pad=(16, 12, 16, 0)),
            ui.seek("Ring volume", s.ring_volume / 100, self._seek("ring_volume"), rid="ring_volume"),
            ui.switch_row(
                "Do Not Disturb",
                s.do_not_disturb,
                self._toggle("do_not_disturb"),
                summary="On" if s.do_not_disturb else "Off",
                rid="do_not_disturb",
            ),
        ]

    def _battery(self, ui: UI) -> list[View | None]:
        s = self.state
        return [
            ui.text(f"{self.phone.battery}%", 40, pad=(16, 16, 16, 0), rid="battery_level"),
            ui.text("Battery level", 14, muted=True, pad=(16, 0, 16, 16)),
            ui.switch_row(
                "Battery Saver",
                s.battery_saver,
                self._toggle("battery_saver"),
                summary="Extends battery life",
                rid="battery_saver",
            ),
        ]

    def _about(self, ui: UI) -> list[View | None]:
        s = self.state

        def rename() -> None:
            self.show(
                dialogs.prompt(
                    self,
                    "Device name",
                    "Device name",
                    s.device_name,
                    lambda v: setattr(self.state, "device_name", v.strip() or s.device_name),
                )
            )

        return [
            ui.list_item("Device name", s.device_name, rename, rid="device_name"),
            ui.list_item("Model", "SimPhone 1", None),
            ui.list_item("Android version", "14", None),
            ui.list_item("Build number", f"SIM1.{self.phone.seed:06d}", None),
        ]
