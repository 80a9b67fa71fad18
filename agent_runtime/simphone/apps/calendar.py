"""Calendar (``com.android.calendar``, label ``Calendar``).

State — :class:`CalendarState`:
    ``events``: list of :class:`Event` (``id``, ``title``, ``date`` (datetime.date),
    ``start`` and ``end`` as (hour, minute) tuples, ``location``); ``next_id``. A few seeded
    events around today. Helpers: :meth:`CalendarApp.add_event`, :meth:`CalendarApp.events_on`.

Screens:
    * ``main`` (title = month and year, e.g. "March 2025"): app-bar buttons "Previous month",
      "Next month", "Today"; a month grid whose day cells are clickable TextViews with
      content-desc like ``14 March 2025`` (plus ``, 2 events`` when there are events); the
      selected day's events below a header like "Fri, 14 Mar 2025" (item title = event title,
      summary = ``9:00 AM – 10:00 AM``); FAB "New event" (creates on the selected day).
    * ``edit`` "New event" / "Edit event": EditText "Title" (``title``), items "Date"
      (date picker), "Start time" and "End time" (time pickers), EditText "Location"
      (``location``), button "Save" (resource-id ``save``). A title is required.
    * ``details`` (title = event title): date, time, location items; buttons "Edit" and
      "Delete" (confirm dialog "Delete event?").
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

_SEED_EVENTS = (
    "Team meeting",
    "Dentist",
    "Lunch with Sam",
    "Yoga class",
    "Project review",
    "Call mom",
    "Book club",
)


@dataclass
class Event:
    id: int
    title: str
    date: dt.date
    start: tuple[int, int] = (9, 0)
    end: tuple[int, int] = (10, 0)
    location: str = ""

    @property
    def time_text(self) -> str:
        return f"{dialogs.format_time(*self.start)} – {dialogs.format_time(*self.end)}"


@dataclass
class CalendarState:
    events: list[Event] = field(default_factory=list)
    next_id: int = 1


class CalendarApp(App):
    package = "com.android.calendar"
    label = "Calendar"
    activity = "com.android.calendar.AllInOneActivity"

    def initial_state(self, rng: random.Random) -> CalendarState:
        state = CalendarState()
        today = self.phone.now.date()
        for title in rng.sample(_SEED_EVENTS, 4):
            day = today + dt.timedelta(days=rng.randint(-3, 10))
            hour = rng.randint(8, 17)
            state.events.append(
                Event(
                    state.next_id,
                    title,
                    day,
                    (hour, 0),
                    (hour + 1, 0),
                    rng.choice(["", "Office", "Cafe Luna"]),
                )
            )
            state.next_id += 1
        return state

    # -- helpers ------------------------------------------------------------------------------

    def add_event(
        self,
        title: str,
        date: dt.date,
        start: tuple[int, int] = (9, 0),
        end: tuple[int, int] = (10, 0),
        location: str = "",
    ) -> Event:
        event = Event(self.state.next_id, title, date, start, end, location)
        self.state.next_id += 1
        self.state.events.append(event)
        return event

    def events_on(self, day: dt.date) -> list[Event]:
        return sorted((e for e in self.state.events if e.date == day), key=lambda e: e.start)

    def _get(self, event_id: int) -> Event | None:
        return next((e for e in self.state.events if e.id == event_id), None)

    def _selected(self) -> dt.date:
        root = self.stack[0]
        return root.params.setdefault("selected", self.phone.now.date())

    def activity_name(self) -> str:
        return "com.android.calendar.event.EditEventActivity" if self.screen.name == "edit" else self.activity

    # -- screens ----------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        name = self.screen.name
        if name in ("details", "edit") and self.screen.params.get("id") is not None:
            event = self._get(self.screen.params["id"])
            if event is None:
                self.pop_to_root()
                return self._main(ui)
            return self._details(ui, event) if name == "details" else self._edit(ui, event)
        if name == "edit":
            return self._edit(ui, None)
        return self._main(ui)

    def _select(self, day: dt.date) -> Callable[[], None]:
        def run() -> None:
            self.stack[0].params["selected"] = day

        return run

    def _shift_month(self, delta: int) -> Callable[[], None]:
        def run() -> None:
            sel = self._selected()
            m = sel.month - 1 + delta
            year, month = sel.year + m // 12, m % 12 + 1
            day = min(sel.day, calendar.monthrange(year, month)[1])
            self.stack[0].params["selected"] = dt.date(year, month, day)

        return run

    def _main(self, ui: UI) -> View:
        t = ui.t
        sel = self._selected()
        today = self.phone.now.date()
        names = ui.row(
            *[_cell(ui, n, muted=True) for n in ("S", "M", "T", "W", "T", "F", "S")], pad=(8, 0, 8, 0)
        )
        names.h = ui.dp(32)
        grid = ui.col(names)
        grid.rid = "month_view"
        for week in calendar.Calendar(firstweekday=6).monthdatescalendar(sel.year, sel.month):
            cells = []
            for day in week:
                if day.month != sel.month:
                    cells.append(_cell(ui, ""))
                    continue
                count = len(self.events_on(day))
                cell = _cell(ui, str(day.day), selected=day == sel, today=day == today, dot=count > 0)
                cell.desc = f"{day.day} {calendar.month_name[day.month]} {day.year}" + (
                    f", {count} event{'s' * (count != 1)}" if count else ""
                )
                cell.clickable = cell.focusable = True
                cell.on_click = self._select(day)
                cells.append(cell)
            r = ui.row(*cells, pad=(8, 0, 8, 0))
            r.h = ui.dp(48)
            grid.add(r)
        body: list[View | None] = [grid, ui.divider(), ui.section(sel.strftime("%a, %-d %b %Y"))]
        events = self.events_on(sel)
        for e in events:
            body.append(
                ui.list_item(
                    e.title,
                    e.time_text,
                    self._open(e.id),
                    leading=ui.icon("dot", t.primary, 16),
                    rid="event_item",
                )
            )
        if not events:
            body.append(ui.empty("No events"))
        actions = [
            ui.icon_button("chevron_left", "Previous month", self._shift_month(-1), rid="prev"),
            ui.icon_button("chevron_right", "Next month", self._shift_month(1), rid="next"),
            ui.button("Today", self._select(today), style="text", rid="today"),
        ]
        title = f"{calendar.month_name[sel.month]} {sel.year}"
        return ui.page(
            title, body, back=False, actions=actions, fab=ui.fab("New event", self._new), scroll_key="month"
        )

    def _open(self, event_id: int) -> Callable[[], None]:
        def run() -> None:
            self.push("details", id=event_id)

        return run

    def _new(self) -> None:
        sel = self._selected()
        self.push("edit", fields={"title": "", "location": ""}, id=None, date=sel, start=(9, 0), end=(10, 0))

    def _edit(self, ui: UI, event: Event | None) -> View:
        p = self.screen.params
        if "date" not in p and event is not None:
            p.update(date=event.date, start=event.start, end=event.end)

        def pick_date() -> None:
            self.show(dialogs.date_picker(self, "Select date", p["date"], lambda d: p.update(date=d)))

        def pick_time(which: str) -> Callable[[], None]:
            def run() -> None:
                def apply(h: int, m: int) -> None:
                    p[which] = (h, m)
                    if which == "start" and p["end"] <= (h, m):
                        p["end"] = (min(23, h + 1), m)

                hour, minute = p[which]
                title = "Start time" if which == "start" else "End time"
                self.show(dialogs.time_picker(self, title, hour, minute, apply))

            return run

        def save() -> None:
            title = self.field("title").strip()
            if not title:
                self.toast("Enter a title")
                return
            location = self.field("location").strip()
            if event is None:
                self.add_event(title, p["date"], p["start"], p["end"], location)
                self.stack[0].params["selected"] = p["date"]
                self.pop()
            else:
                event.title, event.date, event.start, event.end, event.location = (
                    title,
                    p["date"],
                    p["start"],
                    p["end"],
                    location,
                )
                self.pop()
            self.toast("Event saved")

        body: list[View | None] = [
            ui.col(ui.edit("title", "Title", rid="title", size=20), pad=(16, 8, 16, 8)),
            ui.list_item("Date", dialogs.format_date(p["date"]), pick_date, rid="date"),
            ui.list_item(
                "Start time", dialogs.format_time(*p["start"]), pick_time("start"), rid="start_time"
            ),
            ui.list_item("End time", dialogs.format_time(*p["end"]), pick_time("end"), rid="end_time"),
            ui.col(ui.edit("location", "Location", rid="location"), pad=(16, 8, 16, 8)),
        ]
        return ui.page(
            "New event" if event is None else "Edit event",
            body,
            actions=[ui.button("Save", save, rid="save")],
            scroll_key="edit",
        )

    def _details(self, ui: UI, event: Event) -> View:
        def edit() -> None:
            self.push("edit", fields={"title": event.title, "location": event.location}, id=event.id)

        def delete() -> None:
            def really() -> None:
                self.state.events = [e for e in self.state.events if e.id != event.id]
                self.pop()
                self.toast("Event deleted")

            self.show(
                dialogs.confirm(self, "Delete event?", f"“{event.title}” will be deleted.", "Delete", really)
            )

        buttons = ui.row(
            ui.button("Edit", edit, style="tonal", rid="edit"),
            ui.button("Delete", delete, style="outlined", color=ui.t.danger, rid="delete"),
            gap=12,
            pad=(16, 16, 16, 16),
        )
        buttons.h = ui.dp(72)
        body: list[View | None] = [
            ui.list_item(dialogs.format_date(event.date), "Date", None, rid="date"),
            ui.list_item(event.time_text, "Time", None, rid="time"),
            ui.list_item(event.location, "Location", None, rid="location") if event.location else None,
            buttons,
        ]
        return ui.page(event.title, body, scroll_key="details")


def _cell(
    ui: UI, label: str, *, muted: bool = False, selected: bool = False, today: bool = False, dot: bool = False
) -> View:
    t = ui.t
    color = t.on_primary if selected else (t.primary if today else None)
    cell = ui.text(label, 14, muted=muted, align="center", color=color, bold=today or dot)
    cell.weight = 1.0
    cell.selected = selected
    if selected:
        cell.bg, cell.radius = t.primary, ui.dp(20)
    elif dot:
        cell.bg, cell.radius = t.primary_soft, ui.dp(20)
    return cell
