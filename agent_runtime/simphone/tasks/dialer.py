"""Phone (dialer) tasks: call numbers and contacts, call back, block, clear the log, favourites;
reach pages; questions about the call log (a date, a count, a number, a list).

State and screens are documented in :mod:`agent_runtime.simphone.apps.dialer`. Callers are
people of the task's own (:func:`~agent_runtime.simphone.tasks.contacts.random_person`),
placed in Contacts by ``setup``, so a goal names exactly one contact.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.dialer import Call, DialerApp, digits
from agent_runtime.simphone.tasks.base import Task
from agent_runtime.simphone.tasks.common import REACH_VERBS, showing
from agent_runtime.simphone.tasks.contacts import FIRST, LAST, contacts, place_contact, random_person
from agent_runtime.simphone.tasks.oracle import OracleUI
from agent_runtime.simphone.tasks.typed_answers import TypedQuestion, iso

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.android.dialer"
APP = "Phone"


def dialer(phone: SimPhone) -> DialerApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, DialerApp)
    return app


def calls_to(phone: SimPhone, number: str, *, after: int = 0) -> list[Call]:
    """Outgoing calls to ``number``'s digits with an id above ``after`` (placed after setup)."""
    wanted = digits(number)
    return [
        c
        for c in dialer(phone).state.calls
        if c.kind == "outgoing" and c.id > after and digits(c.number) == wanted
    ]


def stranger(rng: random.Random) -> str:
    """A number no seeded or task contact has (the 555-01xx block is never drawn for people)."""
    return f"+1 555-01{rng.randint(0, 9)}{rng.randint(0, 9)}-{rng.randint(1000, 9999)}"


def log_from(phone: SimPhone, number: str, kind: str, hours_ago: float) -> Call:
    """Add a call ``hours_ago`` before now to the log."""
    time = phone.now - dt.timedelta(hours=hours_ago)
    return dialer(phone).log_call(number, kind, time, 0 if kind == "missed" else 120)


def forget_number(phone: SimPhone, number: str) -> None:
    """No log entry and no contact with these digits: the task's own entries are the only ones."""
    app = dialer(phone)
    app.state.calls = [c for c in app.state.calls if digits(c.number) != digits(number)]
    app.state.blocked = [n for n in app.state.blocked if digits(n) != digits(number)]
    book = contacts(phone)
    book.state.contacts = [c for c in book.state.contacts if digits(c.phone) != digits(number)]


class DialerTask(Task):
    """Remembers the last call-log id at setup, so a check sees only calls placed during play."""

    app_names = (APP,)

    def mark(self, phone: SimPhone) -> None:
        #: Calls with a larger id were placed by the agent.
        self.last_id = max((c.id for c in dialer(phone).state.calls), default=0)

    def called(self, phone: SimPhone, number: str) -> float:
        return 1.0 if calls_to(phone, number, after=self.last_id) else 0.0


def open_tab(ui: OracleUI, tab: str) -> Iterator[Action]:
    yield ui.open_app(APP)
    yield from ui.tap(desc=tab, cls="TextView", where=lambda el: el.has("clickable"))


def open_contact_card(ui: OracleUI, name: str) -> Iterator[Action]:
    yield from open_tab(ui, "Contacts")
    yield from ui.type_into(None, name, rid="search_box")
    yield from ui.tap(desc=name, rid="contact_item")


def open_call(ui: OracleUI, name: str) -> Iterator[Action]:
    """Recents, then the details of the newest entry titled ``name``."""
    yield from open_tab(ui, "Recents")
    yield from ui.tap(name, rid="title")


def history(ui: OracleUI) -> list[tuple[str, str]]:
    """(title, summary) of the call-history rows on an open details page."""
    rows = []
    for item in ui.find_all(rid="history_item"):
        texts = {el.resource_id.rpartition("/")[2]: el.text for el in ui.children(item)}
        rows.append((texts.get("title", ""), texts.get("summary", "")))
    return rows


def hang_up(ui: OracleUI) -> Iterator[Action]:
    yield from ui.tap(desc="End call")


class DialerCallNumber(DialerTask):
    template = "Call {number}."
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"number": stranger(rng)}

    def setup(self, phone: SimPhone) -> None:
        forget_number(phone, self.params["number"])
        self.mark(phone)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return self.called(phone, self.params["number"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="Dial pad")
        yield from ui.type_into(None, digits(self.params["number"]), rid="digits")
        yield from ui.tap(desc="Call", rid="dial_button")
        yield from hang_up(ui)


class DialerCallContact(DialerTask):
    template = "Call {name}."
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_person(rng)

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])
        self.mark(phone)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return self.called(phone, self.params["number"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_contact_card(ui, self.params["name"])
        yield from ui.tap("Call", rid="call")
        yield from hang_up(ui)


class DialerCallBackMissed(DialerTask):
    template = "Call back {name}, whose call I missed."
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_person(rng), "hours": rng.randint(1, 20)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])
        log_from(phone, p["number"], "missed", p["hours"])
        self.mark(phone)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return self.called(phone, self.params["number"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_tab(ui, "Recents")
        yield from ui.tap(desc=f"Call {self.params['name']}")
        yield from hang_up(ui)


class DialerBlockNumber(DialerTask):
    template = "Block {number}, the number that called me {when}."
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        kind = rng.choice(("missed", "incoming"))
        return {
            "number": stranger(rng),
            "kind": kind,
            "when": f"with a {kind} call" if kind == "missed" else "earlier",
        }

    def setup(self, phone: SimPhone) -> None:
        forget_number(phone, self.params["number"])
        log_from(phone, self.params["number"], self.params["kind"], 2)
        #: Blocked numbers before; the goal adds exactly this one.
        self.before = list(dialer(phone).state.blocked)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        blocked = [digits(n) for n in dialer(phone).state.blocked]
        want = sorted([digits(n) for n in self.before] + [digits(self.params["number"])])
        return 1.0 if sorted(blocked) == want else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_call(ui, self.params["number"])
        yield from ui.tap("Block number", rid="block")
        yield from ui.dialog_button("Block")


class DialerUnblockNumber(DialerTask):
    template = "Unblock the number {number}."
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"number": stranger(rng), "other": stranger(rng)}

    def setup(self, phone: SimPhone) -> None:
        forget_number(phone, self.params["number"])
        forget_number(phone, self.params["other"])
        dialer(phone).state.blocked = [self.params["other"], self.params["number"]]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if dialer(phone).state.blocked == [self.params["other"]] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="Blocked numbers")
        yield from ui.tap(desc=f"Unblock {self.params['number']}")


class DialerDeleteCall(DialerTask):
    template = "Delete the {kind} call from {name} from my call history."
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_person(rng), "kind": rng.choice(("missed", "incoming", "outgoing"))}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        forget_number(phone, p["number"])
        place_contact(phone, p["first"], p["last"], p["number"])
        target = log_from(phone, p["number"], p["kind"], 3)
        #: Every other entry must survive.
        self.keep = {c.id for c in dialer(phone).state.calls} - {target.id}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if {c.id for c in dialer(phone).state.calls} == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_call(ui, self.params["name"])
        yield from ui.tap("Delete", rid="delete")


class DialerAddFavorite(DialerTask):
    template = "Add {name} to my favorites in the Phone app."
    complexity = 1.0
    #: Favourites are the contacts' stars.
    footprint = ("apps.contacts.contacts[*].starred",)

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_person(rng)

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        #: The contact that must end up starred.
        self.contact_id = place_contact(phone, p["first"], p["last"], p["number"]).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = [c for c in contacts(phone).state.contacts if c.id == self.contact_id]
        return 1.0 if found and found[0].starred else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_contact_card(ui, self.params["name"])
        yield from ui.tap("Favorite", rid="star")


class DialerReachCallDetails(DialerTask):
    template = "{verb} the details of my last call with {name}."
    complexity = 0.6
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            "verb": rng.choice(REACH_VERBS),
            **random_person(rng),
            "kind": rng.choice(("incoming", "outgoing")),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        forget_number(phone, p["number"])
        place_contact(phone, p["first"], p["last"], p["number"])
        log_from(phone, p["number"], p["kind"], 30)
        #: The newest call with this person: its details page must be showing.
        self.call_id = log_from(phone, p["number"], p["kind"], 1).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "details", id=self.call_id) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_call(ui, self.params["name"])


class DialerReachBlocked(DialerTask):
    template = "{verb} my list of blocked numbers."
    complexity = 0.5
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), "tab": rng.choice(("Favorites", "Contacts", "Recents"))}

    def setup(self, phone: SimPhone) -> None:
        phone.app(PACKAGE).stack[0].params["tab"] = self.params["tab"]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "blocked") else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="Blocked numbers")


class DialerLastCallDateQuestion(TypedQuestion):
    template = "On what date did {name} last call me?"
    app_names = (APP,)
    complexity = 0.8
    match = "date"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_person(rng), "days": rng.randint(2, 9), "older": rng.randint(10, 30)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        forget_number(phone, p["number"])
        place_contact(phone, p["first"], p["last"], p["number"])
        log_from(phone, p["number"], "incoming", 24 * p["older"])
        last = log_from(phone, p["number"], "incoming", 24 * p["days"])
        log_from(phone, p["number"], "outgoing", 24 * p["days"] - 30)  # my call back does not count
        #: The day of the newest incoming call.
        self.day = last.time.date()

    def expected_answer(self) -> str:
        return iso(self.day)

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_call(ui, self.params["name"])
        stamp = next((text for title, text in history(ui) if title.startswith("Incoming")), None)
        if stamp is None:
            raise ui.error(f"no incoming call from {self.params['name']} in the call history")
        yield ui.answer(stamp.split("·")[0].strip())


class DialerMissedCountQuestion(TypedQuestion):
    template = "How many missed calls from {name} are in my call history?"
    app_names = (APP,)
    complexity = 0.8
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_person(rng), "count": rng.randint(0, 4)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        forget_number(phone, p["number"])
        place_contact(phone, p["first"], p["last"], p["number"])
        rng = self.rng()
        for i in range(p["count"]):
            log_from(phone, p["number"], "missed", 3 + 7 * i)
        log_from(phone, p["number"], rng.choice(("incoming", "outgoing")), 1)

    def expected_answer(self) -> str:
        return str(self.params["count"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_call(ui, self.params["name"])
        yield ui.answer(str(sum(title.startswith("Missed") for title, _ in history(ui))))


class DialerLastMissedNumberQuestion(TypedQuestion):
    template = "What number did my most recent missed call come from?"
    app_names = (APP,)
    complexity = 0.6
    match = "phone"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"number": stranger(rng), "hours": rng.randint(1, 5)}

    def setup(self, phone: SimPhone) -> None:
        forget_number(phone, self.params["number"])
        app = dialer(phone)
        # Older missed calls only, so the task's one is the newest.
        cutoff = phone.now - dt.timedelta(hours=self.params["hours"])
        app.state.calls = [c for c in app.state.calls if c.kind != "missed" or c.time < cutoff]
        log_from(phone, self.params["number"], "missed", self.params["hours"] - 0.5)

    def expected_answer(self) -> str:
        return str(self.params["number"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_tab(ui, "Recents")
        first = ui.find(where=lambda el: el.text.startswith("Missed"), rid="summary")
        if first is None:
            raise ui.error("no missed call in Recents")
        yield ui.click(ui.row_of(first, rid="call_log_item"))
        row = ui.require(rid="number")
        yield ui.answer(next(el.text for el in ui.children(row) if el.resource_id.endswith("title")))


class DialerFavoritesQuestion(TypedQuestion):
    template = "Who are my favorite contacts in the Phone app? List their names."
    app_names = (APP,)
    complexity = 0.6
    match = "list"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        count = rng.randint(1, 4)
        firsts = rng.sample(FIRST, count)
        return {"names": [f"{first} {rng.choice(LAST)}" for first in firsts]}

    def setup(self, phone: SimPhone) -> None:
        book = contacts(phone)
        for c in book.state.contacts:
            c.starred = False
        rng = self.rng()
        for name in self.params["names"]:
            first, last = name.split(" ", 1)
            place_contact(phone, first, last, random_person(rng)["number"]).starred = True

    def expected_answer(self) -> str:
        return ", ".join(self.params["names"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_tab(ui, "Favorites")
        yield ui.answer(", ".join(el.content_desc for el in ui.find_all(rid="favorite_item")))


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    DialerCallNumber,
    DialerCallContact,
    DialerCallBackMissed,
    DialerBlockNumber,
    DialerUnblockNumber,
    DialerDeleteCall,
    DialerAddFavorite,
    DialerReachCallDetails,
    DialerReachBlocked,
    DialerLastCallDateQuestion,
    DialerMissedCountQuestion,
    DialerLastMissedNumberQuestion,
    DialerFavoritesQuestion,
)
