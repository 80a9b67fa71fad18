"""Messages (``com.android.messaging``, label ``Messages``).

State — :class:`MessagesState`:
    ``threads``: list of :class:`Thread` (``id``, ``address`` — a contact's full name or a
    phone number, ``messages``: list of :class:`Message` (``outgoing`` bool, ``text``,
    ``time`` virtual datetime, ``to`` the number an outgoing one went to), ``unread``);
    ``next_id``. Seeded with a few threads with contacts from the Contacts app. Helpers:
    :meth:`MessagesApp.thread_with`, :meth:`MessagesApp.send` (what the UI's send button does),
    :meth:`MessagesApp.receive`.

Screens:
    * ``main`` "Messages": one item per conversation, newest first (title = address, summary =
      last message, "You: " prefix for sent ones); FAB "Start chat".
    * ``new`` "New conversation": EditText "To" (resource-id ``recipient_text_view``, hint
      "Type a name or phone number"); matching contacts are listed below it (tap one to open
      the conversation); ENTER opens a conversation with the typed contact name or number.
    * ``conversation`` (title = address): message bubbles (TextViews, resource-id
      ``message_text``), EditText "Text message" (resource-id ``compose_message_text``) and an
      ImageButton "Send SMS" (resource-id ``send_message_button``).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_runtime.simphone.app import App
from agent_runtime.simphone.apps.contacts import avatar_color
from agent_runtime.simphone.ui.theme import text_width
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

_SEED_TEXTS = (
    ("Are we still on for lunch tomorrow?", "Yes! 12:30 at the usual place."),
    ("Can you send me the report?", "Sent it to your email."),
    ("Happy birthday!!", "Thank you so much!"),
    ("Running 10 minutes late", "No problem, see you soon"),
    ("Did you see the game last night?", "What a finish!"),
)


@dataclass
class Message:
    outgoing: bool
    text: str
    time: dt.datetime
    #: Where an outgoing message went: its thread's address as Contacts resolved it when it was
    #: sent (a contact's number then, which a later edit of the contact does not change).
    to: str = ""


@dataclass
class Thread:
    id: int
    address: str
    messages: list[Message] = field(default_factory=list)
    unread: bool = False

    @property
    def last_time(self) -> dt.datetime:
        return self.messages[-1].time if self.messages else dt.datetime.min


@dataclass
class MessagesState:
    threads: list[Thread] = field(default_factory=list)
    next_id: int = 1


class MessagesApp(App):
    package = "com.android.messaging"
    label = "Messages"
    activity = "com.android.messaging.ui.conversationlist.ConversationListActivity"
    viewing_changes = ("threads[*].unread",)

    def initial_state(self, rng: random.Random) -> MessagesState:
        state = MessagesState()
        contacts = self.phone.apps.get("com.android.contacts")
        people = [c.name for c in contacts.state.contacts] if contacts else ["+1 555-010-2000"]
        now = self.phone.now
        for i, name in enumerate(rng.sample(people, min(3, len(people)))):
            first, reply = rng.choice(_SEED_TEXTS)
            when = now - dt.timedelta(hours=3 * (i + 1), minutes=rng.randint(0, 50))
            thread = Thread(
                state.next_id,
                name,
                [Message(False, first, when), Message(True, reply, when + dt.timedelta(minutes=4))],
            )
            thread.unread = rng.random() < 0.3
            state.threads.append(thread)
            state.next_id += 1
        return state

    # -- helpers ------------------------------------------------------------------------------

    def thread_with(self, address: str) -> Thread | None:
        wanted = address.strip().lower()
        return next((t for t in self.state.threads if t.address.lower() == wanted), None)

    def _thread(self, thread_id: int) -> Thread | None:
        return next((t for t in self.state.threads if t.id == thread_id), None)

    def _ensure_thread(self, address: str) -> Thread:
        thread = self.thread_with(address)
        if thread is None:
            thread = Thread(self.state.next_id, address)
            self.state.next_id += 1
            self.state.threads.append(thread)
        return thread

    def resolve(self, address: str) -> str:
        """The number a message to ``address`` goes to: the number of the contact it names (by
        full name, first name or number), else ``address`` itself."""
        contacts = self.phone.apps.get("com.android.contacts")
        contact = contacts.find(address) if contacts else None  # type: ignore[attr-defined]
        return contact.phone if contact is not None and contact.phone else address

    def send(self, address: str, text: str) -> Message:
        message = Message(True, text, self.phone.now, to=self.resolve(address))
        self._ensure_thread(address).messages.append(message)
        return message

    def receive(self, address: str, text: str) -> Message:
        message = Message(False, text, self.phone.now)
        thread = self._ensure_thread(address)
        thread.messages.append(message)
        thread.unread = True
        return message

    def open_conversation(self, address: str) -> None:
        """Show the conversation with ``address`` (used by Contacts' "Text" button)."""
        thread = self._ensure_thread(address)
        thread.unread = False
        self.pop_to_root()
        self.push("conversation", id=thread.id)

    def activity_name(self) -> str:
        if self.screen.name == "conversation":
            return "com.android.messaging.ui.conversation.ConversationActivity"
        return self.activity

    # -- screens ----------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        if self.screen.name == "conversation":
            thread = self._thread(self.screen.params["id"])
            if thread is not None:
                return self._conversation(ui, thread)
            self.pop_to_root()
        if self.screen.name == "new":
            return self._new(ui)
        return self._main(ui)

    def _main(self, ui: UI) -> View:
        threads = sorted(
            (t for t in self.state.threads if t.messages), key=lambda t: t.last_time, reverse=True
        )
        body: list[View | None] = []
        for t in threads:
            last = t.messages[-1]
            snippet = ("You: " if last.outgoing else "") + last.text
            item = ui.list_item(
                t.address,
                snippet,
                self._open(t.id),
                leading=ui.avatar(t.address, avatar_color(t.address)),
                rid="conversation_item",
                trailing=ui.text(self._when(last.time), 12, muted=True),
            )
            if t.unread:
                item.children[1].children[0].bold = True
            body.append(item)
        if not threads:
            body.append(ui.empty("No conversations yet. Tap Start chat to send a message."))
        return ui.page(
            "Messages",
            body,
            back=False,
            fab=ui.fab("Start chat", self._compose, shape="send"),
            scroll_key="threads",
        )

    def _compose(self) -> None:
        self.phone.focus_field(self.push("new"), "to")

    def _when(self, time: dt.datetime) -> str:
        now = self.phone.now
        if time.date() == now.date():
            return f"{time.hour % 12 or 12}:{time.minute:02d} {'AM' if time.hour < 12 else 'PM'}"
        return time.strftime("%b %-d")

    def _open(self, thread_id: int) -> Callable[[], None]:
        def run() -> None:
            thread = self._thread(thread_id)
            if thread is not None:
                thread.unread = False
            self.push("conversation", id=thread_id)

        return run

    def _new(self, ui: UI) -> View:
        query = self.field("to").strip()
        contacts = self.phone.apps.get("com.android.contacts")
        people: list[Any] = sorted(contacts.state.contacts, key=lambda c: c.name.lower()) if contacts else []
        if query:
            q = query.lower()
            people = [
                c
                for c in people
                if q in c.name.lower() or q.replace(" ", "") in c.phone.replace(" ", "").replace("-", "")
            ]

        def submit() -> None:
            text = self.field("to").strip()
            if not text:
                return
            exact = next((c for c in people if c.name.lower() == text.lower()), None)
            if exact is not None:
                self._start(exact.name)()
            elif len(people) == 1:
                self._start(people[0].name)()
            elif any(ch.isdigit() for ch in text):
                self._start(text)()
            else:
                self.toast("No contact matches that name")

        to = ui.edit("to", "Type a name or phone number", rid="recipient_text_view", on_submit=submit)
        header = ui.col(ui.row(ui.text("To", 16, muted=True, h=56), to, gap=12), pad=(16, 0, 16, 8))
        to.weight = 1.0
        body: list[View | None] = [ui.section("Top contacts" if not query else "Contacts")]
        for c in people:
            body.append(
                ui.list_item(
                    c.name,
                    c.phone,
                    self._start(c.name),
                    leading=ui.avatar(c.name, avatar_color(c.name)),
                    rid="contact_picker_item",
                )
            )
        if not people:
            body.append(
                ui.empty(
                    "Press Enter to send to this number"
                    if any(ch.isdigit() for ch in query)
                    else "No matching contacts"
                )
            )
        return ui.page("New conversation", body, header=header, scroll_key="pick")

    def _start(self, address: str) -> Callable[[], None]:
        def run() -> None:
            thread = self._ensure_thread(address)
            self.replace("conversation", id=thread.id)

        return run

    def _conversation(self, ui: UI, thread: Thread) -> View:
        t = ui.t
        bubbles: list[View | None] = []
        for m in thread.messages:
            bubble = ui.text(
                m.text,
                16,
                lines=0,
                rid="message_text",
                color=t.on_primary if m.outgoing else t.on_bg,
                pad=(14, 10, 14, 10),
            )
            bubble.bg = t.primary if m.outgoing else t.surface
            bubble.border = None if m.outgoing else t.divider
            bubble.radius = ui.dp(18)
            bubble.w = min(ui.dp(300), bubble.pad[0] + bubble.pad[2] + _text_w(bubble))
            stamp = ui.text(
                self._when(m.time), 12, muted=True, align="end" if m.outgoing else "start", pad=(4, 2, 4, 0)
            )
            group = ui.col(bubble, stamp, align="end" if m.outgoing else "start", pad=(16, 6, 16, 6))
            bubbles.append(group)

        def send() -> None:
            text = self.field("message").strip()
            if not text:
                return
            self.send(thread.address, text)
            self.screen.fields["message"] = ""
            self.screen.scroll.pop("chat", None)

        compose = ui.edit("message", "Text message", rid="compose_message_text", on_submit=send)
        compose.weight = 1.0
        compose.radius = ui.dp(28)
        send_btn = ui.icon_button("send", "Send SMS", send, rid="send_message_button", color=t.primary)
        footer = ui.row(compose, send_btn, gap=8, pad=(12, 8, 8, 8))
        footer.h = ui.dp(72)
        footer.bg = t.bg
        return ui.page(thread.address, bubbles, footer=footer, scroll_key="chat", start_at_end=True)


def _text_w(v: View) -> int:
    return max(text_width(line, v.size, v.bold) for line in (v.text.split("\n") or [""])) + 2
