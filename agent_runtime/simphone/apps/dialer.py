"""Phone — the dialer (``com.android.dialer``, label ``Phone``).

State — :class:`DialerState`:
    ``calls``: the call log, list of :class:`Call` (``id``, ``number``, ``kind`` — ``incoming``,
    ``outgoing`` or ``missed`` —, ``time`` virtual datetime, ``duration`` seconds); ``blocked``:
    blocked numbers as typed; ``active``: id of the call in progress or None; ``next_id``.
    Names are not stored: a number shows as the Contacts contact whose number has the same
    digits, and Favorites are the starred contacts — as on a real phone, where the dialer
    reads the contacts provider. Helpers: :meth:`DialerApp.log_call`, :meth:`DialerApp.dial`,
    :meth:`DialerApp.name_for`.

Screens:
    * ``main`` with tabs "Favorites", "Recents", "Contacts" (tab TextViews, content-desc = label)
      and FAB "Dial pad"; app-bar button "Blocked numbers".
      - Favorites: one item per starred contact (tap calls).
      - Recents: the call log, newest first (item ``call_log_item``: title = name or number,
        summary like ``Missed · 2:15 PM`` or ``Incoming · Mar 3``); tap opens ``details``;
        trailing ImageButton "Call <name>"; long-press asks "Delete from call history?".
      - Contacts: EditText "Search contacts" (``search_box``), contacts by name (tap opens
        ``contact``).
    * ``keypad`` "Dial pad": EditText (``digits``, phone input) that takes typing, the 12 keys
      (Buttons whose text and content-desc are ``1``…``9``, ``*``, ``0``, ``#``),
      ImageButton "Backspace" and button "Call" (``dial_button``).
    * ``details`` "Call details": name (``caller``), number (``number``), buttons "Call",
      "Message", "Block number"/"Unblock number" (confirm "Block <number>?") and "Delete"
      (removes the opened entry), then "Call history": every call with that number, newest
      first (``history_item``: title like ``Missed call`` or ``Incoming call · 2 min 5 sec``,
      summary ``Wednesday, March 5, 2025 · 2:15 PM``; the opened one selected).
    * ``contact`` (title = name): number item (``number``), buttons "Call", "Message",
      "Favorite"/"Unfavorite".
    * ``blocked`` "Blocked numbers": one item per number with an "Unblock" ImageButton
      (content-desc ``Unblock <number>``) and button "Add a number" (prompt dialog).
    * ``call`` (in call): name or number (``caller``), "Calling…", ImageButton "End call".
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_runtime.simphone.app import App
from agent_runtime.simphone.apps.contacts import avatar_color
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

CONTACTS = "com.android.contacts"
MESSAGES = "com.android.messaging"
KINDS = ("incoming", "outgoing", "missed")
KEYS = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "*", "0", "#")
TABS = ("Favorites", "Recents", "Contacts")


@dataclass
class Call:
    id: int
    number: str
    kind: str
    time: dt.datetime
    duration: int = 0


@dataclass
class DialerState:
    calls: list[Call] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    active: int | None = None
    next_id: int = 1


def digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def format_when(time: dt.datetime, now: dt.datetime) -> str:
    """``2:15 PM`` today, ``Yesterday``, else ``Mar 3`` — a call log's short stamp."""
    if time.date() == now.date():
        return dialogs.format_time(time.hour, time.minute)
    if time.date() == now.date() - dt.timedelta(days=1):
        return "Yesterday"
    return time.strftime("%b %-d")


def format_full(time: dt.datetime) -> str:
    """``Wednesday, March 5, 2025 · 2:15 PM`` — the details page's stamp."""
    return f"{time.strftime('%A, %B %-d, %Y')} · {dialogs.format_time(time.hour, time.minute)}"


class DialerApp(App):
    package = "com.android.dialer"
    label = "Phone"
    activity = "com.android.dialer.main.impl.MainActivity"

    def initial_state(self, rng: random.Random) -> DialerState:
        state = DialerState()
        contacts = self.phone.apps.get(CONTACTS)
        numbers = [c.phone for c in contacts.state.contacts if c.phone] if contacts else []
        now = self.phone.now
        for i in range(6):
            number = rng.choice(numbers) if numbers and rng.random() < 0.8 else _stranger(rng)
            kind = rng.choice(KINDS)
            when = now - dt.timedelta(hours=5 * (i + 1) + rng.randint(0, 4), minutes=rng.randint(0, 59))
            state.calls.append(
                Call(state.next_id, number, kind, when, 0 if kind == "missed" else rng.randint(20, 900))
            )
            state.next_id += 1
        return state

    # -- helpers for tasks and other apps ------------------------------------------------------

    def log_call(self, number: str, kind: str, time: dt.datetime, duration: int = 0) -> Call:
        call = Call(self.state.next_id, number, kind, time, duration)
        self.state.next_id += 1
        self.state.calls.append(call)
        return call

    def name_for(self, number: str) -> str:
        """The contact whose number has these digits, else the number itself."""
        contacts = self.phone.apps.get(CONTACTS)
        wanted = digits(number)
        if contacts is not None and wanted:
            for c in contacts.state.contacts:
                if digits(c.phone) == wanted:
                    return str(c.name)
        return number

    def dial(self, number: str) -> Call | None:
        """Place a call (what the Call buttons do): log it as outgoing and show the in-call screen."""
        if not digits(number):
            self.toast("Enter a number")
            return None
        call = self.log_call(number, "outgoing", self.phone.now)
        self.state.active = call.id
        self.push("call", id=call.id)
        return call

    def is_blocked(self, number: str) -> bool:
        return digits(number) in {digits(n) for n in self.state.blocked}

    def _get(self, call_id: int | None) -> Call | None:
        return next((c for c in self.state.calls if c.id == call_id), None)

    def _contact(self, contact_id: int | None) -> Any:
        contacts = self.phone.apps.get(CONTACTS)
        if contacts is None:
            return None
        return next((c for c in contacts.state.contacts if c.id == contact_id), None)

    def activity_name(self) -> str:
        names = {
            "call": "com.android.incallui.InCallActivity",
            "details": "com.android.dialer.calldetails.CallDetailsActivity",
            "blocked": "com.android.dialer.blocking.BlockedNumbersActivity",
        }
        return names.get(self.screen.name, self.activity)

    # -- screens ----------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        name = self.screen.name
        if name == "keypad":
            return self._keypad(ui)
        if name == "blocked":
            return self._blocked(ui)
        if name == "call":
            call = self._get(self.screen.params.get("id"))
            if call is not None:
                return self._in_call(ui, call)
        if name == "details":
            call = self._get(self.screen.params.get("id"))
            if call is not None:
                return self._details(ui, call)
        if name == "contact":
            contact = self._contact(self.screen.params.get("id"))
            if contact is not None:
                return self._contact_card(ui, contact)
        if name != "main":
            self.pop_to_root()
        return self._main(ui)

    def _tab(self, name: str) -> Callable[[], None]:
        def run() -> None:
            self.stack[0].params["tab"] = name

        return run

    def _main(self, ui: UI) -> View:
        tab = self.stack[0].params.get("tab", "Recents")
        tabs = ui.tabs([(name, name == tab, self._tab(name)) for name in TABS])
        if tab == "Favorites":
            body = self._favorites(ui)
        elif tab == "Contacts":
            body = self._contacts(ui)
        else:
            body = self._recents(ui)
        actions = [ui.icon_button("more", "Blocked numbers", lambda: self.push("blocked"), rid="blocked")]
        fab = ui.fab("Dial pad", self._open_keypad, shape="apps", rid="dialpad_fab")
        return ui.page(tab, body, back=False, actions=actions, fab=fab, scroll_key=tab, footer=tabs)

    def _open_keypad(self) -> None:
        self.phone.focus_field(self.push("keypad", fields={"digits": ""}), "digits", "phone")

    def _favorites(self, ui: UI) -> list[View | None]:
        contacts = self.phone.apps.get(CONTACTS)
        people = (
            sorted((c for c in contacts.state.contacts if c.starred), key=lambda c: c.name.lower())
            if contacts
            else []
        )
        body: list[View | None] = []
        for c in people:
            body.append(
                ui.list_item(
                    c.name,
                    c.phone,
                    self._call(c.phone),
                    leading=ui.avatar(c.name, avatar_color(c.name)),
                    rid="favorite_item",
                    desc=c.name,
                )
            )
        if not people:
            body.append(ui.empty("No favorites yet. Star a contact to add it here."))
        return body

    def _recents(self, ui: UI) -> list[View | None]:
        now = self.phone.now
        body: list[View | None] = []
        for call in sorted(self.state.calls, key=lambda c: (c.time, c.id), reverse=True):
            name = self.name_for(call.number)
            item = ui.list_item(
                name,
                f"{call.kind.capitalize()} · {format_when(call.time, now)}",
                self._opener("details", call.id),
                leading=ui.avatar(name, avatar_color(name)),
                trailing=ui.icon_button("signal", f"Call {name}", self._call(call.number), rid="call_back"),
                rid="call_log_item",
                on_long_click=self._ask_delete(call.id),
            )
            if call.kind == "missed":
                item.children[1].children[0].fg = ui.t.danger
            body.append(item)
        if not self.state.calls:
            body.append(ui.empty("Your call history is empty"))
        return body

    def _contacts(self, ui: UI) -> list[View | None]:
        contacts = self.phone.apps.get(CONTACTS)
        query = self.stack[0].fields.get("search", "").strip().lower()
        people = sorted(contacts.state.contacts, key=lambda c: c.name.lower()) if contacts else []
        if query:
            people = [c for c in people if query in c.name.lower() or query in digits(c.phone)]
        search = ui.edit("search", "Search contacts", rid="search_box")
        search.radius = ui.dp(28)
        body: list[View | None] = [ui.col(search, pad=(16, 4, 16, 8))]
        for c in people:
            body.append(
                ui.list_item(
                    c.name,
                    "",
                    self._opener("contact", c.id),
                    leading=ui.avatar(c.name, avatar_color(c.name)),
                    rid="contact_item",
                    desc=c.name,
                )
            )
        if not people:
            body.append(ui.empty("No contacts found"))
        return body

    def handle_back(self) -> bool:
        if self.screen.name == "call":
            self._hang_up()
            return True
        return self.clear_search()

    def _opener(self, screen: str, item_id: int) -> Callable[[], None]:
        def run() -> None:
            self.push(screen, id=item_id)

        return run

    def _call(self, number: str) -> Callable[[], None]:
        def run() -> None:
            self.dial(number)

        return run

    def _message(self, number: str) -> Callable[[], None]:
        def run() -> None:
            messages = self.phone.app(MESSAGES)
            self.phone.launch(MESSAGES)
            messages.open_conversation(self.name_for(number))  # type: ignore[attr-defined]

        return run

    def _ask_delete(self, call_id: int) -> Callable[[], None]:
        def run() -> None:
            self.show(
                dialogs.confirm(
                    self,
                    "Delete from call history?",
                    "This call will be removed from your call history.",
                    "Delete",
                    lambda: self._delete(call_id),
                )
            )

        return run

    def _delete(self, call_id: int) -> None:
        self.state.calls = [c for c in self.state.calls if c.id != call_id]
        self.toast("Call deleted")

    def _keypad(self, ui: UI) -> View:
        def press(key: str) -> Callable[[], None]:
            def run() -> None:
                self.screen.fields["digits"] = self.field("digits") + key

            return run

        def backspace() -> None:
            self.screen.fields["digits"] = self.field("digits")[:-1]

        def dial() -> None:
            number = self.field("digits").strip()
            if self.dial(number) is not None:
                self.stack[-2].fields["digits"] = ""

        display = ui.edit(
            "digits", "Enter a number", rid="digits", input_type="phone", size=28, boxed=False, on_submit=dial
        )
        rows: list[View | None] = [
            ui.row(
                display,
                ui.icon_button("backspace", "Backspace", backspace, rid="deleteButton"),
                pad=(16, 8, 8, 8),
            )
        ]
        display.weight = 1.0
        for i in range(0, 12, 3):
            keys = []
            for key in KEYS[i : i + 3]:
                button = ui.button(key, press(key), style="tonal", desc=key, rid=f"key_{key}")
                button.weight, button.h = 1.0, ui.dp(64)
                keys.append(button)
            rows.append(ui.row(*keys, gap=16, pad=(32, 6, 32, 6)))
        call_btn = ui.button("Call", dial, rid="dial_button", desc="Call")
        rows.append(ui.row(call_btn, pad=(96, 16, 96, 16)))
        call_btn.weight = 1.0
        return ui.page("Dial pad", rows, scroll_key="keypad")

    def _details(self, ui: UI, call: Call) -> View:
        name = self.name_for(call.number)
        blocked = self.is_blocked(call.number)

        def block() -> None:
            if blocked:
                self.state.blocked = [n for n in self.state.blocked if digits(n) != digits(call.number)]
                self.toast(f"{call.number} unblocked")
                return
            self.show(
                dialogs.confirm(
                    self,
                    f"Block {call.number}?",
                    "You will no longer receive calls or texts from this number.",
                    "Block",
                    lambda: self._block(call.number),
                )
            )

        def delete() -> None:
            self.pop()
            self._delete(call.id)

        buttons = ui.row(
            ui.button("Call", self._call(call.number), style="tonal", rid="call"),
            ui.button("Message", self._message(call.number), style="tonal", rid="message"),
            gap=8,
            pad=(16, 8, 16, 0),
        )
        more = ui.row(
            ui.button("Unblock number" if blocked else "Block number", block, style="outlined", rid="block"),
            ui.button("Delete", delete, style="outlined", color=ui.t.danger, rid="delete"),
            gap=8,
            pad=(16, 8, 16, 8),
        )
        buttons.h, more.h = ui.dp(56), ui.dp(64)
        body: list[View | None] = [
            ui.col(
                ui.avatar(name, avatar_color(name), 56),
                ui.text(name, 22, align="center", rid="caller", pad=(16, 4, 16, 0)),
                align="center",
                pad=(0, 4, 0, 4),
            ),
            ui.list_item(call.number, "Mobile", None, rid="number"),
            buttons,
            more,
            ui.section("Call history"),
        ]
        same = [c for c in self.state.calls if digits(c.number) == digits(call.number)]
        for c in sorted(same, key=lambda c: (c.time, c.id), reverse=True):
            minutes, seconds = divmod(c.duration, 60)
            length = f" · {minutes} min {seconds} sec" if c.kind != "missed" else ""
            body.append(
                ui.list_item(
                    f"{c.kind.capitalize()} call{length}",
                    format_full(c.time),
                    None,
                    rid="history_item",
                    selected=c.id == call.id,
                )
            )
        return ui.page("Call details", body, scroll_key="details")

    def _block(self, number: str) -> None:
        if not self.is_blocked(number):
            self.state.blocked.append(number)
        self.toast(f"{number} blocked")

    def _contact_card(self, ui: UI, contact: Any) -> View:
        def star() -> None:
            contact.starred = not contact.starred

        buttons = ui.row(
            ui.button("Call", self._call(contact.phone), style="tonal", rid="call"),
            ui.button("Message", self._message(contact.phone), style="tonal", rid="message"),
            ui.button("Unfavorite" if contact.starred else "Favorite", star, style="tonal", rid="star"),
            gap=8,
            pad=(16, 8, 16, 16),
        )
        buttons.h = ui.dp(72)
        body: list[View | None] = [
            ui.col(ui.avatar(contact.name, avatar_color(contact.name), 96), align="center", pad=(0, 8, 0, 8)),
            buttons,
            ui.list_item(contact.phone or "No number", "Mobile", None, rid="number"),
        ]
        return ui.page(contact.name, body, scroll_key="contact")

    def _blocked(self, ui: UI) -> View:
        def unblock(number: str) -> Callable[[], None]:
            def run() -> None:
                self.state.blocked = [n for n in self.state.blocked if n != number]
                self.toast(f"{number} unblocked")

            return run

        def add() -> None:
            def apply(text: str) -> None:
                if digits(text):
                    self._block(text.strip())

            self.show(dialogs.prompt(self, "Add a number", "Phone number", "", apply, ok_label="Block"))

        body: list[View | None] = [
            ui.col(ui.button("Add a number", add, style="text", rid="add_blocked"), pad=(8, 0, 8, 0))
        ]
        for number in self.state.blocked:
            body.append(
                ui.list_item(
                    number,
                    self.name_for(number) if self.name_for(number) != number else "",
                    None,
                    trailing=ui.icon_button("close", f"Unblock {number}", unblock(number), rid="unblock"),
                    rid="blocked_item",
                )
            )
        if not self.state.blocked:
            body.append(ui.empty("No blocked numbers"))
        return ui.page("Blocked numbers", body, scroll_key="blocked")

    def _hang_up(self) -> None:
        call = self._get(self.state.active)
        if call is not None:
            call.duration = int((self.phone.now - call.time).total_seconds())
        self.state.active = None
        self.pop()

    def _in_call(self, ui: UI, call: Call) -> View:
        name = self.name_for(call.number)
        end = ui.icon_button(
            "close", "End call", self._hang_up, rid="end_call", color=(255, 255, 255), bg=ui.t.danger, size=72
        )
        body: list[View | None] = [
            ui.col(
                ui.avatar(name, avatar_color(name), 96),
                ui.text(name, 28, align="center", rid="caller", pad=(16, 16, 16, 4)),
                ui.text(call.number if name != call.number else "Mobile", 16, muted=True, align="center"),
                ui.text("Calling…", 16, muted=True, align="center", rid="call_state", pad=(0, 8, 0, 48)),
                end,
                align="center",
                pad=(0, 48, 0, 0),
            )
        ]
        return ui.page("", body, back=False, scroll_key="call")


def _stranger(rng: random.Random) -> str:
    return f"+1 555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
