"""Email tasks: send, reply, forward, archive, delete, star, send a draft; reach a folder or an
email; questions (who sent it, what time the meeting is, how many are unread).

State and screens are documented in :mod:`agent_runtime.simphone.apps.mail`. Each task places
its own emails (subjects from :data:`SUBJECTS`, senders from :data:`SENDERS`) and first removes
any email with the same subject, so a goal names exactly one email.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.mail import Email, EmailApp
from agent_runtime.simphone.tasks.base import Task, normalise_answer, parse_times
from agent_runtime.simphone.tasks.common import REACH_VERBS, showing
from agent_runtime.simphone.tasks.contacts import email_of, place_contact, random_person
from agent_runtime.simphone.tasks.oracle import OracleUI
from agent_runtime.simphone.tasks.typed_answers import TypedQuestion
from agent_runtime.simphone.ui.dialogs import format_time

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.simphone.email"
APP = "Email"
#: (display name, address) of people who write to the user.
SENDERS = (
    ("Maya Lindqvist", "maya.lindqvist@work.sim"),
    ("Tom Okoro", "tom.okoro@mail.sim"),
    ("Priya Raman", "priya.raman@work.sim"),
    ("Lucas Meyer", "lucas.meyer@example.com"),
    ("Sofia Conti", "sofia.conti@mail.sim"),
    ("Daniel Park", "daniel.park@example.com"),
)
#: Topic -> subject line.
SUBJECTS = {
    "the budget": "Budget draft for Q3",
    "the offsite": "Team offsite agenda",
    "the new hire": "Welcome lunch for our new hire",
    "the launch": "Launch checklist",
    "the lease": "Apartment lease renewal",
    "the conference": "Conference travel plans",
    "the quarterly review": "Quarterly review slides",
}
BODIES = (
    "Sounds good to me.",
    "Thanks, I will take a look today.",
    "Can we move this to next week?",
    "Count me in!",
    "I have attached my comments.",
)
ADDRESSES = ("jordan.blake@mail.sim", "casey.nguyen@work.sim", "robin.hale@example.com", "sam.ortiz@mail.sim")
FOLDER_NAMES = {
    "inbox": "Inbox",
    "sent": "Sent",
    "drafts": "Drafts",
    "archive": "Archive",
    "trash": "Trash",
    "starred": "Starred",
}


def mail(phone: SimPhone) -> EmailApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, EmailApp)
    return app


def same(a: str, b: str) -> bool:
    return normalise_answer(a) == normalise_answer(b)


def random_mail(rng: random.Random) -> dict[str, Any]:
    topic = rng.choice(sorted(SUBJECTS))
    sender, address = rng.choice(SENDERS)
    return {"topic": topic, "subject": SUBJECTS[topic], "sender": sender, "sender_address": address}


def place_mail(
    phone: SimPhone, p: dict[str, Any], body: str = "", *, folder: str = "inbox", hours: float = 1
) -> Email:
    """Make this the only email with subject ``p["subject"]`` (received ``hours`` ago)."""
    app = mail(phone)
    app.state.emails = [e for e in app.state.emails if not same(e.subject, p["subject"])]
    signature = p["sender"].split()[0]
    body = body or f"Hi,\n\nHere is an update on {p['topic']}. Let me know what you think.\n\n{signature}"
    time = phone.now.replace(second=0, microsecond=0) - dt.timedelta(hours=hours)
    return app.add_email(folder, p["sender"], p["sender_address"], p["subject"], body, time=time)


def sent_mail(
    phone: SimPhone, *, to: str, subject: str | None = None, body_has: str | None = None
) -> list[Email]:
    """Sent emails to ``to`` (an address among the recipients) matching subject / body text."""
    out = []
    for e in mail(phone).state.emails:
        if e.folder != "sent" or to.casefold() not in {a.strip().casefold() for a in e.to.split(",")}:
            continue
        if subject is not None and not same(e.subject, subject):
            continue
        if body_has is not None and normalise_answer(body_has) not in normalise_answer(e.body):
            continue
        out.append(e)
    return out


def open_mail(ui: OracleUI, subject: str, folder: str = "Inbox") -> Iterator[Action]:
    """Open Email, search the subject in ``folder`` and open the email."""
    yield ui.open_app(APP)
    yield from ui.tap(folder, rid="folder_chip")
    yield from ui.type_into(None, subject, rid="search_box")
    yield from ui.tap(subject, rid="summary")


def compose(
    ui: OracleUI, to: str, subject: str | None, body: str, *, clear_body: bool = True
) -> Iterator[Action]:
    """Fill the open compose screen and press Send (``subject`` None keeps it)."""
    if to:
        yield from ui.type_into(None, to, rid="to")
    if subject is not None:
        yield from ui.type_into(None, subject, rid="subject")
    if body:
        yield from ui.type_into(None, body, rid="body", clear=clear_body)
    yield from ui.tap(desc="Send")


class EmailSend(Task):
    template = 'Send an email to {address} with the subject "{subject}" saying "{body}".'
    app_names = (APP,)
    complexity = 1.4

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            "address": rng.choice(ADDRESSES),
            "subject": rng.choice(sorted(SUBJECTS.values())),
            "body": rng.choice(BODIES),
        }

    def setup(self, phone: SimPhone) -> None:
        app = mail(phone)
        app.state.emails = [
            e for e in app.state.emails if e.folder != "sent" or not same(e.subject, self.params["subject"])
        ]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        found = sent_mail(phone, to=p["address"], subject=p["subject"])
        return 1.0 if any(same(e.body, p["body"]) for e in found) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        p = self.params
        yield ui.open_app(APP)
        yield from ui.tap(desc="Compose")
        yield from compose(ui, p["address"], p["subject"], p["body"])


class EmailSendToContact(Task):
    template = 'Email {name} with the subject "{subject}" and the message "{body}".'
    app_names = (APP,)
    complexity = 1.4

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        person = random_person(rng)
        return {
            **person,
            "email": email_of(person["first"], person["last"], rng),
            "subject": rng.choice(sorted(SUBJECTS.values())),
            "body": rng.choice(BODIES),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"], p["email"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        found = sent_mail(phone, to=p["email"], subject=p["subject"])
        return 1.0 if any(same(e.body, p["body"]) for e in found) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        p = self.params
        yield ui.open_app(APP)
        yield from ui.tap(desc="Compose")
        yield from compose(ui, p["name"], p["subject"], p["body"])


class EmailReply(Task):
    template = 'Reply to {sender}\'s email about {topic} with "{body}".'
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_mail(rng), "body": rng.choice(BODIES)}

    def setup(self, phone: SimPhone) -> None:
        place_mail(phone, self.params)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        found = sent_mail(phone, to=p["sender_address"], body_has=p["body"])
        return 1.0 if any(p["subject"].casefold() in e.subject.casefold() for e in found) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_mail(ui, self.params["subject"])
        yield from ui.tap("Reply", rid="reply")
        yield from ui.tap(rid="body")
        yield from compose(ui, "", None, self.params["body"], clear_body=False)


class EmailForward(Task):
    template = 'Forward the email "{subject}" to {address}.'
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_mail(rng), "address": rng.choice(ADDRESSES)}

    def setup(self, phone: SimPhone) -> None:
        #: The forwarded copy must carry the original's body.
        self.body = place_mail(phone, self.params).body

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        found = sent_mail(phone, to=p["address"], body_has=self.body.split("\n")[2])
        return 1.0 if any(p["subject"].casefold() in e.subject.casefold() for e in found) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_mail(ui, self.params["subject"])
        yield from ui.tap("Forward", rid="forward")
        yield from compose(ui, self.params["address"], None, "")


class _MoveTask(Task):
    """Moves one placed email; every other email must stay where it was."""

    app_names = (APP,)
    complexity = 1.0
    #: The folder the email must end in.
    target_folder = "archive"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_mail(rng)

    def setup(self, phone: SimPhone) -> None:
        #: The email to move.
        self.email_id = place_mail(phone, self.params).id
        self.others = {e.id: e.folder for e in mail(phone).state.emails if e.id != self.email_id}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        folders = {e.id: e.folder for e in mail(phone).state.emails}
        ok = folders.get(self.email_id) == self.target_folder and all(
            folders.get(i) == f for i, f in self.others.items()
        )
        return 1.0 if ok else 0.0


class EmailArchive(_MoveTask):
    template = 'Archive the email "{subject}".'

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_mail(ui, self.params["subject"])
        yield from ui.tap(desc="Archive")


class EmailDelete(_MoveTask):
    template = "Delete the email from {sender} about {topic}."
    target_folder = "trash"

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_mail(ui, self.params["subject"])
        yield from ui.tap(desc="Delete")


class EmailStar(Task):
    template = 'Star the email "{subject}" from {sender}.'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_mail(rng)

    def setup(self, phone: SimPhone) -> None:
        #: The email that must end up starred.
        self.email_id = place_mail(phone, self.params).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = [e for e in mail(phone).state.emails if e.id == self.email_id]
        return 1.0 if found and found[0].starred and found[0].folder == "inbox" else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_mail(ui, self.params["subject"])
        yield from ui.tap(desc="Star")


class EmailSendDraft(Task):
    template = 'Finish my draft "{subject}": add the line "{body}" at the end and send it.'
    app_names = (APP,)
    complexity = 1.4

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            "subject": rng.choice(sorted(SUBJECTS.values())),
            "address": rng.choice(ADDRESSES),
            "body": rng.choice(BODIES),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        app = mail(phone)
        app.state.emails = [e for e in app.state.emails if not same(e.subject, p["subject"])]
        #: The draft's first line; the sent email keeps it and ends with the new line.
        self.start = "Hi, a quick note before the meeting."
        self.draft_id = app.add_email(
            "drafts", "Me", app.state.account, p["subject"], self.start, to=p["address"], read=True
        ).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        found = sent_mail(phone, to=p["address"], subject=p["subject"], body_has=self.start)
        ok = any(normalise_answer(e.body).endswith(normalise_answer(p["body"])) for e in found)
        draft_gone = all(e.id != self.draft_id for e in mail(phone).state.emails)
        return 1.0 if ok and draft_gone else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_mail(ui, self.params["subject"], folder="Drafts")
        yield from ui.tap(rid="body")
        yield from compose(ui, "", None, "\n" + self.params["body"], clear_body=False)


class EmailReachFolder(Task):
    template = "{verb} my {folder_name} folder in Email."
    app_names = (APP,)
    complexity = 0.5
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        folder = rng.choice(("sent", "drafts", "archive", "trash", "starred"))
        return {"verb": rng.choice(REACH_VERBS), "folder": folder, "folder_name": FOLDER_NAMES[folder]}

    def setup(self, phone: SimPhone) -> None:
        pass

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        ok = (
            showing(phone, PACKAGE, "main")
            and mail(phone).stack[0].params.get("folder") == self.params["folder"]
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap(self.params["folder_name"], rid="folder_chip")


class EmailReachMessage(Task):
    template = "{verb} the email from {sender} about {topic}."
    app_names = (APP,)
    complexity = 0.6
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), **random_mail(rng)}

    def setup(self, phone: SimPhone) -> None:
        #: The email whose page must be showing.
        self.email_id = place_mail(phone, self.params, hours=30).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "read", id=self.email_id) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_mail(ui, self.params["subject"])


class EmailSenderQuestion(TypedQuestion):
    template = "Who sent me the email about {topic}?"
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_mail(rng)

    def setup(self, phone: SimPhone) -> None:
        place_mail(phone, self.params, hours=5)

    def expected_answer(self) -> str:
        return str(self.params["sender"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_mail(ui, self.params["subject"])
        row = ui.require(rid="sender")
        line = next(el.text for el in ui.children(row) if el.resource_id.endswith("title"))
        yield ui.answer(line.split("<")[0].strip())


class EmailMeetingTimeQuestion(TypedQuestion):
    template = 'What time is the meeting in the email "{subject}"?'
    app_names = (APP,)
    complexity = 0.8
    match = "time"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        hour, minute = rng.randrange(8, 18), rng.choice((0, 15, 30, 45))
        return {
            **random_mail(rng),
            "hour": hour,
            "minute": minute,
            "day": rng.choice(("Monday", "Tuesday", "Thursday", "Friday")),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        body = (
            f"Hi,\n\nLet's meet on {p['day']} at {format_time(p['hour'], p['minute'])} in room 4B "
            f"to go over {p['topic']}. It should take about 45 minutes.\n\n{p['sender'].split()[0]}"
        )
        place_mail(phone, p, body)

    def expected_answer(self) -> str:
        return format_time(self.params["hour"], self.params["minute"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_mail(ui, self.params["subject"])
        body = ui.require(rid="email_body").text
        times = parse_times(body)
        if not times:
            raise ui.error("no time in the email")
        yield ui.answer(format_time(*times[0]))


class EmailUnreadCountQuestion(TypedQuestion):
    template = "How many unread emails are in my inbox?"
    app_names = (APP,)
    complexity = 0.6
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"unread": rng.randint(0, 4), "read": rng.randint(0, 3)}

    def setup(self, phone: SimPhone) -> None:
        app = mail(phone)
        app.state.emails = [e for e in app.state.emails if e.folder != "inbox"]
        rng = self.rng()
        topics = rng.sample(sorted(SUBJECTS), self.params["unread"] + self.params["read"])
        for i, topic in enumerate(topics):
            sender, address = rng.choice(SENDERS)
            email = place_mail(
                phone,
                {"topic": topic, "subject": SUBJECTS[topic], "sender": sender, "sender_address": address},
                hours=i + 1,
            )
            email.read = i >= self.params["unread"]

    def expected_answer(self) -> str:
        return str(self.params["unread"])

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from ui.tap("Inbox", rid="folder_chip")
        unread = ui.find_all(rid="email_item", where=lambda el: el.content_desc.startswith("Unread"))
        yield ui.answer(str(len(unread)))


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    EmailSend,
    EmailSendToContact,
    EmailReply,
    EmailForward,
    EmailArchive,
    EmailDelete,
    EmailStar,
    EmailSendDraft,
    EmailReachFolder,
    EmailReachMessage,
    EmailSenderQuestion,
    EmailMeetingTimeQuestion,
    EmailUnreadCountQuestion,
)
