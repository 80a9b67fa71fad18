"""Resolve a device spec (``simphone:7``, ``adb:emulator-5554``, ``desktop::1``) to a device.

Backends are imported only when asked for, so ``import agent_runtime`` never loads adbutils or
pyautogui. A backend whose extra is missing fails with the ``pip install`` line that fixes it.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any

from agent_runtime.device import Device
from agent_runtime.errors import ConfigError, DependencyError


@dataclass(frozen=True)
class Backend:
    """Where a backend lives and what it needs installed."""

    module: str
    cls: str
    requires: tuple[str, ...]
    extra: str
    purpose: str


BACKENDS: dict[str, Backend] = {
    "simphone": Backend("agent_runtime.simphone", "SimPhone", (), "", "the SimPhone device"),
    "adb": Backend(
        "agent_runtime.devices.android.device", "AndroidDevice", ("adbutils",), "android", "an Android device"
    ),
    "desktop": Backend(
        "agent_runtime.devices.desktop.device",
        "DesktopDevice",
        ("mss", "pyautogui"),
        "desktop",
        "a desktop device",
    ),
}


def split_spec(spec: str) -> tuple[str, str | None]:
    """``"adb:SERIAL"`` → ``("adb", "SERIAL")``; ``"desktop::1"`` → ``("desktop", ":1")``."""
    kind, sep, arg = spec.strip().partition(":")
    kind = kind.lower()
    if kind not in BACKENDS:
        raise ConfigError(
            f"unknown device spec {spec!r}",
            hint="use simphone[:SEED], adb[:SERIAL] or desktop[:DISPLAY]",
        )
    return kind, (arg if sep and arg else None)


def check_backend(kind: str) -> Backend:
    """Raise :class:`DependencyError` if the backend's extra is not installed."""
    backend = BACKENDS[kind]
    for package in backend.requires:
        if importlib.util.find_spec(package) is None:
            raise DependencyError(package, backend.extra, backend.purpose)
    if importlib.util.find_spec(backend.module) is None:
        raise ConfigError(f"device backend {kind!r} is not part of this agent-runtime build")
    return backend


def resolve_device(spec: str, **options: Any) -> Device:
    """Create the device a spec names. ``options`` go to the backend's ``from_spec``."""
    kind, arg = split_spec(spec)
    backend = check_backend(kind)
    cls = getattr(importlib.import_module(backend.module), backend.cls)
    device: Device = cls.from_spec(arg, **options)
    return device
