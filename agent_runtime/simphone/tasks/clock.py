"""Clock tasks: add, label, toggle, repeat and delete alarms; timers; tabs; alarm questions.

State and screens are documented in :mod:`agent_runtime.simphone.apps.clock`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.clock import DAYS, Alarm, ClockApp
from agent_runtime.simphone.tasks.base import QuestionTask, Task
from agent_runtime.simphone.tasks.common import REACH_VERBS
from agent_runtime.simphone.tasks.oracle import OracleUI
from agent_runtime.simphone.ui.dialogs import format_time

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.android.deskclock"
APP = "Clock"
LABELS = ("Wake up", "Gym", "Team standup", "Take medicine", "Pick up kids", "Yoga", "Call mom", "Laundry")
DAY_NAMES = {
    "Mon": "Monday",
    "Tue": "Tuesday",
    "Wed": "Wednesday",
    "Thu": "Thursday",
    "Fri": "Friday",
    "Sat": "Saturday",
    "Sun": "Sunday",
}


def clock(phone: SimPhone) -> ClockApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, ClockApp)
    return app


def random_time(rng: random.Random) -> dict[str, Any]:
    hour, minute = rng.randrange(24), rng.randrange(0, 60, 5)
    return {"hour": hour, "minute": minute, "time": format_time(hour, minute)}


def clear_time(phone: SimPhone, hour: int, minute: int) -> None:
    """Remove every alarm at ``hour:minute``."""
    app = clock(phone)
    app.state.alarms = [a for a in app.state.alarms if (a.hour, a.minute) != (hour, minute)]


def place_alarm(phone: SimPhone, hour: int, minute: int, **fields: Any) -> Alarm:
    """Make the alarm at ``hour:minute`` the only one at that time, with ``fields``."""
    clear_time(phone, hour, minute)
    return clock(phone).add_alarm(hour, minute, **fields)


def set_time(ui: OracleUI, hour: int, minute: int) -> Iterator[Action]:
    """Fill the open time-picker dialog (typed hour and minute, AM/PM chip) and press OK."""
    yield from ui.type_into(None, str(hour % 12 or 12), rid="hour")
    yield from ui.type_into(None, f"{minute:02d}", rid="minute")
    half = ui.require(rid="pm" if hour >= 12 else "am")
    if not half.has("checked"):
        yield ui.click(half)
    yield from ui.tap("OK", cls="Button")


def open_alarm(ui: OracleUI, time_text: str) -> Iterator[Action]:
    """From the Alarm tab, open the edit screen of the alarm showing ``time_text``."""
    yield from ui.tap(time_text, rid="digital_clock")


class ClockAddAlarm(Task):
    template = "Set an alarm for {time}."
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_time(rng)

    def setup(self, phone: SimPhone) -> None:
        clear_time(phone, self.params["hour"], self.params["minute"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        alarm = clock(phone).find_alarm(self.params["hour"], self.params["minute"])
        return 1.0 if alarm is not None and alarm.enabled else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="Add alarm")
        yield from set_time(ui, self.params["hour"], self.params["minute"])


class ClockAddLabeledAlarm(Task):
    template = 'Create an alarm at {time} with the label "{label}".'
    app_names = (APP,)
    complexity = 2.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_time(rng), "label": rng.choice(LABELS)}

    def setup(self, phone: SimPhone) -> None:
        clear_time(phone, self.params["hour"], self.params["minute"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        alarm = clock(phone).find_alarm(self.params["hour"], self.params["minute"])
        ok = alarm is not None and alarm.enabled and alarm.label == self.params["label"]
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="Add alarm")
        yield from set_time(ui, self.params["hour"], self.params["minute"])
        yield from open_alarm(ui, self.params["time"])
        yield from ui.type_into(None, self.params["label"], rid="edit_label")
        yield from ui.tap("Done", cls="Button")


class ClockToggleAlarm(Task):
    template = "Turn {state} the {time} alarm."
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_time(rng), "state": rng.choice(["on", "off"])}

    def setup(self, phone: SimPhone) -> None:
        place_alarm(phone, self.params["hour"], self.params["minute"], enabled=self.params["state"] == "off")

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        alarm = clock(phone).find_alarm(self.params["hour"], self.params["minute"])
        return 1.0 if alarm is not None and alarm.enabled == (self.params["state"] == "on") else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        switch = yield from ui.scroll_to(desc=self.params["time"], cls="Switch")
        if switch.has("checked") != (self.params["state"] == "on"):
            yield ui.click(switch)


class ClockDeleteAlarm(Task):
    template = "Delete the alarm set for {time}."
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_time(rng)

    def setup(self, phone: SimPhone) -> None:
        target = place_alarm(
            phone, self.params["hour"], self.params["minute"], label=self.rng().choice(LABELS)
        )
        #: The alarms that must survive (ids), so deleting everything does not count.
        self.keep = {a.id for a in clock(phone).state.alarms} - {target.id}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        ids = {a.id for a in clock(phone).state.alarms}
        gone = clock(phone).find_alarm(self.params["hour"], self.params["minute"]) is None
        return 1.0 if gone and ids == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from open_alarm(ui, self.params["time"])
        yield from ui.tap("Delete", cls="Button")


class ClockRepeatAlarm(Task):
    template = "Make the {time} alarm repeat every {day_name}."
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        day = rng.choice(DAYS)
        return {**random_time(rng), "day": day, "day_name": DAY_NAMES[day]}

    def setup(self, phone: SimPhone) -> None:
        place_alarm(phone, self.params["hour"], self.params["minute"], days=[])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        alarm = clock(phone).find_alarm(self.params["hour"], self.params["minute"])
        return 1.0 if alarm is not None and alarm.days == [self.params["day"]] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from open_alarm(ui, self.params["time"])
        yield from ui.tap(self.params["day"], rid="day_button")
        yield from ui.tap("Done", cls="Button")


class ClockStartTimer(Task):
    template = "Start a {minutes}-minute timer."
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"minutes": rng.choice([2, 3, 4, 6, 8, 10, 12, 15, 20, 25, 30, 45, 60, 90])}

    def setup(self, phone: SimPhone) -> None:
        clock(phone).state.timer_end = None

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        state = clock(phone).state
        running = state.timer_end is not None and state.timer_end > phone.now
        return 1.0 if running and state.timer_minutes == self.params["minutes"] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap("Timer", cls="TextView", where=lambda el: el.has("clickable"))
        yield from ui.type_into(None, str(self.params["minutes"]), rid="timer_minutes")
        yield from ui.tap("Start", cls="Button")


class ClockReachTab(Task):
    template = "{verb} the {tab} tab of the Clock app."
    app_names = (APP,)
    complexity = 0.5
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), "tab": rng.choice(["Alarm", "Clock", "Timer"])}

    def setup(self, phone: SimPhone) -> None:
        # Leave Clock on another tab, so opening the app is not enough.
        others = [t for t in ("Alarm", "Clock", "Timer") if t != self.params["tab"]]
        clock(phone).screen.params["tab"] = self.rng().choice(others)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        if phone.current_focus()[0] != PACKAGE:
            return 0.0
        screen = clock(phone).screen
        ok = (
            screen.name == "main"
            and screen.dialog is None
            and screen.params.get("tab", "Alarm") == self.params["tab"]
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(self.params["tab"], cls="TextView", where=lambda el: el.has("clickable"))


class ClockAlarmLabelQuestion(QuestionTask):
    template = "What is the label of my {time} alarm?"
    app_names = (APP,)
    complexity = 0.6

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_time(rng), "label": rng.choice(LABELS)}

    def setup(self, phone: SimPhone) -> None:
        place_alarm(phone, self.params["hour"], self.params["minute"], label=self.params["label"])

    def expected_answer(self) -> str:
        return str(self.params["label"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from open_alarm(ui, self.params["time"])
        yield ui.answer(ui.require(rid="edit_label").text)


class ClockAlarmTimeQuestion(QuestionTask):
    template = 'At what time is my "{label}" alarm set?'
    app_names = (APP,)
    complexity = 0.5
    match = "time"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_time(rng), "label": rng.choice(LABELS)}

    def setup(self, phone: SimPhone) -> None:
        app = clock(phone)
        app.state.alarms = [a for a in app.state.alarms if a.label != self.params["label"]]
        place_alarm(phone, self.params["hour"], self.params["minute"], label=self.params["label"])

    def expected_answer(self) -> str:
        return str(self.params["time"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        summary = yield from ui.scroll_to(contains=f"• {self.params['label']}", rid="summary")
        row = ui.row_of(summary)
        clock_text = next(el for el in ui.children(row) if el.resource_id.endswith("digital_clock"))
        yield ui.answer(clock_text.text)


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    ClockAddAlarm,
    ClockAddLabeledAlarm,
    ClockToggleAlarm,
    ClockDeleteAlarm,
    ClockRepeatAlarm,
    ClockStartTimer,
    ClockReachTab,
    ClockAlarmLabelQuestion,
    ClockAlarmTimeQuestion,
)
