"""Messages tasks: send to a contact or a number, reply, read, reach a conversation, share a number.

State and screens are documented in :mod:`agent_runtime.simphone.apps.messages`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.messages import MessagesApp
from agent_runtime.simphone.tasks.base import QuestionTask, Task, normalise_answer
from agent_runtime.simphone.tasks.common import REACH_VERBS, TEXT_SENT, showing
from agent_runtime.simphone.tasks.contacts import (
    contacts,
    digits,
    open_contact,
    place_contact,
    random_person,
)
from agent_runtime.simphone.tasks.oracle import OracleUI

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.android.messaging"
APP = "Messages"
TEXTS = (
    "Running 10 minutes late",
    "See you at the station",
    "Can you call me back?",
    "Happy birthday!",
    "Dinner at 7 tonight?",
    "I picked up the groceries",
    "Meeting moved to 3 PM",
    "Thanks for your help today",
    "Don't forget the tickets",
)
INCOMING = (
    "Are we still on for Saturday?",
    "The package arrived this morning",
    "Can you send me the address?",
    "Call me when you land",
    "I left my keys at your place",
    "Lunch tomorrow at noon?",
)


def messages(phone: SimPhone) -> MessagesApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, MessagesApp)
    return app


def same_text(a: str, b: str) -> bool:
    """Message texts match when they differ only in case, spacing and end punctuation."""
    return normalise_answer(a) == normalise_answer(b)


def sent(phone: SimPhone, text: str, *, address: str | None = None, number: str | None = None) -> bool:
    """True when a message matching ``text`` went out to ``address`` (or to ``number``'s digits)."""
    for thread in messages(phone).state.threads:
        if address is not None and thread.address.casefold() != address.casefold():
            continue
        if number is not None and digits(thread.address) != digits(number):
            continue
        if any(m.outgoing and same_text(m.text, text) for m in thread.messages):
            return True
    return False


def start_chat(ui: OracleUI, name: str) -> Iterator[Action]:
    """Open Messages and start (or reopen) the conversation with contact ``name``."""
    yield ui.open_app(APP)
    yield from ui.tap(desc="Start chat")
    yield from ui.type_into(None, name, rid="recipient_text_view")
    yield from ui.tap(name, cls="TextView")


def send_text(ui: OracleUI, text: str) -> Iterator[Action]:
    """In an open conversation: type ``text`` and press Send."""
    yield from ui.type_into(None, text, rid="compose_message_text")
    yield from ui.tap(desc="Send SMS")


class MessagesSendToContact(Task):
    template = 'Send a text message to {name} saying "{text}".'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_person(rng), "text": rng.choice(TEXTS)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if sent(phone, self.params["text"], address=self.params["name"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from start_chat(ui, self.params["name"])
        yield from send_text(ui, self.params["text"])


class MessagesSendToNumber(Task):
    template = 'Text the number {number}: "{text}".'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"number": random_person(rng)["number"], "text": rng.choice(TEXTS)}

    def setup(self, phone: SimPhone) -> None:
        # A contact with this number would take the conversation under its name.
        app = contacts(phone)
        app.state.contacts = [
            c for c in app.state.contacts if digits(c.phone) != digits(self.params["number"])
        ]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if sent(phone, self.params["text"], number=self.params["number"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(desc="Start chat")
        yield from ui.type_into(None, self.params["number"], rid="recipient_text_view", enter=True)
        yield from send_text(ui, self.params["text"])


class MessagesReply(Task):
    template = 'Reply to {name}\'s latest message with "{text}".'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_person(rng), "text": rng.choice(TEXTS), "incoming": rng.choice(INCOMING)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])
        phone.advance_time(60)
        messages(phone).receive(p["name"], p["incoming"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        thread = messages(phone).thread_with(self.params["name"])
        if thread is None or not thread.messages:
            return 0.0
        last = thread.messages[-1]
        return 1.0 if last.outgoing and same_text(last.text, self.params["text"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(self.params["name"], rid="title")
        yield from send_text(ui, self.params["text"])


class MessagesLastMessageQuestion(QuestionTask):
    template = "What did {name} last text me?"
    app_names = (APP,)
    complexity = 0.6

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_person(rng), "incoming": rng.choice(INCOMING)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])
        phone.advance_time(60)
        messages(phone).receive(p["name"], p["incoming"])

    def expected_answer(self) -> str:
        return str(self.params["incoming"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(self.params["name"], rid="title")
        bubbles = ui.find_all(rid="message_text")
        if not bubbles:
            raise ui.error("no message bubbles")
        yield ui.answer(bubbles[-1].text)


class MessagesReachConversation(Task):
    template = "{verb} my conversation with {name} in Messages."
    app_names = (APP,)
    complexity = 0.6
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), **random_person(rng), "incoming": rng.choice(INCOMING)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])
        phone.advance_time(60)
        messages(phone).receive(p["name"], p["incoming"])
        #: The conversation to reach.
        self.thread_id = messages(phone).thread_with(p["name"]).id  # type: ignore[union-attr]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "conversation", id=self.thread_id) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(self.params["name"], rid="title")


class MessagesShareNumber(Task):
    template = "Look up {name}'s phone number in Contacts and text it to {recipient}."
    app_names = (APP, "Contacts")
    footprint = TEXT_SENT
    complexity = 2.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        person = random_person(rng)
        other = random_person(rng)
        while other["name"] == person["name"]:
            other = random_person(rng)
        return {
            **person,
            "recipient": other["name"],
            "recipient_first": other["first"],
            "recipient_last": other["last"],
            "recipient_number": other["number"],
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"])
        place_contact(phone, p["recipient_first"], p["recipient_last"], p["recipient_number"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        thread = messages(phone).thread_with(self.params["recipient"])
        wanted = digits(self.params["number"])
        ok = thread is not None and any(m.outgoing and wanted in digits(m.text) for m in thread.messages)
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_contact(ui, self.params["name"])
        row = ui.require(rid="phone")
        number = next(el.text for el in ui.children(row) if el.resource_id.endswith("title"))
        yield from start_chat(ui, self.params["recipient"])
        yield from send_text(ui, number)


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    MessagesSendToContact,
    MessagesSendToNumber,
    MessagesReply,
    MessagesLastMessageQuestion,
    MessagesReachConversation,
    MessagesShareNumber,
)
