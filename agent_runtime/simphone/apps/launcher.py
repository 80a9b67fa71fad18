"""Launcher (``com.android.launcher3``, activity ``com.android.launcher3.Launcher``).

State — :class:`LauncherState`:
    ``home``: packages on the home-screen grid, in order; ``dock``: packages in the dock.
    Apps on neither are only in the all-apps drawer. With ``randomize=True`` the slots shuffle.

Screens:
    * ``main`` (home): date line (``Monday, March 3``), a 4-column icon grid, the dock and an
      ``Apps`` button (content-desc ``Apps``). Icons are clickable TextViews whose text and
      content-desc are the app label (``Settings``, ``Clock``…). Swiping up opens the drawer.
    * ``drawer``: an EditText ``Search apps`` (resource-id ``search_box``) filtering an
      alphabetical grid of every app. Back or a swipe down closes it.

Long-pressing an icon (home, dock or drawer) opens its shortcut menu, a dialog titled with the app
label: ``Open`` (resource-id ``shortcut_open``) and ``App info`` (``shortcut_app_info``). App info
shows the label and package, with ``Force stop`` and ``OK``. Back or Cancel closes the menu.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App, Dialog
from agent_runtime.simphone.ui.theme import ICON_COLORS
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

LAUNCHER_PACKAGE = "com.android.launcher3"

_HOME = ["com.android.deskclock", "com.android.calendar", "com.android.settings", "com.simphone.notes"]
_DOCK = ["com.android.messaging", "com.android.contacts", "com.android.browser"]


@dataclass
class LauncherState:
    home: list[str] = field(default_factory=lambda: list(_HOME))
    dock: list[str] = field(default_factory=lambda: list(_DOCK))


class LauncherApp(App):
    package = LAUNCHER_PACKAGE
    label = "Launcher"
    activity = "com.android.launcher3.Launcher"

    def initial_state(self, rng: random.Random) -> LauncherState:
        state = LauncherState()
        if self.phone.randomize:
            slots = state.home + state.dock
            rng.shuffle(slots)
            state.home, state.dock = slots[: len(_HOME)], slots[len(_HOME) :]
        return state

    def _installed(self) -> dict[str, str]:
        return {p: label for p, label in self.phone.packages().items() if p != LAUNCHER_PACKAGE}

    def build(self, ui: UI) -> View:
        if self.screen.name == "drawer":
            return self._drawer(ui)
        return self._home(ui)

    def _icon(self, ui: UI, package: str, label: str, on_dark: bool) -> View:
        t = ui.t
        size = ui.dp(56)
        cell = View(
            cls="android.widget.TextView",
            text=label,
            desc=label,
            rid="icon",
            direction="col",
            align="center",
            weight=1.0,
            h=ui.dp(96),
            pad=(0, ui.dp(6), 0, 0),
            gap=ui.dp(6),
            clickable=True,
            long_clickable=True,
            focusable=True,
            on_click=lambda: self.phone.launch(package),
            on_long_click=self._shortcuts(package, label),
        )
        badge = View(
            kind="text",
            cls="android.widget.ImageView",
            text=label[:1],
            size=t.sp(24),
            bold=True,
            fg=(255, 255, 255),
            bg=ICON_COLORS.get(package, (120, 120, 120)),
            radius=ui.dp(18),
            w=size,
            h=size,
            align="center",
            in_xml=False,
        )
        name = View(
            kind="text",
            cls="android.widget.TextView",
            text=label,
            size=t.sp(12),
            fg=(255, 255, 255) if on_dark else t.on_bg,
            align="center",
            in_xml=False,
        )
        return cell.add(badge, name)

    def _shortcuts(self, package: str, label: str) -> Callable[[], None]:
        """The long-press menu of an icon: Open, App info."""

        def open_app() -> None:
            self.close_dialog()
            self.phone.launch(package)

        def app_info() -> None:
            self.show(self._app_info(package, label))

        def show() -> None:
            self.show(
                Dialog(
                    title=label,
                    body=lambda ui: [
                        ui.list_item("Open", on_click=open_app, rid="shortcut_open"),
                        ui.list_item("App info", package, on_click=app_info, rid="shortcut_app_info"),
                    ],
                    buttons=[("Cancel", self.close_dialog)],
                )
            )

        return show

    def _app_info(self, package: str, label: str) -> Dialog:
        def force_stop() -> None:
            self.close_dialog()
            self.phone.force_stop(package)
            self.toast(f"{label} stopped")

        return Dialog(
            title="App info",
            body=lambda ui: [
                ui.text(label, 20, bold=True, rid="app_name", pad=(24, 0, 24, 4)),
                ui.text(package, 14, muted=True, rid="app_package", pad=(24, 0, 24, 8)),
            ],
            buttons=[("Force stop", force_stop), ("OK", self.close_dialog)],
        )

    def _grid(self, ui: UI, items: list[tuple[str, str]], on_dark: bool, columns: int = 4) -> list[View]:
        rows = []
        for i in range(0, len(items), columns):
            chunk = [self._icon(ui, p, label, on_dark) for p, label in items[i : i + columns]]
            while len(chunk) < columns:
                chunk.append(View(cls="android.view.View", weight=1.0, in_xml=False))
            r = ui.row(*chunk)
            r.h = ui.dp(104)
            rows.append(r)
        return rows

    def _home(self, ui: UI) -> View:
        t = ui.t
        installed = self._installed()
        now = self.phone.now
        root = View(cls="android.widget.FrameLayout", rid="launcher", direction="stack")
        root.add(
            View(
                kind="image", cls="android.view.View", shape=f"wallpaper:{self.phone.wallpaper}", in_xml=False
            )
        )
        date = View(
            kind="text",
            cls="android.widget.TextView",
            rid="date",
            text=now.strftime("%A, %B %-d"),
            size=t.sp(22),
            fg=(255, 255, 255),
            pad=(ui.dp(24), 0, ui.dp(24), 0),
        )
        home = [(p, installed[p]) for p in self.state.home if p in installed]
        dock = [(p, installed[p]) for p in self.state.dock if p in installed]
        apps_button = View(
            cls="android.widget.TextView",
            text="Apps",
            desc="Apps",
            rid="all_apps_button",
            direction="col",
            align="center",
            weight=1.0,
            h=ui.dp(96),
            pad=(0, ui.dp(6), 0, 0),
            gap=ui.dp(6),
            clickable=True,
            focusable=True,
            on_click=lambda: self.push("drawer"),
        )
        apps_button.add(
            View(
                kind="icon",
                cls="android.widget.ImageView",
                shape="apps",
                fg=(60, 60, 70),
                bg=(235, 235, 240),
                radius=ui.dp(28),
                w=ui.dp(56),
                h=ui.dp(56),
                pad=(ui.dp(16),) * 4,
                in_xml=False,
            ),
            View(
                kind="text",
                cls="android.widget.TextView",
                text="Apps",
                size=t.sp(12),
                fg=(255, 255, 255),
                align="center",
                in_xml=False,
            ),
        )
        dock_row = ui.row(*[self._icon(ui, p, label, True) for p, label in dock], apps_button)
        dock_row.rid = "hotseat"
        dock_row.h = ui.dp(104)
        hint = View(
            kind="text",
            cls="android.widget.TextView",
            text="Swipe up for all apps",
            size=t.sp(12),
            fg=(220, 220, 230),
            align="center",
            h=ui.dp(24),
            in_xml=False,
        )
        column = ui.col(
            ui.spacer(h=32 + 24),
            date,
            ui.spacer(h=24),
            *self._grid(ui, home, True),
            ui.spacer(weight=1.0),
            hint,
            dock_row,
            ui.spacer(h=48 + 8),
            pad=(8, 0, 8, 0),
        )
        column.rid = "workspace"
        return root.add(column)

    def _drawer(self, ui: UI) -> View:
        t = ui.t
        query = self.field("search").strip().lower()
        items = sorted(self._installed().items(), key=lambda kv: kv[1].lower())
        if query:
            items = [(p, label) for p, label in items if query in label.lower()]
        search = ui.edit("search", "Search apps", rid="search_box")
        search.radius = ui.dp(28)
        body: list[View | None] = [ui.col(search, pad=(16, 16, 16, 8))]
        body += self._grid(ui, items, t.dark) if items else [ui.empty(f"No apps match “{query}”")]
        page = ui.col(ui.scroll("apps", body))
        page.bg = t.surface
        page.rid = "apps_view"
        return page

    def on_swipe(self, x1: int, y1: int, x2: int, y2: int) -> bool:
        dy = y2 - y1
        threshold = self.phone.theme.dp(60)
        if self.screen.name == "main" and dy < -threshold:
            self.push("drawer")
            return True
        if self.screen.name == "drawer" and dy > threshold:
            self.pop()
            return True
        return False
