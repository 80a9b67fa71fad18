"""Compose one full screen: the foreground app's content plus dialog, toast, status bar,
keyboard and navigation bar, each placed in its window rectangle (like Android's windows).

With the keyboard up the app area shrinks above it (``adjustResize``), so focused fields and
their screens stay visible and tappable.
"""

from __future__ import annotations

from typing import Protocol

from agent_runtime.coords import Size
from agent_runtime.simphone.app import AppHost
from agent_runtime.simphone.apps.launcher import LAUNCHER_PACKAGE
from agent_runtime.simphone.system import (
    nav_bar,
    nav_bar_height,
    status_bar,
    status_bar_height,
    toast,
)
from agent_runtime.simphone.ui.dialogs import build_dialog
from agent_runtime.simphone.ui.keyboard import KeyboardState, build_keyboard, keyboard_height
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI


class Display(AppHost, Protocol):
    """The phone as one frame shows it: its apps plus the toast, the soft keyboard and the
    system bars' buttons (the phone calls :func:`compose_screen` with itself)."""

    foreground: str
    keyboard: KeyboardState

    @property
    def size(self) -> Size: ...

    @property
    def toast_text(self) -> str | None: ...

    def key(self, code: int) -> None: ...

    def key_typed(self, text: str) -> None: ...

    def home(self) -> None: ...

    def recents(self) -> None: ...


def compose_screen(phone: Display) -> View:
    """The root view of the current screen (not laid out yet)."""
    t = phone.theme
    w, h = phone.size
    app = phone.apps[phone.foreground]
    screen = app.screen
    sb, nb = status_bar_height(t), nav_bar_height(t)
    kb = keyboard_height(t) if screen.owner.focus is not None else 0
    # The home screen draws its wallpaper edge to edge under transparent system bars.
    home = phone.foreground == LAUNCHER_PACKAGE and screen.name == "main"
    app_area = (0, sb, w, h - nb - kb)
    root = View(cls="android.widget.FrameLayout", direction="stack", package=app.package)
    content = app.build(UI(t, phone, screen))
    content.pos = (0, 0, w, h) if home and not kb else app_area
    root.add(content)
    if screen.dialog is not None:
        dialog = screen.dialog

        def cancel() -> None:
            if dialog.on_cancel is not None:
                dialog.on_cancel()
            screen.dialog = None

        scrim, card = build_dialog(UI(t, phone, dialog), dialog, cancel)
        scrim.pos = (0, 0, w, h)
        root.add(scrim, View(direction="stack", pos=app_area).add(card))
    if phone.toast_text:
        root.add(View(direction="stack", pos=app_area).add(toast(t, phone.toast_text)))
    settings = phone.apps["com.android.settings"].state
    fg = (255, 255, 255) if home or t.dark else (30, 30, 34)
    bar_bg = None if home else t.bg
    bar = status_bar(
        t,
        phone.now,
        battery=phone.battery,
        wifi=bool(getattr(settings, "wifi", True)),
        bluetooth=bool(getattr(settings, "bluetooth", False)),
        airplane=bool(getattr(settings, "airplane_mode", False)),
        fg=fg,
        bg=bar_bg,
    )
    bar.pos = (0, 0, w, sb)
    root.add(bar)
    if kb:
        keys = build_keyboard(t, phone.keyboard, type_text=phone.key_typed, press=phone.key)
        keys.pos = (0, h - nb - kb, w, h - nb)
        root.add(keys)
    nav = nav_bar(t, back=phone.back, home=phone.home, recents=phone.recents, fg=fg, bg=bar_bg)
    nav.pos = (0, h - nb, w, h)
    return root.add(nav)
