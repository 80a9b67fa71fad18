"""Email (``com.simphone.email``, label ``Email``).

State — :class:`EmailState`:
    ``emails``: list of :class:`Email` (``id``, ``folder`` — ``inbox``, ``sent``, ``drafts``,
    ``archive`` or ``trash`` —, ``sender`` display name, ``sender_address``, ``to`` address(es),
    ``subject``, ``body``, ``time`` virtual datetime, ``read``, ``starred``); ``account`` (the
    user's address); ``next_id``. Helpers: :meth:`EmailApp.add_email`, :meth:`EmailApp.send`
    (what Send does), :meth:`EmailApp.resolve` (a contact's name → their email address).

Screens:
    * ``main`` (title = folder, e.g. "Inbox"): EditText "Search in mail" (``search_box``;
      filters subject, sender and body), folder chips "Inbox", "Starred", "Sent", "Drafts",
      "Archive", "Trash" (``folder_chip``), then the folder's emails newest first (item
      ``email_item``: title = sender — "To: …" in Sent and Drafts —, summary = subject,
      trailing time; unread ones bold, their content-desc starting "Unread, "); FAB "Compose".
    * ``read`` (title = subject): "From" (``sender``: ``Name <address>``), "To" (``recipient``),
      date (``email_time``), the body (``email_body``); app-bar buttons "Star"/"Unstar",
      "Archive" (or "Move to inbox"), "Delete"; buttons "Reply" and "Forward".
    * ``compose`` "Compose" (or "Reply", "Forward", "Draft"): EditTexts "To" (``to``; a
      contact's name is replaced by their address on send), "Subject" (``subject``) and
      "Compose email" (``body``, multi-line); app-bar button "Send". Back saves a non-empty
      message to Drafts ("Draft saved").
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.apps.contacts import avatar_color
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

CONTACTS = "com.android.contacts"
FOLDERS = ("inbox", "starred", "sent", "drafts", "archive", "trash")
ME = "me@simphone.sim"
_SEED_MAIL = (
    ("Northwind Bank", "alerts@northwind.sim", "Your monthly statement is ready",
     "Your statement for last month is now available in online banking."),
    ("City Library", "hello@citylibrary.sim", "Your reserved book is waiting",
     "Piranesi is ready for pickup at the front desk until Friday."),
    ("Trailhead Outfitters", "news@trailhead.sim", "Spring sale: 20% off tents",
     "This weekend only, all tents are 20% off in store and online."),
    ("SkyHop Airlines", "no-reply@skyhop.sim", "Check-in is open",
     "Check-in for your flight is now open. Choose your seat in the app."),
    ("Green Grocer", "orders@greengrocer.sim", "Your order has shipped",
     "Your order of seasonal vegetables is on its way."),
)  # fmt: skip


@dataclass
class Email:
    id: int
    folder: str
    sender: str
    sender_address: str
    to: str
    subject: str
    body: str = ""
    time: dt.datetime = dt.datetime(2025, 1, 1)
    read: bool = False
    starred: bool = False


@dataclass
class EmailState:
    emails: list[Email] = field(default_factory=list)
    account: str = ME
    next_id: int = 1


class EmailApp(App):
    package = "com.simphone.email"
    label = "Email"
    activity = "com.simphone.email.MailActivity"
    #: Opening an email marks it read.
    viewing_changes = ("emails[*].read",)

    def initial_state(self, rng: random.Random) -> EmailState:
        state = EmailState()
        now = self.phone.now
        for i, (sender, address, subject, body) in enumerate(rng.sample(_SEED_MAIL, 4)):
            when = now - dt.timedelta(hours=4 * i + rng.randint(1, 3), minutes=rng.randint(0, 59))
            state.emails.append(
                Email(state.next_id, "inbox", sender, address, ME, subject, body, when, rng.random() < 0.5)
            )
            state.next_id += 1
        return state

    # -- helpers for tasks and other apps ------------------------------------------------------

    def add_email(
        self,
        folder: str,
        sender: str,
        sender_address: str,
        subject: str,
        body: str = "",
        *,
        to: str = ME,
        time: dt.datetime | None = None,
        read: bool = False,
    ) -> Email:
        email = Email(
            self.state.next_id,
            folder,
            sender,
            sender_address,
            to,
            subject,
            body,
            time or self.phone.now,
            read,
        )
        self.state.next_id += 1
        self.state.emails.append(email)
        return email

    def resolve(self, recipients: str) -> str:
        """Comma-separated recipients with contact names replaced by the contacts' addresses."""
        contacts = self.phone.apps.get(CONTACTS)
        out = []
        for part in (p.strip() for p in recipients.split(",")):
            if not part:
                continue
            contact = contacts.find(part) if contacts is not None and "@" not in part else None  # type: ignore[attr-defined]
            out.append(contact.email if contact is not None and contact.email else part)
        return ", ".join(out)

    def send(self, to: str, subject: str, body: str) -> Email:
        return self.add_email("sent", "Me", self.state.account, subject, body, to=self.resolve(to), read=True)

    def _get(self, email_id: int | None) -> Email | None:
        return next((e for e in self.state.emails if e.id == email_id), None)

    def _folder(self) -> str:
        return str(self.stack[0].params.get("folder", "inbox"))

    def activity_name(self) -> str:
        if self.screen.name == "compose":
            return "com.simphone.email.ComposeActivity"
        return self.activity

    # -- screens ----------------------------------------------------------------------------

    def build(self, ui: UI) -> View:
        if self.screen.name == "read":
            email = self._get(self.screen.params.get("id"))
            if email is not None:
                return self._read(ui, email)
            self.pop_to_root()
        if self.screen.name == "compose":
            return self._compose(ui)
        return self._main(ui)

    def _in_folder(self, folder: str) -> list[Email]:
        if folder == "starred":
            found = [e for e in self.state.emails if e.starred and e.folder != "trash"]
        else:
            found = [e for e in self.state.emails if e.folder == folder]
        return sorted(found, key=lambda e: (e.time, e.id), reverse=True)

    def _main(self, ui: UI) -> View:
        folder = self._folder()
        query = self.field("search").strip().lower()
        emails = self._in_folder(folder)
        if query:
            emails = [
                e
                for e in emails
                if query in f"{e.subject} {e.sender} {e.sender_address} {e.body} {e.to}".lower()
            ]
        search = ui.edit("search", "Search in mail", rid="search_box")
        search.radius = ui.dp(28)
        chips = [
            ui.chip(name.capitalize(), name == folder, self._select(name), rid="folder_chip")
            for name in FOLDERS
        ]
        body: list[View | None] = [
            ui.col(search, pad=(16, 4, 16, 8)),
            ui.col(ui.row(*chips[:3], gap=8), ui.row(*chips[3:], gap=8), gap=8, pad=(16, 0, 16, 8)),
        ]
        for e in emails:
            outgoing = e.folder in ("sent", "drafts")
            who = f"To: {e.to}" if outgoing else e.sender
            item = ui.list_item(
                who or "(no recipient)",
                e.subject or "(no subject)",
                self._open(e.id),
                leading=ui.avatar(who, avatar_color(who)),
                trailing=ui.text(_when(e.time, self.phone.now), 12, muted=True),
                rid="email_item",
                desc=f"{'' if e.read else 'Unread, '}{who}, {e.subject or '(no subject)'}",
            )
            if not e.read:
                item.children[1].children[0].bold = True
            body.append(item)
        if not emails:
            body.append(ui.empty("No matching emails" if query else f"Nothing in {folder.capitalize()}"))
        fab = ui.fab("Compose", self._new, shape="plus", label="Compose", rid="compose_button")
        return ui.page(folder.capitalize(), body, back=False, fab=fab, scroll_key=f"mail_{folder}")

    def _select(self, folder: str) -> Callable[[], None]:
        def run() -> None:
            self.stack[0].params["folder"] = folder
            self.stack[0].fields["search"] = ""

        return run

    def handle_back(self) -> bool:
        if self.screen.name == "compose":
            self._save_draft()
            return False
        return self.clear_search()

    def _open(self, email_id: int) -> Callable[[], None]:
        def run() -> None:
            email = self._get(email_id)
            if email is None:
                return
            if email.folder == "drafts":
                self._edit(email.to, email.subject, email.body, "Draft", draft=email.id)
                return
            email.read = True
            self.push("read", id=email_id)

        return run

    def _new(self) -> None:
        self._edit("", "", "", "Compose")

    def _edit(self, to: str, subject: str, body: str, title: str, draft: int | None = None) -> None:
        screen = self.push(
            "compose", fields={"to": to, "subject": subject, "body": body}, title=title, draft=draft
        )
        self.phone.focus_field(screen, "body" if to else "to")

    def _save_draft(self) -> None:
        to, subject, body = (
            self.field("to").strip(),
            self.field("subject").strip(),
            self.field("body").rstrip(),
        )
        if not (to or subject or body):
            return
        draft = self._get(self.screen.params.get("draft"))
        if draft is None:
            draft = self.add_email("drafts", "Me", self.state.account, subject, body, to=to, read=True)
            self.screen.params["draft"] = draft.id
        else:
            draft.to, draft.subject, draft.body, draft.time = to, subject, body, self.phone.now
        self.toast("Draft saved")

    def _compose(self, ui: UI) -> View:
        def send() -> None:
            to = self.field("to").strip()
            if not to:
                self.toast("Add at least one recipient")
                return
            draft = self.screen.params.get("draft")
            self.state.emails = [e for e in self.state.emails if e.id != draft]
            self.send(to, self.field("subject").strip(), self.field("body").rstrip())
            self.pop()
            self.toast("Sent")

        fields = [
            ui.edit("to", "To", rid="to"),
            ui.edit("subject", "Subject", rid="subject"),
            ui.edit("body", "Compose email", rid="body", multiline=True),
        ]
        fields[2].h = ui.dp(320)
        actions = [ui.icon_button("send", "Send", send, rid="send", color=ui.t.primary)]
        body: list[View | None] = [ui.col(*fields, gap=12, pad=(16, 8, 16, 16))]
        return ui.page(
            str(self.screen.params.get("title", "Compose")), body, actions=actions, scroll_key="compose"
        )

    def _read(self, ui: UI, email: Email) -> View:
        def star() -> None:
            email.starred = not email.starred

        def archive() -> None:
            email.folder = "inbox" if email.folder == "archive" else "archive"
            self.pop()
            self.toast("Moved to Inbox" if email.folder == "inbox" else "Archived")

        def delete() -> None:
            email.folder = "trash"
            self.pop()
            self.toast("Moved to Trash")

        def reply() -> None:
            quoted = "\n\n" + "\n".join(f"> {line}" for line in email.body.split("\n"))
            subject = email.subject if email.subject.lower().startswith("re:") else f"Re: {email.subject}"
            self._edit(email.sender_address, subject, quoted, "Reply")

        def forward() -> None:
            header = (
                "\n\n---------- Forwarded message ----------\n"
                f"From: {email.sender} <{email.sender_address}>\n"
            )
            self._edit(
                "", f"Fwd: {email.subject}", header + f"Subject: {email.subject}\n\n{email.body}", "Forward"
            )

        archived = email.folder == "archive"
        actions = [
            ui.icon_button(
                "star" if email.starred else "star_outline",
                "Unstar" if email.starred else "Star",
                star,
                rid="star",
            ),
            ui.icon_button("check", "Move to inbox" if archived else "Archive", archive, rid="archive"),
            ui.icon_button("delete", "Delete", delete, rid="delete"),
        ]
        buttons = ui.row(
            ui.button("Reply", reply, style="outlined", rid="reply"),
            ui.button("Forward", forward, style="outlined", rid="forward"),
            gap=12,
            pad=(16, 16, 16, 16),
        )
        buttons.h = ui.dp(72)
        body: list[View | None] = [
            ui.text(email.subject or "(no subject)", 22, lines=0, rid="email_subject", pad=(16, 8, 16, 8)),
            ui.list_item(f"{email.sender} <{email.sender_address}>", "From", None, rid="sender"),
            ui.list_item(email.to, "To", None, rid="recipient"),
            ui.text(_full(email.time), 14, muted=True, rid="email_time", pad=(16, 4, 16, 8)),
            ui.divider(),
            ui.text(email.body, 16, lines=0, rid="email_body", pad=(16, 12, 16, 12)),
            buttons,
        ]
        return ui.page("", body, actions=actions, scroll_key="read")


def _when(time: dt.datetime, now: dt.datetime) -> str:
    if time.date() == now.date():
        return dialogs.format_time(time.hour, time.minute)
    return time.strftime("%b %-d")


def _full(time: dt.datetime) -> str:
    return f"{time.strftime('%a, %b %-d, %Y')}, {dialogs.format_time(time.hour, time.minute)}"
