"""Recorder tasks: record for a while, rename, delete and play recordings; reach one; questions on
durations, counts and dates.

State and screens are documented in :mod:`agent_runtime.simphone.apps.recorder`. A recording's
length is virtual time between Start and Stop, so the expert records with the ``wait`` action.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action, Wait
from agent_runtime.simphone.apps.files import format_date
from agent_runtime.simphone.apps.recorder import RecorderApp, Recording, format_duration
from agent_runtime.simphone.tasks.base import Task
from agent_runtime.simphone.tasks.common import REACH_VERBS, TEXT_SENT, showing
from agent_runtime.simphone.tasks.contacts import place_contact, random_person
from agent_runtime.simphone.tasks.files import (
    folder_rows,
    mentions_number,
    row_value,
    visible_rows,
)
from agent_runtime.simphone.tasks.messages import messages, send_text, start_chat
from agent_runtime.simphone.tasks.oracle import OracleUI
from agent_runtime.simphone.tasks.typed_answers import TypedQuestion

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.simphone.recorder"
APP = "Recorder"
NAMES = (
    "Team standup", "Piano practice", "Bird song", "Lecture on optics", "Podcast idea",
    "Voice note for Mom", "Interview with Ana", "Song lyrics draft", "Doctor's advice", "Shopping list",
)  # fmt: skip
NEW_NAMES = ("Morning thoughts", "Rehearsal take 2", "Meeting recap", "Book club notes", "Chorus idea")
#: How far a recording's length may be from the asked one (seconds): people stop by ear.
LENGTH_TOLERANCE = 3


def recorder(phone: SimPhone) -> RecorderApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, RecorderApp)
    return app


def random_recording(rng: random.Random) -> dict[str, Any]:
    return {"name": rng.choice(NAMES), "seconds": rng.randint(5, 900), "days_ago": rng.randint(1, 60)}


def place_recording(phone: SimPhone, name: str, seconds: int, days_ago: float = 1) -> Recording:
    """Make this the only recording called ``name``."""
    app = recorder(phone)
    app.state.recordings = [r for r in app.state.recordings if r.name.casefold() != name.casefold()]
    created = phone.now - dt.timedelta(days=days_ago, hours=2)
    return app.add_recording(name, seconds, created)


def fill_recordings(phone: SimPhone, rng: random.Random, count: int) -> list[Recording]:
    """Replace every recording with ``count`` of distinct names and lengths."""
    app = recorder(phone)
    app.state.recordings = []
    out = []
    for i, name in enumerate(rng.sample(NAMES, count)):
        created = phone.now - dt.timedelta(days=2 * i + 1, minutes=rng.randint(0, 600))
        out.append(app.add_recording(name, rng.randint(5, 1500), created))
    return out


def named(phone: SimPhone, name: str) -> list[Recording]:
    return [r for r in recorder(phone).state.recordings if r.name.casefold() == name.casefold()]


def new_recordings(phone: SimPhone, before: set[int]) -> list[Recording]:
    return [r for r in recorder(phone).state.recordings if r.id not in before]


def open_recording(ui: OracleUI, name: str) -> Iterator[Action]:
    yield ui.open_app(APP)
    yield from ui.tap(name, rid="title")


def record(ui: OracleUI, seconds: int) -> Iterator[Action]:
    """Open Recorder, record ``seconds`` of virtual time and stop."""
    yield ui.open_app(APP)
    yield from ui.tap(desc="Start recording")
    left = seconds
    while left > 0:  # one wait action lasts at most a minute
        yield Wait(time=min(60, left))
        left -= min(60, left)
    yield from ui.tap(desc="Stop recording")


def seconds_of(duration: str) -> int:
    """``"1:05"`` → 65, ``"1:02:05"`` → 3725."""
    total = 0
    for part in duration.split(":"):
        total = total * 60 + int(part)
    return total


class _Recording(Task):
    """Templates that start with the current recordings and must add exactly one."""

    def setup(self, phone: SimPhone) -> None:
        self.before = {r.id for r in recorder(phone).state.recordings}

    def made(self, phone: SimPhone) -> Recording | None:
        """The one recording the run added, if it stopped recording and made exactly one."""
        new = new_recordings(phone, self.before)
        if len(new) != 1 or recorder(phone).state.recording_since is not None:
            return None
        return new[0] if abs(new[0].seconds - self.params["seconds"]) <= LENGTH_TOLERANCE else None


class RecorderRecordMemo(_Recording):
    template = "Record a voice memo about {seconds} seconds long."
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"seconds": rng.randint(5, 90)}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if self.made(phone) is not None else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from record(ui, self.params["seconds"])


class RecorderRecordNamed(_Recording):
    template = 'Record a {seconds}-second voice memo and name it "{name}".'
    app_names = (APP,)
    complexity = 1.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"seconds": rng.randint(5, 60), "name": rng.choice(NEW_NAMES)}

    def setup(self, phone: SimPhone) -> None:
        app = recorder(phone)
        app.state.recordings = [r for r in app.state.recordings if r.name != self.params["name"]]
        super().setup(phone)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        rec = self.made(phone)
        return 1.0 if rec is not None and rec.name.casefold() == self.params["name"].casefold() else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from record(ui, self.params["seconds"])
        newest = next(iter(visible_rows(ui, "recording_item")), None)  # the list is newest first
        if newest is None:
            raise ui.error("no recording was saved")
        yield from ui.tap(newest, rid="title")
        yield from ui.tap(desc="Rename")
        yield from ui.type_into(None, self.params["name"], rid="input")
        yield from ui.dialog_button("Rename")


class RecorderRename(Task):
    template = 'Rename my recording "{name}" to "{new_name}".'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_recording(rng), "new_name": rng.choice(NEW_NAMES)}

    def setup(self, phone: SimPhone) -> None:
        app = recorder(phone)
        app.state.recordings = [r for r in app.state.recordings if r.name != self.params["new_name"]]
        self.rec_id = place_recording(phone, self.params["name"], self.params["seconds"]).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        ok = [r.id for r in named(phone, self.params["new_name"])] == [self.rec_id]
        return 1.0 if ok and not named(phone, self.params["name"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_recording(ui, self.params["name"])
        yield from ui.tap(desc="Rename")
        yield from ui.type_into(None, self.params["new_name"], rid="input")
        yield from ui.dialog_button("Rename")


class RecorderDelete(Task):
    template = 'Delete my recording "{name}".'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_recording(rng)

    def setup(self, phone: SimPhone) -> None:
        target = place_recording(phone, self.params["name"], self.params["seconds"])
        self.keep = {r.id for r in recorder(phone).state.recordings} - {target.id}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if {r.id for r in recorder(phone).state.recordings} == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_recording(ui, self.params["name"])
        yield from ui.tap(desc="Delete")
        yield from ui.dialog_button("Delete")


class RecorderDeleteShort(Task):
    template = "Delete every recording shorter than {limit} seconds in Recorder."
    app_names = (APP,)
    complexity = 2.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"limit": rng.choice((15, 20, 30, 45, 60)), "count": rng.randint(3, 6)}

    def setup(self, phone: SimPhone) -> None:
        recs = fill_recordings(phone, self.rng(), self.params["count"])
        limit = self.params["limit"]
        recs[0].seconds = self.rng("short").randint(3, limit - 1)  # at least one to delete
        recs[-1].seconds = self.rng("long").randint(limit + 1, 600)  # and one to keep
        for r in recs:
            r.seconds = r.seconds if r.seconds != limit else limit + 1
        self.keep = {r.id for r in recs if r.seconds >= limit}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if {r.id for r in recorder(phone).state.recordings} == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        rows = visible_rows(ui, "recording_item")
        for action in folder_rows(ui):
            yield action
            rows |= visible_rows(ui, "recording_item")
        for name, summary in rows.items():
            if seconds_of(summary.split(" · ")[0]) < self.params["limit"]:
                yield from ui.tap(name, rid="title")
                yield from ui.tap(desc="Delete")
                yield from ui.dialog_button("Delete")


class RecorderPlay(Task):
    template = 'Play my recording "{name}".'
    app_names = (APP,)
    complexity = 0.6

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_recording(rng)

    def setup(self, phone: SimPhone) -> None:
        self.rec_id = place_recording(phone, self.params["name"], self.params["seconds"]).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if recorder(phone).state.playing == self.rec_id else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_recording(ui, self.params["name"])
        yield from ui.tap(rid="play")


class RecorderReachRecording(Task):
    template = '{verb} my recording "{name}" in Recorder.'
    app_names = (APP,)
    complexity = 0.5
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), **random_recording(rng)}

    def setup(self, phone: SimPhone) -> None:
        self.rec_id = place_recording(phone, self.params["name"], self.params["seconds"]).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "recording", id=self.rec_id) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_recording(ui, self.params["name"])


class RecorderDurationQuestion(TypedQuestion):
    template = 'How long is my recording "{name}", in seconds?'
    app_names = (APP,)
    complexity = 0.6
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_recording(rng)

    def setup(self, phone: SimPhone) -> None:
        place_recording(phone, self.params["name"], self.params["seconds"])

    def expected_answer(self) -> str:
        return str(self.params["seconds"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_recording(ui, self.params["name"])
        yield ui.answer(str(seconds_of(row_value(ui, "duration"))))


class RecorderCountQuestion(TypedQuestion):
    template = "How many recordings do I have in Recorder?"
    app_names = (APP,)
    complexity = 0.6
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"count": rng.randint(1, 10)}

    def setup(self, phone: SimPhone) -> None:
        fill_recordings(phone, self.rng(), self.params["count"])

    def expected_answer(self) -> str:
        return str(self.params["count"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        rows = visible_rows(ui, "recording_item")
        for action in folder_rows(ui):
            yield action
            rows |= visible_rows(ui, "recording_item")
        yield ui.answer(str(len(rows)))


class RecorderLongQuestion(TypedQuestion):
    template = "Which of my recordings are longer than {minutes} minutes?"
    app_names = (APP,)
    complexity = 0.8
    match = "list"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"minutes": rng.choice((2, 3, 5, 10, 15)), "count": rng.randint(3, 7)}

    def setup(self, phone: SimPhone) -> None:
        recs = fill_recordings(phone, self.rng(), self.params["count"])
        limit = self.params["minutes"] * 60
        if all(r.seconds <= limit for r in recs):  # the answer is never an empty list
            recs[0].seconds = limit + 75
        for r in recs:
            r.seconds = r.seconds if r.seconds != limit else limit + 1
        self.long = sorted(r.name for r in recs if r.seconds > limit)

    def expected_answer(self) -> str:
        return ", ".join(self.long)

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        rows = visible_rows(ui, "recording_item")
        for action in folder_rows(ui):
            yield action
            rows |= visible_rows(ui, "recording_item")
        limit = self.params["minutes"] * 60
        yield ui.answer(
            ", ".join(n for n, s in sorted(rows.items()) if seconds_of(s.split(" · ")[0]) > limit)
        )


class RecorderDateQuestion(TypedQuestion):
    template = 'On what date did I record "{name}"?'
    app_names = (APP,)
    complexity = 0.6
    match = "date"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_recording(rng)

    def setup(self, phone: SimPhone) -> None:
        rec = place_recording(phone, self.params["name"], self.params["seconds"], self.params["days_ago"])
        self.created = rec.created

    def expected_answer(self) -> str:
        return format_date(self.created)

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_recording(ui, self.params["name"])
        yield ui.answer(row_value(ui, "recorded_on").rsplit(",", 1)[0])


# -- across apps ---------------------------------------------------------------------------------
class RecorderTextLength(Task):
    template = 'Text {name} how long my recording "{rec}" is.'
    app_names = (APP, "Messages")
    footprint = TEXT_SENT
    complexity = 1.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        p = random_recording(rng)
        return {"rec": p.pop("name"), **p, **random_person(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])
        place_recording(phone, p["rec"], p["seconds"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        """The length as Recorder shows it ("1:05") or in seconds ("65")."""
        thread = messages(phone).thread_with(self.params["name"])
        shown, total = format_duration(self.params["seconds"]), str(self.params["seconds"])
        ok = thread is not None and any(
            m.outgoing and (shown in m.text or mentions_number(m.text, total)) for m in thread.messages
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_recording(ui, self.params["rec"])
        length = row_value(ui, "duration")
        yield from start_chat(ui, self.params["name"])
        yield from send_text(ui, f"It is {length} long")


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    RecorderRecordMemo,
    RecorderRecordNamed,
    RecorderRename,
    RecorderDelete,
    RecorderDeleteShort,
    RecorderPlay,
    RecorderReachRecording,
    RecorderDurationQuestion,
    RecorderCountQuestion,
    RecorderLongQuestion,
    RecorderDateQuestion,
    RecorderTextLength,
)
