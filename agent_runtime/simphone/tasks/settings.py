"""Settings tasks: toggles, Wi-Fi, sliders, choice dialogs, renaming, pages and a question.

State and screens are documented in :mod:`agent_runtime.simphone.apps.settings`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.settings import FONT_SIZES, TIMEOUTS, SettingsState
from agent_runtime.simphone.tasks.base import QuestionTask, Task
from agent_runtime.simphone.tasks.common import REACH_VERBS, SEEK_TOLERANCE, set_seek, showing
from agent_runtime.simphone.tasks.oracle import OracleUI

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.android.settings"
APP = "Settings"

#: Setting label -> (state attribute, the main-list item whose page holds its switch).
TOGGLES = {
    "Wi-Fi": ("wifi", "Network & internet"),
    "Bluetooth": ("bluetooth", "Connected devices"),
    "Airplane mode": ("airplane_mode", "Network & internet"),
    "Dark theme": ("dark_theme", "Display"),
    "Do Not Disturb": ("do_not_disturb", "Sound & vibration"),
    "Battery Saver": ("battery_saver", "Battery"),
}

#: Page title -> (screen name, main-list items to tap from the root to get there).
PAGES = {
    "Network & internet": ("network", ("Network & internet",)),
    "Wi-Fi": ("wifi", ("Network & internet", "Wi-Fi")),
    "Connected devices": ("devices", ("Connected devices",)),
    "Display": ("display", ("Display",)),
    "Sound & vibration": ("sound", ("Sound & vibration",)),
    "Battery": ("battery", ("Battery",)),
    "About phone": ("about", ("About phone",)),
}

NETWORKS = (
    "HomeNet-5G",
    "CoffeeCorner",
    "Office-Guest",
    "Library WiFi",
    "Airport_Free",
    "Apt 4B",
    "NETGEAR-2G",
)
DEVICE_NAMES = (
    "Ana's Phone",
    "Work Phone",
    "Pixel of Sam",
    "Kitchen Tablet",
    "Travel Phone",
    "Leo's SimPhone",
)


def settings_state(phone: SimPhone) -> SettingsState:
    state: SettingsState = phone.app(PACKAGE).state
    return state


def open_page(ui: OracleUI, *path: str) -> Iterator[Action]:
    """Open Settings and tap each list item of ``path`` in turn."""
    yield ui.open_app(APP)
    for item in path:
        yield from ui.tap(item, cls="TextView")


class SettingsToggle(Task):
    template = "Turn {state} {setting} in Settings."
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"setting": rng.choice(sorted(TOGGLES)), "state": rng.choice(["on", "off"])}

    @property
    def _target(self) -> bool:
        return bool(self.params["state"] == "on")

    def setup(self, phone: SimPhone) -> None:
        state = settings_state(phone)
        attr, _ = TOGGLES[self.params["setting"]]
        if attr in ("wifi", "bluetooth") and self._target:
            state.airplane_mode = False
        setattr(state, attr, not self._target)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        attr, _ = TOGGLES[self.params["setting"]]
        return 1.0 if getattr(settings_state(phone), attr) == self._target else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        setting = self.params["setting"]
        yield from open_page(ui, TOGGLES[setting][1])
        switch = ui.require(desc=setting, cls="Switch")
        if switch.has("checked") != self._target:
            yield ui.click(switch)


class SettingsConnectWifi(Task):
    template = "Connect the phone to the Wi-Fi network {ssid}."
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"ssid": rng.choice(NETWORKS)}

    def setup(self, phone: SimPhone) -> None:
        state = settings_state(phone)
        rng = self.rng()
        others = [s for s in NETWORKS if s != self.params["ssid"]]
        state.networks = rng.sample(others, 3) + [self.params["ssid"]]
        rng.shuffle(state.networks)
        state.airplane_mode = False
        state.wifi = rng.random() < 0.6
        state.wifi_network = next(s for s in state.networks if s != self.params["ssid"]) if state.wifi else ""

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        state = settings_state(phone)
        return 1.0 if state.wifi and state.wifi_network == self.params["ssid"] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_page(ui, "Network & internet", "Wi-Fi")
        use = ui.require(desc="Use Wi-Fi", cls="Switch")
        if not use.has("checked"):
            yield ui.click(use)
        yield from ui.tap(self.params["ssid"])


class SettingsBrightness(Task):
    template = "Set the screen brightness to {level}%."
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"level": rng.randrange(10, 101, 5)}

    def setup(self, phone: SimPhone) -> None:
        state = settings_state(phone)
        if abs(state.brightness - self.params["level"]) <= 10:
            state.brightness = (self.params["level"] + 40) % 100

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if abs(settings_state(phone).brightness - self.params["level"]) <= SEEK_TOLERANCE else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_page(ui, "Display")
        yield from set_seek(ui, self.params["level"], desc="Brightness level")


class SettingsVolume(Task):
    template = "Set the {stream} volume to {level}%."
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"stream": rng.choice(["media", "ring"]), "level": rng.randrange(0, 101, 10)}

    @property
    def _attr(self) -> str:
        return f"{self.params['stream']}_volume"

    def setup(self, phone: SimPhone) -> None:
        state = settings_state(phone)
        if abs(getattr(state, self._attr) - self.params["level"]) <= 10:
            setattr(state, self._attr, (self.params["level"] + 50) % 100)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        value = getattr(settings_state(phone), self._attr)
        return 1.0 if abs(value - self.params["level"]) <= SEEK_TOLERANCE else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_page(ui, "Sound & vibration")
        yield from set_seek(ui, self.params["level"], desc=f"{self.params['stream'].title()} volume")


class SettingsFontSize(Task):
    template = "Change the font size to {size}."
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"size": rng.choice(sorted(FONT_SIZES))}

    def setup(self, phone: SimPhone) -> None:
        state = settings_state(phone)
        others = [v for k, v in sorted(FONT_SIZES.items()) if k != self.params["size"]]
        state.font_scale = self.rng().choice(others)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if abs(settings_state(phone).font_scale - FONT_SIZES[self.params["size"]]) < 0.01 else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_page(ui, "Display", "Font size")
        yield from ui.tap(self.params["size"], cls="TextView")


class SettingsScreenTimeout(Task):
    template = "Make the screen turn off after {timeout} of inactivity."
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"timeout": rng.choice(TIMEOUTS)}

    def setup(self, phone: SimPhone) -> None:
        state = settings_state(phone)
        state.screen_timeout = self.rng().choice([t for t in TIMEOUTS if t != self.params["timeout"]])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if settings_state(phone).screen_timeout == self.params["timeout"] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_page(ui, "Display", "Screen timeout")
        yield from ui.tap(self.params["timeout"], cls="TextView")


class SettingsRenameDevice(Task):
    template = 'Rename this phone to "{name}".'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"name": rng.choice(DEVICE_NAMES)}

    def setup(self, phone: SimPhone) -> None:
        settings_state(phone).device_name = "SimPhone"

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if settings_state(phone).device_name == self.params["name"] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_page(ui, "About phone", "Device name")
        yield from ui.type_into(None, self.params["name"], cls="EditText")
        yield from ui.tap("OK", cls="Button")


class SettingsReachPage(Task):
    template = "{verb} the {page} page in Settings."
    app_names = (APP,)
    complexity = 0.6
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), "page": rng.choice(sorted(PAGES))}

    def setup(self, phone: SimPhone) -> None:
        phone.home()

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, PAGES[self.params["page"]][0]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_page(ui, *PAGES[self.params["page"]][1])


class SettingsWifiNetworkQuestion(QuestionTask):
    template = "Which Wi-Fi network is the phone connected to right now?"
    app_names = (APP,)
    complexity = 0.6

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        # The question text is fixed; the network (set in setup) is the parameter.
        return {"ssid": rng.choice(NETWORKS)}

    def setup(self, phone: SimPhone) -> None:
        state = settings_state(phone)
        others = [s for s in NETWORKS if s != self.params["ssid"]]
        state.networks = [self.params["ssid"], *self.rng().sample(others, 3)]
        state.wifi, state.airplane_mode, state.wifi_network = True, False, self.params["ssid"]

    def expected_answer(self) -> str:
        return str(self.params["ssid"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_page(ui, "Network & internet")
        row = ui.row_of(ui.require("Wi-Fi", cls="TextView"))
        summary = next(el for el in ui.children(row) if el.resource_id.endswith("summary"))
        yield ui.answer(summary.text)


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    SettingsToggle,
    SettingsConnectWifi,
    SettingsBrightness,
    SettingsVolume,
    SettingsFontSize,
    SettingsScreenTimeout,
    SettingsRenameDevice,
    SettingsReachPage,
    SettingsWifiNetworkQuestion,
)
