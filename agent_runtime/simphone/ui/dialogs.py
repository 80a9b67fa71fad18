"""Modal dialogs: confirm, single choice, text prompt, time picker and date picker.

Each function returns a :class:`Dialog` to pass to ``app.show``; the phone draws it as a card
over a dimmed screen (a tap on the dim area or Back cancels). Pickers work like Android's text
input mode: the hour/minute fields are EditTexts (tap, type digits) with ▲/▼ buttons beside
them, and the date picker is a month grid of day cells whose content-desc is the full date
(``"14 March 2025"``).
"""

from __future__ import annotations

import calendar
import datetime as dt
from collections.abc import Callable, Sequence

from agent_runtime.simphone.app import App, Dialog
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI


def confirm(app: App, title: str, message: str, ok_label: str, on_ok: Callable[[], None]) -> Dialog:
    def ok() -> None:
        app.close_dialog()
        on_ok()

    return Dialog(
        title=title,
        body=lambda ui: [ui.text(message, 16, muted=True, lines=0, pad=(24, 0, 24, 8))],
        buttons=[("Cancel", app.close_dialog), (ok_label, ok)],
    )


def choice(
    app: App, title: str, options: Sequence[str], selected: str | None, on_pick: Callable[[str], None]
) -> Dialog:
    """A single-choice list; picking an option applies it and closes the dialog."""

    def pick(option: str) -> Callable[[], None]:
        def run() -> None:
            app.close_dialog()
            on_pick(option)

        return run

    def body(ui: UI) -> list[View]:
        rows = []
        for option in options:
            radio = ui.checkbox(option == selected, pick(option), desc=option, radio=True)
            item = ui.list_item(option, on_click=pick(option), trailing=radio, selected=False)
            item.checkable, item.checked = True, option == selected
            rows.append(item)
        return rows

    return Dialog(title=title, body=body, buttons=[("Cancel", app.close_dialog)])


def prompt(
    app: App, title: str, hint: str, initial: str, on_ok: Callable[[str], None], ok_label: str = "OK"
) -> Dialog:
    dialog = Dialog(title=title, fields={"input": initial}, focus="input")

    def ok() -> None:
        app.close_dialog()
        on_ok(dialog.fields.get("input", ""))

    dialog.body = lambda ui: [ui.col(ui.edit("input", hint, rid="input", on_submit=ok), pad=(24, 0, 24, 8))]
    dialog.buttons = [("Cancel", app.close_dialog), (ok_label, ok)]
    return dialog


def format_time(hour: int, minute: int) -> str:
    """``7:05 AM`` — how SimPhone shows a time everywhere."""
    suffix = "AM" if hour < 12 else "PM"
    return f"{(hour % 12) or 12}:{minute:02d} {suffix}"


def time_picker(app: App, title: str, hour: int, minute: int, on_set: Callable[[int, int], None]) -> Dialog:
    """Hour (1–12) and minute fields with ▲/▼ buttons and AM/PM chips; OK calls ``on_set(h24, m)``."""
    dialog = Dialog(title=title, data={"hour": hour, "minute": minute})

    def sync_fields() -> None:
        dialog.fields["hour"] = str((dialog.data["hour"] % 12) or 12)
        dialog.fields["minute"] = f"{dialog.data['minute']:02d}"

    def read_fields() -> bool:
        """Apply typed digits to the data; False if they are not a valid time."""
        h_text, m_text = dialog.fields.get("hour", "").strip(), dialog.fields.get("minute", "").strip()
        pm = dialog.data["hour"] >= 12
        if h_text:
            if not h_text.isdigit() or not 1 <= int(h_text) <= 12:
                return False
            dialog.data["hour"] = int(h_text) % 12 + (12 if pm else 0)
        if m_text:
            if not m_text.isdigit() or not 0 <= int(m_text) <= 59:
                return False
            dialog.data["minute"] = int(m_text)
        return True

    def step(which: str, delta: int) -> Callable[[], None]:
        def run() -> None:
            if not read_fields():
                sync_fields()
            if which == "hour":
                pm = dialog.data["hour"] >= 12
                h12 = ((dialog.data["hour"] % 12) + delta) % 12
                dialog.data["hour"] = h12 + (12 if pm else 0)
            else:
                dialog.data["minute"] = (dialog.data["minute"] + delta) % 60
            dialog.focus = None
            sync_fields()

        return run

    def set_pm(pm: bool) -> Callable[[], None]:
        def run() -> None:
            read_fields()
            dialog.data["hour"] = dialog.data["hour"] % 12 + (12 if pm else 0)
            sync_fields()

        return run

    def ok() -> None:
        if not read_fields():
            app.toast("Enter a valid time")
            return
        app.close_dialog()
        on_set(dialog.data["hour"], dialog.data["minute"])

    def column(ui: UI, which: str, label: str) -> View:
        field = ui.edit(which, label, rid=which, input_type="number", size=32, w=88, h=72)
        field.align = "center"
        focus = field.on_click

        def focus_and_clear() -> None:
            dialog.fields[which] = ""
            if focus is not None:
                focus()

        field.on_click = focus_and_clear
        field.hint = dialog.fields.get(which, "") or label
        up = ui.icon_button("chevron_up", f"Increase {label.lower()}", step(which, 1), rid=f"{which}_up")
        down = ui.icon_button(
            "chevron_down", f"Decrease {label.lower()}", step(which, -1), rid=f"{which}_down"
        )
        return ui.col(up, field, down, align="center", w=ui.dp(96))

    def body(ui: UI) -> list[View]:
        pm = dialog.data["hour"] >= 12
        colon = ui.text(":", 32, align="center", h=72)
        colon.w = ui.dp(20)
        ampm = ui.col(
            ui.chip("AM", not pm, set_pm(False), rid="am"),
            ui.chip("PM", pm, set_pm(True), rid="pm"),
            gap=8,
            w=ui.dp(64),
        )
        picker = ui.row(
            column(ui, "hour", "Hour"), colon, column(ui, "minute", "Minute"), ampm, gap=8, pad=(16, 0, 16, 8)
        )
        picker.rid = "time_picker"
        picker.cls = "android.widget.TimePicker"
        return [picker]

    sync_fields()
    dialog.body = body
    dialog.buttons = [("Cancel", app.close_dialog), ("OK", ok)]
    return dialog


def format_date(day: dt.date) -> str:
    """``Fri, 14 Mar 2025`` — how SimPhone shows a date in forms."""
    return day.strftime("%a, %-d %b %Y")


def date_picker(app: App, title: str, initial: dt.date, on_set: Callable[[dt.date], None]) -> Dialog:
    """A month grid; day cells are clickable with content-desc like ``14 March 2025``."""
    dialog = Dialog(title=title, data={"year": initial.year, "month": initial.month, "selected": initial})

    def move(delta: int) -> Callable[[], None]:
        def run() -> None:
            m = dialog.data["month"] - 1 + delta
            dialog.data["year"] += m // 12
            dialog.data["month"] = m % 12 + 1

        return run

    def pick(day: dt.date) -> Callable[[], None]:
        def run() -> None:
            dialog.data["selected"] = day

        return run

    def ok() -> None:
        app.close_dialog()
        on_set(dialog.data["selected"])

    def body(ui: UI) -> list[View]:
        year, month, selected = dialog.data["year"], dialog.data["month"], dialog.data["selected"]
        header_text = ui.text(f"{calendar.month_name[month]} {year}", 16, bold=True, rid="month_title")
        header_text.weight = 1.0
        header = ui.row(
            header_text,
            ui.icon_button("chevron_left", "Previous month", move(-1), rid="prev"),
            ui.icon_button("chevron_right", "Next month", move(1), rid="next"),
            pad=(24, 0, 12, 0),
        )
        header.h = ui.dp(48)
        names = ui.row(
            *[_cell(ui, n, muted=True) for n in ("S", "M", "T", "W", "T", "F", "S")], pad=(12, 0, 12, 0)
        )
        names.h = ui.dp(40)
        rows = [header, names]
        weeks = calendar.Calendar(firstweekday=6).monthdatescalendar(year, month)
        for week in weeks:
            cells = []
            for day in week:
                if day.month != month:
                    cells.append(_cell(ui, ""))
                    continue
                cell = _cell(ui, str(day.day), selected=day == selected)
                cell.desc = f"{day.day} {calendar.month_name[day.month]} {day.year}"
                cell.clickable = cell.focusable = True
                cell.on_click = pick(day)
                cells.append(cell)
            r = ui.row(*cells, pad=(12, 0, 12, 0))
            r.h = ui.dp(44)
            rows.append(r)
        grid = ui.col(*rows)
        grid.cls, grid.rid = "android.widget.DatePicker", "date_picker"
        return [grid]

    dialog.body = body
    dialog.buttons = [("Cancel", app.close_dialog), ("OK", ok)]
    return dialog


def _cell(ui: UI, label: str, *, muted: bool = False, selected: bool = False) -> View:
    t = ui.t
    cell = ui.text(label, 14, muted=muted, align="center", color=t.on_primary if selected else None)
    cell.weight = 1.0
    cell.selected = selected
    if selected:
        cell.bg, cell.radius = t.primary, ui.dp(20)
    return cell


def build_dialog(ui: UI, dialog: Dialog, on_scrim: Callable[[], None]) -> list[View]:
    """The scrim and the card of ``dialog`` (children of the phone's full-screen stack)."""
    t = ui.t
    scrim = View(
        kind="scrim", cls="android.view.View", rid="scrim", fg=(0, 0, 0), clickable=True, on_click=on_scrim
    )
    card = ui.col(gap=8, pad=(0, 24, 0, 12))
    card.cls, card.rid = "android.widget.FrameLayout", "parentPanel"
    card.bg, card.radius = t.surface, ui.dp(28)
    card.gravity = "center"
    card.w = min(t.width - ui.dp(48), ui.dp(340))
    if dialog.title:
        card.add(ui.text(dialog.title, 22, rid="alertTitle", lines=2, pad=(24, 0, 24, 8)))
    if dialog.body is not None:
        card.add(*dialog.body(ui))
    if dialog.buttons:
        buttons = [
            ui.button(label, handler, style="text", rid=f"button{i + 1}")
            for i, (label, handler) in enumerate(dialog.buttons)
        ]
        bar = ui.row(ui.spacer(weight=1.0), *buttons, gap=8, pad=(16, 8, 16, 0))
        bar.h = ui.dp(56)
        card.add(bar)
    return [scrim, card]
