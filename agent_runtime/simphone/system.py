"""System UI around the apps: status bar, navigation bar and toasts (package ``com.android.systemui``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from agent_runtime.simphone.ui.theme import Color, Theme
from agent_runtime.simphone.ui.view import View

SYSTEMUI = "com.android.systemui"


def status_bar_height(t: Theme) -> int:
    return t.dp(32)


def nav_bar_height(t: Theme) -> int:
    return t.dp(48)


def status_bar(
    t: Theme,
    now: dt.datetime,
    *,
    battery: int,
    wifi: bool,
    bluetooth: bool,
    airplane: bool,
    fg: Color,
    bg: Color | None,
) -> View:
    """Clock on the left; airplane/Bluetooth/Wi-Fi/signal/battery on the right."""
    bar = View(
        cls="android.widget.FrameLayout",
        rid="status_bar",
        package=SYSTEMUI,
        direction="row",
        align="center",
        bg=bg,
        pad=(t.dp(20), t.dp(4), t.dp(16), t.dp(4)),
        gap=t.dp(6),
    )
    clock = View(
        kind="text",
        cls="android.widget.TextView",
        rid="clock",
        text=f"{now.hour % 12 or 12}:{now.minute:02d}",
        size=t.sp(14),
        bold=True,
        fg=fg,
    )
    bar.add(clock, View(cls="android.view.View", weight=1.0))

    def icon(shape: str, desc: str, size: float = 16) -> View:
        return View(
            kind="icon",
            cls="android.widget.ImageView",
            shape=shape,
            desc=desc,
            fg=fg,
            w=t.dp(size),
            h=t.dp(size),
        )

    if airplane:
        bar.add(icon("plane", "Airplane mode on"))
    if bluetooth:
        bar.add(icon("bluetooth", "Bluetooth on"))
    if wifi and not airplane:
        bar.add(icon("wifi", "Wifi signal full."))
    if not airplane:
        bar.add(icon("signal", "Phone signal full.", 14))
    bar.add(icon(f"battery:{battery}", f"Battery {battery} percent.", 18))
    bar.add(
        View(
            kind="text",
            cls="android.widget.TextView",
            rid="battery_percent",
            text=f"{battery}%",
            size=t.sp(13),
            fg=fg,
        )
    )
    return bar


def nav_bar(
    t: Theme,
    *,
    back: Callable[[], None],
    home: Callable[[], None],
    recents: Callable[[], None],
    fg: Color,
    bg: Color | None,
) -> View:
    """Three-button navigation: Back, Home, Overview."""
    bar = View(
        cls="android.widget.FrameLayout",
        rid="navigation_bar_frame",
        package=SYSTEMUI,
        direction="row",
        bg=bg,
        pad=(t.dp(40), 0, t.dp(40), 0),
    )

    def button(shape: str, desc: str, rid: str, handler: Callable[[], None]) -> View:
        return View(
            kind="icon",
            cls="android.widget.ImageView",
            shape=shape,
            desc=desc,
            rid=rid,
            fg=fg,
            weight=1.0,
            pad=(t.dp(30), t.dp(14), t.dp(30), t.dp(14)),
            clickable=True,
            long_clickable=True,
            focusable=True,
            on_click=handler,
        )

    bar.add(
        button("back", "Back", "back", back),
        button("home", "Home", "home", home),
        button("recents", "Overview", "recent_apps", recents),
    )
    return bar


def toast(t: Theme, text: str) -> View:
    return View(
        kind="text",
        cls="android.widget.TextView",
        rid="toast_text",
        package=SYSTEMUI,
        text=text,
        size=t.sp(14),
        fg=(240, 240, 240),
        bg=(50, 50, 54),
        radius=t.dp(18),
        pad=(t.dp(16), t.dp(10), t.dp(16), t.dp(10)),
        w=min(t.width - t.dp(64), t.dp(24) + int(len(text) * t.sp(14) * 0.6) + t.dp(16)),
        lines=2,
        align="center",
        gravity="bottom",
        margin=t.dp(32),
    )
