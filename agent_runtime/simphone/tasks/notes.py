"""Notes tasks: create, append to, rename, pin and delete notes; reach a note; read a fact.

State and screens are documented in :mod:`agent_runtime.simphone.apps.notes`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action, Type
from agent_runtime.simphone.apps.notes import Note, NotesApp
from agent_runtime.simphone.tasks.base import QuestionTask, Task, normalise_answer
from agent_runtime.simphone.tasks.common import REACH_VERBS, showing
from agent_runtime.simphone.tasks.oracle import OracleUI

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.simphone.notes"
APP = "Notes"
NOTES = {
    "Groceries": "Milk\nEggs\nSpinach\nRice",
    "Packing list": "Passport\nCharger\nSunscreen",
    "Book ideas": "A lighthouse keeper who collects storms\nA map that redraws itself",
    "Weekend plans": "Saturday: farmers market\nSunday: hike with Sam",
    "Gift ideas": "Mom: scarf\nDad: chess set",
    "Recipes to try": "Lentil soup\nBanana bread",
    "Garden": "Water tomatoes\nPlant basil",
}
NEW_LINES = ("Buy batteries", "Call the plumber", "Pick up dry cleaning", "Bring an umbrella", "Olive oil")
NEW_TITLES = ("Shopping", "Ideas", "To do", "Reminders", "Trip notes")
FACTS = {
    "Wi-Fi password": ("sunflower42", "blue-harbor-7", "maple2025", "quietfox88"),
    "gate code": ("4417", "9023", "1180", "5562"),
    "locker number": ("B12", "C07", "A31", "D19"),
}
FACT_NOTES = ("House info", "Gym", "Office", "Cabin trip")


def notes_app(phone: SimPhone) -> NotesApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, NotesApp)
    return app


def titled(phone: SimPhone, title: str) -> list[Note]:
    return [n for n in notes_app(phone).state.notes if n.title.strip().casefold() == title.casefold()]


def lines(text: str) -> list[str]:
    return [normalise_answer(line) for line in text.split("\n") if line.strip()]


def place_note(phone: SimPhone, title: str, body: str, pinned: bool = False) -> Note:
    """Make this the only note called ``title``."""
    app = notes_app(phone)
    app.state.notes = [n for n in app.state.notes if n.title.strip().casefold() != title.casefold()]
    return app.add_note(title, body, pinned)


def open_note(ui: OracleUI, title: str) -> Iterator[Action]:
    """Open Notes, search for ``title`` and open that note."""
    yield ui.open_app(APP)
    yield from ui.type_into(None, title, rid="search_box")
    yield from ui.tap(title, rid="title")


def random_note(rng: random.Random) -> dict[str, Any]:
    title = rng.choice(sorted(NOTES))
    return {"title": title, "body": NOTES[title]}


class NotesCreate(Task):
    template = 'Create a note titled "{title}" that says "{body}".'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"title": rng.choice(NEW_TITLES), "body": rng.choice(NEW_LINES)}

    def setup(self, phone: SimPhone) -> None:
        app = notes_app(phone)
        app.state.notes = [
            n for n in app.state.notes if n.title.strip().casefold() != self.params["title"].casefold()
        ]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        ok = any(lines(n.body) == lines(self.params["body"]) for n in titled(phone, self.params["title"]))
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="New note")
        yield from ui.type_into(None, self.params["title"], rid="note_title")
        yield from ui.type_into(None, self.params["body"], rid="note_body")
        yield from ui.tap(desc="Save")


class NotesAppendLine(Task):
    template = 'Add the line "{line}" at the end of my note "{title}".'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_note(rng), "line": rng.choice(NEW_LINES)}

    def setup(self, phone: SimPhone) -> None:
        place_note(phone, self.params["title"], self.params["body"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        want = lines(self.params["body"]) + [normalise_answer(self.params["line"])]
        ok = any(lines(n.body) == want for n in titled(phone, self.params["title"]))
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_note(ui, self.params["title"])
        yield from ui.tap(rid="note_body")
        yield Type(text="\n" + self.params["line"])
        yield from ui.tap(desc="Save")


class NotesRename(Task):
    template = 'Rename my note "{title}" to "{new_title}".'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_note(rng), "new_title": rng.choice(NEW_TITLES)}

    def setup(self, phone: SimPhone) -> None:
        app = notes_app(phone)
        app.state.notes = [
            n for n in app.state.notes if n.title.strip().casefold() != self.params["new_title"].casefold()
        ]
        #: The note that must carry the new title.
        self.note_id = place_note(phone, self.params["title"], self.params["body"]).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        ok = [n.id for n in titled(phone, self.params["new_title"])] == [self.note_id]
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_note(ui, self.params["title"])
        yield from ui.type_into(None, self.params["new_title"], rid="note_title")
        yield from ui.tap(desc="Save")


class NotesPin(Task):
    template = 'Pin my note "{title}" to the top.'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_note(rng)

    def setup(self, phone: SimPhone) -> None:
        place_note(phone, self.params["title"], self.params["body"], pinned=False)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = titled(phone, self.params["title"])
        return 1.0 if len(found) == 1 and found[0].pinned else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_note(ui, self.params["title"])
        yield from ui.tap(desc="Pin")


class NotesDelete(Task):
    template = 'Delete my note "{title}".'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_note(rng)

    def setup(self, phone: SimPhone) -> None:
        target = place_note(phone, self.params["title"], self.params["body"])
        #: Every other note must survive.
        self.keep = {n.id for n in notes_app(phone).state.notes} - {target.id}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if {n.id for n in notes_app(phone).state.notes} == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_note(ui, self.params["title"])
        yield from ui.tap(desc="Delete")


class NotesReachNote(Task):
    template = '{verb} my note "{title}".'
    app_names = (APP,)
    complexity = 0.6
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), **random_note(rng)}

    def setup(self, phone: SimPhone) -> None:
        #: The note whose editor must be showing.
        self.note_id = place_note(phone, self.params["title"], self.params["body"]).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "edit", id=self.note_id) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_note(ui, self.params["title"])


class NotesFactQuestion(QuestionTask):
    template = 'What is the {fact} written in my note "{title}"?'
    app_names = (APP,)
    complexity = 0.6

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        fact = rng.choice(sorted(FACTS))
        return {"fact": fact, "value": rng.choice(FACTS[fact]), "title": rng.choice(FACT_NOTES)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        others = [f"{f}: {self.rng().choice(v)}" for f, v in sorted(FACTS.items()) if f != p["fact"]]
        body = "\n".join([others[0], f"{p['fact']}: {p['value']}", others[1]])
        place_note(phone, p["title"], body)

    def expected_answer(self) -> str:
        return str(self.params["value"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_note(ui, self.params["title"])
        body = ui.require(rid="note_body").text
        prefix = f"{self.params['fact']}:"
        line = next((ln for ln in body.split("\n") if ln.strip().startswith(prefix)), None)
        if line is None:
            raise ui.error(f"no line starting with {prefix!r} in the note")
        yield ui.answer(line.strip()[len(prefix) :].strip())


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    NotesCreate,
    NotesAppendLine,
    NotesRename,
    NotesPin,
    NotesDelete,
    NotesReachNote,
    NotesFactQuestion,
)
