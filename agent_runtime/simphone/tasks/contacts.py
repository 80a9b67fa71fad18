"""Contacts tasks: create, edit, favourite and delete contacts; look numbers and emails up.

State and screens are documented in :mod:`agent_runtime.simphone.apps.contacts`.
Tasks work on people of their own (names not among the seeded contacts), placed by ``setup``,
so a goal names exactly one contact.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.contacts import Contact, ContactsApp
from agent_runtime.simphone.tasks.base import QuestionTask, Task
from agent_runtime.simphone.tasks.common import REACH_VERBS, showing
from agent_runtime.simphone.tasks.oracle import OracleUI

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.android.contacts"
APP = "Contacts"
FIRST = (
    "Aiden",
    "Beatriz",
    "Chloe",
    "Dmitri",
    "Elena",
    "Felix",
    "Grace",
    "Hiro",
    "Isla",
    "Jonas",
    "Keira",
    "Luca",
)
LAST = ("Alvarez", "Bennett", "Costa", "Duarte", "Eriksen", "Fontaine", "Gupta", "Holm", "Ibrahim", "Moreau")


def contacts(phone: SimPhone) -> ContactsApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, ContactsApp)
    return app


def digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def random_person(rng: random.Random) -> dict[str, Any]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    number = f"+1 555-{rng.randint(200, 999)}-{rng.randint(1000, 9999)}"
    return {"first": first, "last": last, "name": f"{first} {last}", "number": number}


def email_of(first: str, last: str, rng: random.Random) -> str:
    domain = rng.choice(["mail.sim", "example.com", "work.sim"])
    return f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@{domain}"


def named(phone: SimPhone, name: str) -> list[Contact]:
    return [c for c in contacts(phone).state.contacts if c.name.casefold() == name.casefold()]


def remove_named(phone: SimPhone, name: str) -> None:
    app = contacts(phone)
    app.state.contacts = [c for c in app.state.contacts if c.name.casefold() != name.casefold()]


def place_contact(phone: SimPhone, first: str, last: str, number: str, email: str = "") -> Contact:
    """Make this person the only contact with that name."""
    remove_named(phone, f"{first} {last}")
    return contacts(phone).add_contact(first, last, number, email)


def open_contact(ui: OracleUI, name: str) -> Iterator[Action]:
    """Open Contacts, search for ``name`` and open the matching card."""
    yield ui.open_app(APP)
    yield from ui.type_into(None, name, rid="search_box")
    yield from ui.tap(desc=name, rid="contact_item")


def fill_contact(ui: OracleUI, **fields: str) -> Iterator[Action]:
    """Type into the editor's fields (by resource-id) and press Save."""
    for rid, value in fields.items():
        yield from ui.type_into(None, value, rid=rid)
    yield from ui.tap("Save", rid="save")


class ContactsAddContact(Task):
    template = "Create a new contact for {name} with the phone number {number}."
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_person(rng)

    def setup(self, phone: SimPhone) -> None:
        remove_named(phone, self.params["name"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = [
            c for c in named(phone, self.params["name"]) if digits(c.phone) == digits(self.params["number"])
        ]
        return 1.0 if found else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="Create contact")
        p = self.params
        yield from fill_contact(ui, first_name=p["first"], last_name=p["last"], phone=p["number"])


class ContactsAddContactWithEmail(Task):
    template = "Add {name} to my contacts: phone {number}, email {email}."
    app_names = (APP,)
    complexity = 1.4

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        person = random_person(rng)
        return {**person, "email": email_of(person["first"], person["last"], rng)}

    def setup(self, phone: SimPhone) -> None:
        remove_named(phone, self.params["name"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        ok = any(
            digits(c.phone) == digits(p["number"]) and c.email.strip().casefold() == p["email"]
            for c in named(phone, p["name"])
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="Create contact")
        p = self.params
        yield from fill_contact(
            ui, first_name=p["first"], last_name=p["last"], phone=p["number"], email=p["email"]
        )


class ContactsEditPhone(Task):
    template = "Change {name}'s phone number to {new_number}."
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        person = random_person(rng)
        return {**person, "new_number": random_person(rng)["number"]}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = named(phone, self.params["name"])
        ok = len(found) == 1 and digits(found[0].phone) == digits(self.params["new_number"])
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_contact(ui, self.params["name"])
        yield from ui.tap(desc="Edit")
        yield from fill_contact(ui, phone=self.params["new_number"])


class ContactsDeleteContact(Task):
    template = "Delete {name} from my contacts."
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_person(rng)

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])
        #: Everyone else must survive.
        self.keep = {c.id for c in contacts(phone).state.contacts if c.name != p["name"]}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        ids = {c.id for c in contacts(phone).state.contacts}
        return 1.0 if not named(phone, self.params["name"]) and ids == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_contact(ui, self.params["name"])
        yield from ui.tap(desc="Delete")
        yield from ui.tap("Delete", cls="Button")


class ContactsFavorite(Task):
    template = "Add {name} to my favorite contacts."
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_person(rng)

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"]).starred = False

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = named(phone, self.params["name"])
        return 1.0 if len(found) == 1 and found[0].starred else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_contact(ui, self.params["name"])
        yield from ui.tap("Favorite", cls="Button")


class ContactsReachCard(Task):
    template = "{verb} the contact card of {name}."
    app_names = (APP,)
    complexity = 0.8
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), **random_person(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        #: The id of the card to reach.
        self.contact_id = place_contact(phone, p["first"], p["last"], p["number"]).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "details", id=self.contact_id) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_contact(ui, self.params["name"])


class ContactsPhoneQuestion(QuestionTask):
    template = "What is {name}'s phone number?"
    app_names = (APP,)
    complexity = 0.8
    match = "phone"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_person(rng)

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])

    def expected_answer(self) -> str:
        return str(self.params["number"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_contact(ui, self.params["name"])
        row = ui.require(rid="phone")
        yield ui.answer(next(el.text for el in ui.children(row) if el.resource_id.endswith("title")))


class ContactsEmailQuestion(QuestionTask):
    template = "What is the email address of {name}?"
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        person = random_person(rng)
        return {**person, "email": email_of(person["first"], person["last"], rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"], p["email"])

    def expected_answer(self) -> str:
        return str(self.params["email"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_contact(ui, self.params["name"])
        row = ui.require(rid="email")
        yield ui.answer(next(el.text for el in ui.children(row) if el.resource_id.endswith("title")))


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    ContactsAddContact,
    ContactsAddContactWithEmail,
    ContactsEditPhone,
    ContactsDeleteContact,
    ContactsFavorite,
    ContactsReachCard,
    ContactsPhoneQuestion,
    ContactsEmailQuestion,
)
