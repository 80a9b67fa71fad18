"""Clock (``com.android.deskclock``, label ``Clock``).

State — :class:`ClockState`:
    ``alarms``: list of :class:`Alarm` (``id``, ``hour`` 0–23, ``minute``, ``label``,
    ``enabled``, ``days`` — a subset of ``["Mon", …, "Sun"]``, empty = once, ``vibrate``);
    ``next_id``; ``cities``: world-clock cities (names from :data:`CITY_OFFSETS`);
    ``timer_end`` (virtual datetime or None) and ``timer_minutes`` (last timer length).
    Use :meth:`ClockApp.add_alarm` / :meth:`ClockApp.find_alarm` from tasks.

Screens:
    * ``main`` with tabs "Alarm", "Clock", "Timer" (tab TextViews, content-desc = label).
      Alarm tab: one row per alarm — time text ``7:30 AM`` (resource-id ``digital_clock``),
      summary (days and label), a Switch (content-desc ``7:30 AM``) toggling ``enabled``; tap
      a row to edit; FAB "Add alarm" opens the time picker (title "Set alarm"), OK adds an
      enabled alarm. Clock tab: current time and world cities. Timer tab: "Minutes" field,
      "Start" / "Cancel" buttons, remaining time.
    * ``edit`` "Edit alarm": "Time" item (opens the time picker), "Label" EditText
      (resource-id ``edit_label``), day chips "Mon" … "Sun", "Vibrate" switch, "Delete" and
      "Done" buttons. Leaving the screen saves the label.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
CITY_OFFSETS = {
    "London": 0,
    "New York": -5,
    "Tokyo": 9,
    "Paris": 1,
    "Sydney": 11,
    "Dubai": 4,
    "São Paulo": -3,
}
_LABELS = ("Wake up", "Gym", "Meeting", "Medicine", "")


@dataclass
class Alarm:
    id: int
    hour: int
    minute: int
    label: str = ""
    enabled: bool = True
    days: list[str] = field(default_factory=list)
    vibrate: bool = True

    @property
    def time_text(self) -> str:
        return dialogs.format_time(self.hour, self.minute)


@dataclass
class ClockState:
    alarms: list[Alarm] = field(default_factory=list)
    next_id: int = 1
    cities: list[str] = field(default_factory=lambda: ["London", "Tokyo"])
    timer_end: dt.datetime | None = None
    timer_minutes: int = 5


def _days_summary(days: list[str]) -> str:
    if not days:
        return "Not scheduled"
    if len(days) == 7:
        return "Every day"
    if days == DAYS[:5]:
        return "Weekdays"
    if days == DAYS[5:]:
        return "Weekends"
    return ", ".join(days)


class ClockApp(App):
    package = "com.android.deskclock"
    label = "Clock"
    activity = "com.android.deskclock.DeskClock"

    def initial_state(self, rng: random.Random) -> ClockState:
        state = ClockState(cities=rng.sample(list(CITY_OFFSETS), 2))
        for _ in range(rng.randint(1, 3)):
            hour, minute = rng.choice([6, 7, 8, 9, 17, 21]), rng.choice([0, 15, 30, 45])
            days = rng.choice([[], DAYS[:5], DAYS[5:], DAYS])
            alarm = Alarm(state.next_id, hour, minute, rng.choice(_LABELS), rng.random() < 0.6, list(days))
            state.alarms.append(alarm)
            state.next_id += 1
        state.alarms.sort(key=lambda a: (a.hour, a.minute))
        return state

    # -- helpers for tasks ------------------------------------------------------------------

    def add_alarm(
        self, hour: int, minute: int, label: str = "", enabled: bool = True, days: list[str] | None = None
    ) -> Alarm:
        alarm = Alarm(self.state.next_id, hour, minute, label, enabled, list(days or []))
        self.state.next_id += 1
        self.state.alarms.append(alarm)
        self.state.alarms.sort(key=lambda a: (a.hour, a.minute))
        return alarm

    def find_alarm(self, hour: int, minute: int) -> Alarm | None:
        return next((a for a in self.state.alarms if (a.hour, a.minute) == (hour, minute)), None)

    def _alarm(self, alarm_id: int) -> Alarm | None:
        return next((a for a in self.state.alarms if a.id == alarm_id), None)

    # -- screens ----------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        if self.screen.name == "edit":
            alarm = self._alarm(self.screen.params["id"])
            if alarm is not None:
                return self._edit(ui, alarm)
            self.pop()
        tab = self.screen.params.get("tab", "Alarm")
        tabs = ui.tabs([(name, name == tab, self._tab(name)) for name in ("Alarm", "Clock", "Timer")])
        if tab == "Clock":
            body, fab = self._clock_tab(ui), None
        elif tab == "Timer":
            body, fab = self._timer_tab(ui), None
        else:
            body, fab = self._alarm_tab(ui), ui.fab("Add alarm", self._add)
        return ui.page(tab, body, back=False, actions=[], fab=fab, scroll_key=tab, footer=tabs)

    def _tab(self, name: str) -> Callable[[], None]:
        def run() -> None:
            self.screen.params["tab"] = name

        return run

    def _alarm_tab(self, ui: UI) -> list[View | None]:
        if not self.state.alarms:
            return [ui.empty("No alarms")]
        rows: list[View | None] = []
        for alarm in self.state.alarms:
            summary = _days_summary(alarm.days) + (f" • {alarm.label}" if alarm.label else "")
            row = ui.list_item(
                alarm.time_text,
                summary,
                self._open(alarm.id),
                trailing=ui.switch(alarm.enabled, self._toggle(alarm.id), desc=alarm.time_text, rid="onoff"),
                rid="alarm_item",
                title_size=28,
            )
            row.h = ui.dp(88)
            row.children[0].children[0].rid = "digital_clock"
            rows.append(row)
        return rows

    def _open(self, alarm_id: int) -> Callable[[], None]:
        def run() -> None:
            alarm = self._alarm(alarm_id)
            self.push("edit", fields={"label": alarm.label if alarm else ""}, id=alarm_id)

        return run

    def _toggle(self, alarm_id: int) -> Callable[[], None]:
        def run() -> None:
            alarm = self._alarm(alarm_id)
            if alarm is not None:
                alarm.enabled = not alarm.enabled

        return run

    def _add(self) -> None:
        now = self.phone.now

        def created(hour: int, minute: int) -> None:
            self.add_alarm(hour, minute)
            self.toast(f"Alarm set for {dialogs.format_time(hour, minute)}")

        self.show(dialogs.time_picker(self, "Set alarm", now.hour, now.minute, created))

    def _edit(self, ui: UI, alarm: Alarm) -> View:
        def set_time() -> None:
            def apply(hour: int, minute: int) -> None:
                alarm.hour, alarm.minute = hour, minute
                self.state.alarms.sort(key=lambda a: (a.hour, a.minute))

            self.show(dialogs.time_picker(self, "Set alarm", alarm.hour, alarm.minute, apply))

        def day_chip(day: str) -> View:
            def flip() -> None:
                alarm.days = [d for d in DAYS if (d in alarm.days) != (d == day)]

            chip = ui.chip(day, day in alarm.days, flip, rid="day_button")
            chip.pad = (ui.dp(6), 0, ui.dp(6), 0)
            chip.weight = 1.0
            return chip

        def vibrate() -> None:
            alarm.vibrate = not alarm.vibrate

        def delete() -> None:
            self.state.alarms = [a for a in self.state.alarms if a.id != alarm.id]
            self.pop()
            self.toast("Alarm deleted")

        days = ui.row(*[day_chip(d) for d in DAYS], gap=4, pad=(12, 8, 12, 8))
        days.h = ui.dp(52)
        buttons = ui.row(
            ui.button("Delete", delete, style="outlined", rid="delete", color=ui.t.danger),
            ui.spacer(weight=1.0),
            ui.button("Done", self._done, rid="done"),
            pad=(16, 16, 16, 16),
        )
        buttons.h = ui.dp(72)
        body: list[View | None] = [
            ui.list_item("Time", alarm.time_text, set_time, rid="edit_time"),
            ui.col(
                ui.edit("label", "Label", rid="edit_label", on_submit=self._save_label), pad=(16, 8, 16, 8)
            ),
            ui.section("Repeat"),
            days,
            ui.switch_row("Vibrate", alarm.vibrate, vibrate, rid="vibrate"),
            buttons,
        ]
        return ui.page("Edit alarm", body, scroll_key="edit")

    def _save_label(self) -> None:
        if self.screen.name == "edit":
            alarm = self._alarm(self.screen.params["id"])
            if alarm is not None:
                alarm.label = self.field("label").strip()

    def _done(self) -> None:
        self._save_label()
        self.pop()

    def handle_back(self) -> bool:
        self._save_label()
        return False

    def _clock_tab(self, ui: UI) -> list[View | None]:
        now = self.phone.now
        body: list[View | None] = [
            ui.text(
                f"{now.hour % 12 or 12}:{now.minute:02d}",
                64,
                align="center",
                pad=(0, 32, 0, 0),
                rid="digital_clock",
            ),
            ui.text(
                now.strftime("%a, %b %-d"), 16, muted=True, align="center", pad=(0, 0, 0, 24), rid="date"
            ),
        ]
        for city in self.state.cities:
            local = now + dt.timedelta(hours=CITY_OFFSETS.get(city, 0))
            body.append(
                ui.list_item(
                    city,
                    local.strftime("%a"),
                    None,
                    trailing=ui.text(dialogs.format_time(local.hour, local.minute), 20),
                    rid="city",
                )
            )
        return body

    def _timer_tab(self, ui: UI) -> list[View | None]:
        s = self.state
        now = self.phone.now
        if s.timer_end is not None and s.timer_end > now:
            left = int((s.timer_end - now).total_seconds())
            return [
                ui.text(
                    f"{left // 60:02d}:{left % 60:02d}",
                    64,
                    align="center",
                    pad=(0, 48, 0, 24),
                    rid="timer_time",
                ),
                ui.col(
                    ui.button("Cancel", self._cancel_timer, rid="cancel", style="tonal"), pad=(96, 0, 96, 0)
                ),
            ]
        done = s.timer_end is not None
        return [
            ui.text("Time's up" if done else "Set a timer", 22, align="center", pad=(0, 48, 0, 24)),
            ui.col(
                ui.edit(
                    "minutes",
                    "Minutes",
                    rid="timer_minutes",
                    input_type="number",
                    on_submit=self._start_timer,
                ),
                pad=(48, 0, 48, 16),
            ),
            ui.col(ui.button("Start", self._start_timer, rid="start"), pad=(96, 0, 96, 0)),
        ]

    def _start_timer(self) -> None:
        text = self.field("minutes").strip()
        if not text.isdigit() or int(text) <= 0:
            self.toast("Enter the number of minutes")
            return
        self.state.timer_minutes = int(text)
        self.state.timer_end = self.phone.now + dt.timedelta(minutes=int(text))
        self.screen.focus = None

    def _cancel_timer(self) -> None:
        self.state.timer_end = None
