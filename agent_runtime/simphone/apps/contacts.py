"""Contacts (``com.android.contacts``, label ``Contacts``).

State — :class:`ContactsState`:
    ``contacts``: list of :class:`Contact` (``id``, ``first``, ``last``, ``phone``, ``email``,
    ``starred``; ``name`` is "first last"); ``next_id``. About 18 seeded contacts, so the list
    scrolls. Helpers: :meth:`ContactsApp.add_contact`, :meth:`ContactsApp.find`.

Screens:
    * ``main`` "Contacts": EditText "Search contacts" (resource-id ``search_box``; filters by
      name or number as you type), then one item per contact sorted by name (title = full name,
      avatar letter); FAB "Create contact".
    * ``details`` (title = full name): "Call", "Text", "Favorite"/"Unfavorite" buttons, items
      with the phone number (summary "Mobile") and email (summary "Email"); app-bar actions
      "Edit" and "Delete" (confirm dialog "Delete contact?", button "Delete"). "Text" opens the
      Messages conversation with this contact, "Call" places the call in the Phone app.
    * ``edit`` "Create contact" / "Edit contact": EditTexts "First name" (``first_name``),
      "Last name" (``last_name``), "Phone" (``phone``), "Email" (``email``) and a "Save" button
      (resource-id ``save``). Saving needs a first name or a phone number.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

FIRST_NAMES = (
    "Alice", "Bob", "Carlos", "Diana", "Ethan", "Fatima", "George", "Hannah", "Ivan", "Julia", "Kenji",
    "Laura", "Mohammed", "Nina", "Oscar", "Priya", "Quentin", "Rosa", "Samuel", "Tara", "Umar", "Vera",
    "William", "Xin", "Yusuf", "Zoe",
)  # fmt: skip
LAST_NAMES = (
    "Anderson", "Brown", "Chen", "Dubois", "Evans", "Fischer", "Garcia", "Hughes", "Ito", "Jensen", "Kim",
    "Lopez", "Martin", "Novak", "Okafor", "Patel", "Rossi", "Smith", "Tanaka", "Weber",
)  # fmt: skip
AVATAR_COLORS = ((26, 115, 232), (217, 48, 37), (24, 128, 56), (227, 116, 0), (161, 66, 244), (0, 137, 123))


@dataclass
class Contact:
    id: int
    first: str
    last: str = ""
    phone: str = ""
    email: str = ""
    starred: bool = False

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}".strip() or self.phone


@dataclass
class ContactsState:
    contacts: list[Contact] = field(default_factory=list)
    next_id: int = 1


def avatar_color(name: str) -> tuple[int, int, int]:
    return AVATAR_COLORS[sum(map(ord, name)) % len(AVATAR_COLORS)]


def _phone_number(rng: random.Random) -> str:
    return f"+1 555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"


class ContactsApp(App):
    package = "com.android.contacts"
    label = "Contacts"
    activity = "com.android.contacts.activities.PeopleActivity"

    def initial_state(self, rng: random.Random) -> ContactsState:
        state = ContactsState()
        firsts = rng.sample(FIRST_NAMES, 18)
        for first in firsts:
            last = rng.choice(LAST_NAMES)
            email = f"{first.lower()}.{last.lower()}@example.com" if rng.random() < 0.6 else ""
            state.contacts.append(
                Contact(state.next_id, first, last, _phone_number(rng), email, rng.random() < 0.15)
            )
            state.next_id += 1
        return state

    # -- helpers for tasks and other apps ------------------------------------------------------

    def add_contact(self, first: str, last: str = "", phone: str = "", email: str = "") -> Contact:
        contact = Contact(self.state.next_id, first, last, phone, email)
        self.state.next_id += 1
        self.state.contacts.append(contact)
        return contact

    def find(self, name: str) -> Contact | None:
        """A contact by full name, first name or phone number (case-insensitive)."""
        wanted = name.strip().lower()
        for c in self.state.contacts:
            if wanted in (c.name.lower(), c.first.lower(), c.phone.lower()):
                return c
        return None

    def _get(self, contact_id: int) -> Contact | None:
        return next((c for c in self.state.contacts if c.id == contact_id), None)

    def activity_name(self) -> str:
        names = {"details": "QuickContactActivity", "edit": "ContactEditorActivity"}
        return f"com.android.contacts.activities.{names.get(self.screen.name, 'PeopleActivity')}"

    # -- screens ----------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        name = self.screen.name
        if name in ("details", "edit") and self.screen.params.get("id") is not None:
            contact = self._get(self.screen.params["id"])
            if contact is None:
                self.pop_to_root()
                return self._main(ui)
            return self._details(ui, contact) if name == "details" else self._edit(ui, contact)
        if name == "edit":
            return self._edit(ui, None)
        return self._main(ui)

    def _main(self, ui: UI) -> View:
        query = self.field("search").strip().lower()
        people = sorted(self.state.contacts, key=lambda c: c.name.lower())
        if query:
            people = [c for c in people if query in c.name.lower() or query in c.phone.replace("-", "")]
        search = ui.edit("search", "Search contacts", rid="search_box")
        search.radius = ui.dp(28)
        body: list[View | None] = [ui.col(search, pad=(16, 4, 16, 8))]
        for c in people:
            body.append(
                ui.list_item(
                    c.name,
                    "",
                    self._open(c.id),
                    leading=ui.avatar(c.name, avatar_color(c.name)),
                    rid="contact_item",
                    desc=c.name,
                )
            )
        if not people:
            body.append(ui.empty("No contacts found"))
        return ui.page(
            "Contacts", body, back=False, fab=ui.fab("Create contact", self._new), scroll_key="contacts"
        )

    def handle_back(self) -> bool:
        return self.clear_search()

    def _open(self, contact_id: int) -> Callable[[], None]:
        def run() -> None:
            self.push("details", id=contact_id)

        return run

    def _new(self) -> None:
        self.push("edit", id=None)

    def _details(self, ui: UI, c: Contact) -> View:
        t = ui.t

        def edit() -> None:
            self.push(
                "edit",
                fields={"first_name": c.first, "last_name": c.last, "phone": c.phone, "email": c.email},
                id=c.id,
            )

        def delete() -> None:
            def really() -> None:
                self.state.contacts = [x for x in self.state.contacts if x.id != c.id]
                self.pop()
                self.toast("Contact deleted")

            self.show(
                dialogs.confirm(
                    self, "Delete contact?", f"{c.name} will be removed from your contacts.", "Delete", really
                )
            )

        def star() -> None:
            c.starred = not c.starred

        def text() -> None:
            messages = self.phone.app("com.android.messaging")
            self.phone.launch(messages.package)
            messages.open_conversation(c.name)  # type: ignore[attr-defined]

        def call() -> None:
            dialer = self.phone.app("com.android.dialer")
            self.phone.launch(dialer.package)
            dialer.dial(c.phone)  # type: ignore[attr-defined]

        big = ui.avatar(c.name, avatar_color(c.name), 96)
        header = ui.col(
            big,
            ui.text(c.name, 28, align="center", rid="large_title", pad=(16, 12, 16, 16)),
            align="center",
            pad=(0, 8, 0, 0),
        )
        buttons = ui.row(
            ui.button("Call", call, style="tonal", rid="call"),
            ui.button("Text", text, style="tonal", rid="text"),
            ui.button("Unfavorite" if c.starred else "Favorite", star, style="tonal", rid="star"),
            gap=8,
            pad=(16, 0, 16, 16),
        )
        buttons.h = ui.dp(72)
        body: list[View | None] = [header, buttons, ui.divider()]
        if c.phone:
            body.append(
                ui.list_item(c.phone, "Mobile", None, leading=ui.icon("signal", t.primary), rid="phone")
            )
        if c.email:
            body.append(ui.list_item(c.email, "Email", None, leading=ui.icon("send", t.primary), rid="email"))
        actions = [
            ui.icon_button("more", "Edit", edit, rid="menu_edit"),
            ui.icon_button("delete", "Delete", delete, rid="menu_delete"),
        ]
        return ui.page("", body, actions=actions, scroll_key="details")

    def _edit(self, ui: UI, c: Contact | None) -> View:
        def save() -> None:
            first, last = self.field("first_name").strip(), self.field("last_name").strip()
            phone, email = self.field("phone").strip(), self.field("email").strip()
            if not first and not phone:
                self.toast("Enter a name or a phone number")
                return
            if c is None:
                new = self.add_contact(first, last, phone, email)
                self.replace("details", id=new.id)
            else:
                c.first, c.last, c.phone, c.email = first, last, phone, email
                self.pop()
            self.toast("Contact saved")

        fields = [
            ui.edit("first_name", "First name", rid="first_name"),
            ui.edit("last_name", "Last name", rid="last_name"),
            ui.edit("phone", "Phone", rid="phone", input_type="phone"),
            ui.edit("email", "Email", rid="email"),
        ]
        body: list[View | None] = [ui.col(*fields, gap=12, pad=(16, 8, 16, 16))]
        save_btn = ui.button("Save", save, rid="save")
        return ui.page(
            "Create contact" if c is None else "Edit contact", body, actions=[save_btn], scroll_key="edit"
        )
