"""Per-phone Android state the shell keeps beside the SimPhone: settings, system properties, IMEs.

The input-method selection lives where Android keeps it, in ``settings secure
default_input_method`` / ``enabled_input_methods``, so ``ime set`` and ``settings put`` agree.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

LATIN_IME = "com.android.inputmethod.latin/.LatinIME"
ADB_IME = "com.android.adbkeyboard/.AdbIME"

#: Packages a phone has besides its apps (system UI, IMEs).
SYSTEM_PACKAGES = ("android", "com.android.systemui", "com.android.shell", "com.android.inputmethod.latin")

NAMESPACES = ("system", "secure", "global")


def package_version(package: str) -> tuple[str, int]:
    """``(versionName, versionCode)`` as ``dumpsys package`` shows them: Android 14's for system apps.

    >>> package_version("com.simphone.notes"), package_version("com.android.settings")
    (('1.4.2', 10402), ('14', 34))
    """
    if package.startswith("com.simphone."):
        return "1.4.2", 10402
    if package == "com.android.adbkeyboard":
        return "2.4-dev", 24
    return "14", 34


def default_settings(seed_key: str) -> dict[str, dict[str, str]]:
    android_id = hashlib.sha256(seed_key.encode()).hexdigest()[:16]
    return {
        "system": {
            "screen_brightness": "128",
            "screen_brightness_mode": "0",
            "screen_off_timeout": "600000",
            "accelerometer_rotation": "0",
            "user_rotation": "0",
            "font_scale": "1.0",
        },
        "secure": {
            "android_id": android_id,
            "default_input_method": LATIN_IME,
            "enabled_input_methods": LATIN_IME,
            "location_mode": "3",
        },
        "global": {
            "adb_enabled": "1",
            "airplane_mode_on": "0",
            "animator_duration_scale": "1.0",
            "auto_time": "1",
            "bluetooth_on": "0",
            "development_settings_enabled": "1",
            "transition_animation_scale": "1.0",
            "wifi_on": "1",
            "window_animation_scale": "1.0",
        },
    }


def default_props(serial: str, width: int, height: int) -> dict[str, str]:
    return {
        "init.svc.bootanim": "stopped",
        "persist.sys.locale": "en-US",
        "persist.sys.timezone": "UTC",
        "ro.boot.serialno": serial,
        "ro.build.characteristics": "emulator",
        "ro.build.fingerprint": "simphone/simphone/simphone:14/SIM1.0/1:user/release-keys",
        "ro.build.version.release": "14",
        "ro.build.version.sdk": "34",
        "ro.product.brand": "simphone",
        "ro.product.cpu.abi": "x86_64",
        "ro.product.device": "simphone",
        "ro.product.manufacturer": "agent-runtime",
        "ro.product.model": "SimPhone",
        "ro.product.name": "simphone",
        "ro.serialno": serial,
        "ro.sf.lcd_density": "420",
        "sys.boot_completed": "1",
        "vendor.simphone.screen": f"{width}x{height}",
    }


@dataclass
class InputMethods:
    """Installed/enabled/selected IMEs, stored in the ``secure`` settings like Android does."""

    settings: dict[str, dict[str, str]]
    installed: tuple[str, ...]

    @property
    def enabled(self) -> list[str]:
        raw = self.settings["secure"].get("enabled_input_methods", "")
        return [i for i in raw.split(":") if i in self.installed]

    @property
    def selected(self) -> str:
        return self.settings["secure"].get("default_input_method", "")

    def enable(self, ime: str) -> bool:
        """Enable ``ime``; False if it was already enabled."""
        current = self.enabled
        if ime in current:
            return False
        self.settings["secure"]["enabled_input_methods"] = ":".join([*current, ime])
        return True

    def disable(self, ime: str) -> bool:
        """Disable ``ime`` (selection falls back to the first enabled IME); False if it was off."""
        current = self.enabled
        if ime not in current:
            return False
        current.remove(ime)
        self.settings["secure"]["enabled_input_methods"] = ":".join(current)
        if self.selected == ime:
            self.settings["secure"]["default_input_method"] = current[0] if current else ""
        return True

    def select(self, ime: str) -> bool:
        """Make ``ime`` the current one. Android refuses IMEs that are unknown or not enabled."""
        if ime not in self.enabled:
            return False
        self.settings["secure"]["default_input_method"] = ime
        return True

    def set_installed(self, ime: str, installed: bool) -> None:
        """Install or uninstall an IME; uninstalling also disables it (and deselects it)."""
        if installed and ime not in self.installed:
            self.installed = (*self.installed, ime)
        elif not installed and ime in self.installed:
            self.disable(ime)
            self.installed = tuple(i for i in self.installed if i != ime)

    def reset(self) -> None:
        self.settings["secure"]["enabled_input_methods"] = LATIN_IME
        self.settings["secure"]["default_input_method"] = LATIN_IME

    @property
    def adb_keyboard_active(self) -> bool:
        """ADB Keyboard receives ``ADB_INPUT_*`` broadcasts only while it is the selected IME."""
        return ADB_IME in self.installed and self.selected == ADB_IME
