"""Calendar tasks: add (with location), rename and delete events; questions; reach a day.

State and screens are documented in :mod:`agent_runtime.simphone.apps.calendar`.
Days are named relative to the phone's today ("tomorrow", "3 days from today"), because the
virtual date depends on the seed; ``setup`` turns the offset into the concrete date it checks.
"""

from __future__ import annotations

import calendar as cal
import datetime as dt
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.calendar import CalendarApp, Event
from agent_runtime.simphone.tasks.base import QuestionTask, Task
from agent_runtime.simphone.tasks.clock import set_time
from agent_runtime.simphone.tasks.common import showing
from agent_runtime.simphone.tasks.oracle import OracleUI
from agent_runtime.simphone.ui.dialogs import format_time

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.android.calendar"
APP = "Calendar"
WHEN = (
    "today",
    "tomorrow",
    "the day after tomorrow",
    "3 days from today",
    "4 days from today",
    "5 days from today",
)
TITLES = (
    "Dentist appointment",
    "Project review",
    "Coffee with Maya",
    "Piano lesson",
    "Team lunch",
    "Car service",
    "Book club",
    "Budget meeting",
    "Haircut",
    "Parent-teacher meeting",
)
LOCATIONS = ("Room 4B", "City Library", "Main Street Clinic", "Cafe Luna", "Town Hall", "Online")


def calendar_app(phone: SimPhone) -> CalendarApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, CalendarApp)
    return app


def random_day(rng: random.Random, *, first: int = 0) -> dict[str, Any]:
    offset = rng.randrange(first, len(WHEN))
    return {"offset": offset, "when": WHEN[offset]}


def random_start(rng: random.Random) -> dict[str, Any]:
    hour, minute = rng.randrange(8, 21), rng.choice([0, 15, 30, 45])
    return {"hour": hour, "minute": minute, "start": format_time(hour, minute)}


def target_date(phone: SimPhone, offset: int) -> dt.date:
    return phone.now.date() + dt.timedelta(days=offset)


def place_event(
    phone: SimPhone, title: str, day: dt.date, start: tuple[int, int], location: str = ""
) -> Event:
    """Make this the only event called ``title``."""
    app = calendar_app(phone)
    app.state.events = [e for e in app.state.events if e.title.casefold() != title.casefold()]
    end = (min(23, start[0] + 1), start[1])
    return app.add_event(title, day, start, end, location)


def today_shown(ui: OracleUI) -> dt.date:
    """The selected day from the header above the event list (a fresh app selects today)."""
    for el in ui.find_all(cls="TextView"):
        try:
            return dt.datetime.strptime(el.text, "%a, %d %b %Y").date()
        except ValueError:
            continue
    raise ui.error("no selected-day header")


def select_day(ui: OracleUI, offset: int) -> Iterator[Action]:
    """Open Calendar and select the day ``offset`` days after today in the month grid."""
    yield ui.open_app(APP)
    day = today_shown(ui) + dt.timedelta(days=offset)
    if day.month != today_shown(ui).month:
        yield from ui.tap(desc="Next month")
    label = f"{day.day} {cal.month_name[day.month]} {day.year}"
    yield from ui.tap(where=lambda el: el.content_desc == label or el.content_desc.startswith(f"{label},"))


def open_event(ui: OracleUI, offset: int, title: str) -> Iterator[Action]:
    yield from select_day(ui, offset)
    yield from ui.tap(title, rid="title", cls="TextView")


def fill_event(ui: OracleUI, title: str, hour: int, minute: int, location: str = "") -> Iterator[Action]:
    """In the new-event editor: title, start time, location, Save."""
    yield from ui.type_into(None, title, rid="title", cls="EditText")
    yield from ui.tap("Start time", cls="TextView")
    yield from set_time(ui, hour, minute)
    if location:
        yield from ui.type_into(None, location, rid="location", cls="EditText")
    yield from ui.tap("Save", rid="save")


class CalendarAddEvent(Task):
    template = 'Add an event "{title}" to my calendar {when} at {start}.'
    app_names = (APP,)
    complexity = 2.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"title": rng.choice(TITLES), **random_day(rng), **random_start(rng)}

    def setup(self, phone: SimPhone) -> None:
        app = calendar_app(phone)
        app.state.events = [
            e for e in app.state.events if e.title.casefold() != self.params["title"].casefold()
        ]
        #: The concrete day the goal means.
        self.day = target_date(phone, self.params["offset"])

    def _matches(self, e: Event) -> bool:
        p = self.params
        return (
            e.title.strip().casefold() == p["title"].casefold()
            and e.date == self.day
            and e.start
            == (
                p["hour"],
                p["minute"],
            )
        )

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if any(self._matches(e) for e in calendar_app(phone).state.events) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        p = self.params
        yield from select_day(ui, p["offset"])
        yield from ui.tap(desc="New event")
        yield from fill_event(ui, p["title"], p["hour"], p["minute"])


class CalendarAddEventWithLocation(CalendarAddEvent):
    template = 'Schedule "{title}" at {location} {when} at {start}.'
    complexity = 2.4

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**super().generate_random_params(rng), "location": rng.choice(LOCATIONS)}

    def _matches(self, e: Event) -> bool:
        return super()._matches(e) and e.location.strip().casefold() == self.params["location"].casefold()

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        p = self.params
        yield from select_day(ui, p["offset"])
        yield from ui.tap(desc="New event")
        yield from fill_event(ui, p["title"], p["hour"], p["minute"], p["location"])


class CalendarDeleteEvent(Task):
    template = 'Delete the event "{title}" {when} from my calendar.'
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"title": rng.choice(TITLES), **random_day(rng), **random_start(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        target = place_event(phone, p["title"], target_date(phone, p["offset"]), (p["hour"], p["minute"]))
        #: Every other event must survive.
        self.keep = {e.id for e in calendar_app(phone).state.events} - {target.id}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        ids = {e.id for e in calendar_app(phone).state.events}
        return 1.0 if ids == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_event(ui, self.params["offset"], self.params["title"])
        yield from ui.tap("Delete", rid="delete")
        yield from ui.dialog_button("Delete")


class CalendarRenameEvent(Task):
    template = 'Rename the event "{title}" {when} to "{new_title}".'
    app_names = (APP,)
    complexity = 1.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        title, new_title = rng.sample(TITLES, 2)
        return {"title": title, "new_title": new_title, **random_day(rng), **random_start(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        app = calendar_app(phone)
        app.state.events = [e for e in app.state.events if e.title.casefold() != p["new_title"].casefold()]
        #: The event that must end up renamed (same id, same day).
        self.event_id = place_event(
            phone, p["title"], target_date(phone, p["offset"]), (p["hour"], p["minute"])
        ).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        event = next((e for e in calendar_app(phone).state.events if e.id == self.event_id), None)
        ok = event is not None and event.title.strip().casefold() == self.params["new_title"].casefold()
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_event(ui, self.params["offset"], self.params["title"])
        yield from ui.tap("Edit", rid="edit")
        yield from ui.type_into(None, self.params["new_title"], rid="title", cls="EditText")
        yield from ui.tap("Save", rid="save")


class CalendarReachDay(Task):
    template = "{verb} {when} in the Calendar app."
    app_names = (APP,)
    complexity = 0.6
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(("Show", "Go to", "Navigate to", "Open")), **random_day(rng, first=1)}

    def setup(self, phone: SimPhone) -> None:
        #: The day that must be selected.
        self.day = target_date(phone, self.params["offset"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        ok = (
            showing(phone, PACKAGE, "main")
            and calendar_app(phone).stack[0].params.get("selected") == self.day
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from select_day(ui, self.params["offset"])


class CalendarEventTimeQuestion(QuestionTask):
    template = 'What time does "{title}" start {when}?'
    app_names = (APP,)
    complexity = 0.8
    match = "time"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"title": rng.choice(TITLES), **random_day(rng), **random_start(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_event(phone, p["title"], target_date(phone, p["offset"]), (p["hour"], p["minute"]))

    def expected_answer(self) -> str:
        return str(self.params["start"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from select_day(ui, self.params["offset"])
        row = ui.row_of(ui.require(self.params["title"], rid="title", cls="TextView"))
        times = next(el.text for el in ui.children(row) if el.resource_id.endswith("summary"))
        yield ui.answer(times.split("–")[0].strip())


class CalendarEventLocationQuestion(QuestionTask):
    template = 'Where is "{title}" {when}?'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            "title": rng.choice(TITLES),
            "location": rng.choice(LOCATIONS),
            **random_day(rng),
            **random_start(rng),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_event(
            phone, p["title"], target_date(phone, p["offset"]), (p["hour"], p["minute"]), p["location"]
        )

    def expected_answer(self) -> str:
        return str(self.params["location"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_event(ui, self.params["offset"], self.params["title"])
        row = ui.require(rid="location")
        yield ui.answer(next(el.text for el in ui.children(row) if el.resource_id.endswith("title")))


class CalendarCountEventsQuestion(QuestionTask):
    template = "How many events do I have {when}?"
    app_names = (APP,)
    complexity = 0.6
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_day(rng), "count": rng.randrange(0, 4)}

    def setup(self, phone: SimPhone) -> None:
        app = calendar_app(phone)
        day = target_date(phone, self.params["offset"])
        app.state.events = [e for e in app.state.events if e.date != day]
        rng = self.rng()
        for title in rng.sample(TITLES, self.params["count"]):
            app.add_event(title, day, (rng.randrange(8, 18), 0), (rng.randrange(18, 21), 0))

    def expected_answer(self) -> str:
        return str(self.params["count"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from select_day(ui, self.params["offset"])
        yield ui.answer(str(len(ui.find_all(rid="event_item"))))


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    CalendarAddEvent,
    CalendarAddEventWithLocation,
    CalendarDeleteEvent,
    CalendarRenameEvent,
    CalendarReachDay,
    CalendarEventTimeQuestion,
    CalendarEventLocationQuestion,
    CalendarCountEventsQuestion,
)
