"""Cross-app tasks: read something in one app and act on it in another.

Each goal needs two or more apps ("Text Ana tomorrow's high in Paris": Weather, then Messages),
and ``app_names`` lists every one of them, the app where the result lands first. The checks
read the result from the acting app's state; the facts the agent must carry over are placed by
``setup`` in the source app, so the only way to the goal is to look them up there. App states
and screens are documented in the modules of :mod:`agent_runtime.simphone.apps`; the oracles
reuse the single-app tasks' helpers.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.maps import MODES, minutes
from agent_runtime.simphone.apps.weather import CONDITIONS, RAINY, to_units
from agent_runtime.simphone.tasks import calendar as cal
from agent_runtime.simphone.tasks import clock as clk
from agent_runtime.simphone.tasks import dialer as dial
from agent_runtime.simphone.tasks import expenses as exp
from agent_runtime.simphone.tasks import mail
from agent_runtime.simphone.tasks import maps as mp
from agent_runtime.simphone.tasks import notes as nts
from agent_runtime.simphone.tasks import weather as wx
from agent_runtime.simphone.tasks.base import Task, answers_match, normalise_answer, parse_times
from agent_runtime.simphone.tasks.common import CALL_PLACED, EMAIL_SENT, NOTE_WRITTEN, TEXT_SENT, showing
from agent_runtime.simphone.tasks.contacts import (
    contacts,
    digits,
    email_of,
    fill_contact,
    open_contact,
    place_contact,
    random_person,
)
from agent_runtime.simphone.tasks.messages import messages, send_text, sent, start_chat
from agent_runtime.simphone.tasks.oracle import OracleUI
from agent_runtime.simphone.tasks.typed_answers import TypedQuestion, parse_dates
from agent_runtime.simphone.ui.dialogs import format_time

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

TEXTS = (
    "Sorry I missed your call, I will ring you tonight",
    "Saw your call, talk soon",
    "Call you back in 10 minutes",
)
RESTAURANTS = ("Trattoria Roma", "Golden Dragon", "Sakura Sushi", "Cafe Luna")
SHOPS = {
    "Green Grocer": "Bakery",
    "Metro Transit": "Train ticket",
    "City Parking": "Parking",
    "Ticket Hall": "Concert tickets",
}


def has_text(text: str, part: str) -> bool:
    """``part`` occurs in ``text`` once both are normalised (case, punctuation, spacing)."""
    return normalise_answer(part) in normalise_answer(text)


def sent_texts(phone: SimPhone, name: str) -> list[str]:
    """Texts of the messages sent to ``name``'s conversation."""
    thread = messages(phone).thread_with(name)
    return [m.text for m in thread.messages if m.outgoing] if thread is not None else []


def item_title(ui: OracleUI, rid: str) -> str:
    row = ui.require(rid=rid)
    return next(el.text for el in ui.children(row) if el.resource_id.endswith("title"))


def text_to(ui: OracleUI, name: str, text: str) -> Iterator[Action]:
    yield from start_chat(ui, name)
    yield from send_text(ui, text)


def clear_days(phone: SimPhone, first: dt.date, last: dt.date) -> None:
    """No calendar events from ``first`` to ``last`` (inclusive)."""
    app = cal.calendar_app(phone)
    app.state.events = [e for e in app.state.events if not first <= e.date <= last]


def calendar_today(ui: OracleUI) -> Generator[Action, None, dt.date]:
    """Open Calendar, press Today and return the date it selected."""
    yield ui.open_app(cal.APP)
    yield from ui.tap("Today", rid="today")
    return cal.today_shown(ui)


def select_date(ui: OracleUI, day: dt.date) -> Iterator[Action]:
    """In the open Calendar, page to ``day``'s month and select it."""
    for _ in range(12):
        shown = cal.today_shown(ui)
        if (shown.year, shown.month) >= (day.year, day.month):
            break
        yield from ui.tap(desc="Next month")
    label = f"{day.day} {day.strftime('%B')} {day.year}"
    yield from ui.tap(where=lambda el: el.content_desc == label or el.content_desc.startswith(f"{label},"))


def find_event(ui: OracleUI, days: int, title: str | None = None) -> Generator[Action, None, dt.date]:
    """Select days from today on until one shows an event (titled ``title``); return that day."""
    today = yield from calendar_today(ui)
    for offset in range(days):
        day = today + dt.timedelta(days=offset)
        yield from select_date(ui, day)
        found = ui.find(rid="event_item") if title is None else ui.find(title, rid="title", cls="TextView")
        if found is not None:
            return day
    raise ui.error(f"no event {title or ''} in the next {days} days")


class CrossTask(Task):
    """A person of the task's own (``first``, ``last``, ``name``, ``number``) placed in Contacts."""

    complexity = 2.5

    def place_person(self, phone: SimPhone) -> None:
        p = self.params
        place_contact(phone, p["first"], p["last"], p["number"], p.get("email", ""))


class CrossTextEventLocation(CrossTask):
    template = "Text {name} the location of my next calendar event."
    app_names = ("Messages", "Calendar")
    footprint = TEXT_SENT
    complexity = 3.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            **random_person(rng),
            "title": rng.choice(cal.TITLES),
            "location": rng.choice(cal.LOCATIONS),
            "offset": rng.randint(1, 3),
            **cal.random_start(rng),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        self.place_person(phone)
        today = phone.now.date()
        clear_days(phone, today, today + dt.timedelta(days=p["offset"] + 1))
        day = today + dt.timedelta(days=p["offset"])
        cal.place_event(phone, p["title"], day, (p["hour"], p["minute"]), p["location"])
        later = next(loc for loc in cal.LOCATIONS if loc != p["location"])
        cal.calendar_app(phone).add_event("Dentist", day + dt.timedelta(days=2), (10, 0), (11, 0), later)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        ok = any(has_text(t, self.params["location"]) for t in sent_texts(phone, self.params["name"]))
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from find_event(ui, 7)
        yield from ui.tap(rid="event_item")
        location = item_title(ui, "location")
        yield from text_to(ui, self.params["name"], location)


class CrossEmailNote(CrossTask):
    template = (
        'Email {name} my note "{title}", with the note\'s title as the subject and its text as the message.'
    )
    app_names = ("Email", "Notes")
    footprint = EMAIL_SENT

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        person = random_person(rng)
        return {**person, "email": email_of(person["first"], person["last"], rng), **nts.random_note(rng)}

    def setup(self, phone: SimPhone) -> None:
        self.place_person(phone)
        nts.place_note(phone, self.params["title"], self.params["body"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        found = mail.sent_mail(phone, to=p["email"], subject=p["title"])
        ok = any(nts.lines(e.body) == nts.lines(p["body"]) for e in found)
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from nts.open_note(ui, self.params["title"])
        body = ui.require(rid="note_body").text
        yield ui.open_app(mail.APP)
        yield from ui.tap(desc="Compose")
        yield from mail.compose(ui, self.params["name"], self.params["title"], body)


class CrossCallLastTexter(CrossTask):
    template = "Call the person who texted me most recently."
    app_names = ("Phone", "Messages")
    footprint = CALL_PLACED
    complexity = 2.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            **random_person(rng),
            "text": rng.choice(("Call me when you can", "Are you free now?", "Ring me back")),
        }

    def setup(self, phone: SimPhone) -> None:
        self.place_person(phone)
        phone.advance_time(60)
        messages(phone).receive(self.params["name"], self.params["text"])
        dial.forget_number(phone, self.params["number"])
        self.place_person(phone)
        #: Calls placed during play have larger ids.
        self.last_id = max((c.id for c in dial.dialer(phone).state.calls), default=0)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if dial.calls_to(phone, self.params["number"], after=self.last_id) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app("Messages")
        first = ui.require(rid="conversation_item")
        name = next(el.text for el in ui.children(first) if el.resource_id.endswith("title"))
        yield from dial.open_contact_card(ui, name)
        yield from ui.tap("Call", rid="call")
        yield from dial.hang_up(ui)


class CrossCalendarFromEmail(CrossTask):
    template = "Add the dinner from {sender}'s email to my calendar, with the restaurant as the location."
    app_names = ("Calendar", "Email")
    footprint = ("apps.calendar.events[*]", "apps.calendar.next_id")
    complexity = 3.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        sender, address = rng.choice(mail.SENDERS)
        return {
            "sender": sender,
            "sender_address": address,
            "restaurant": rng.choice(RESTAURANTS),
            "offset": rng.randint(2, 9),
            "hour": rng.randint(18, 20),
            "minute": rng.choice((0, 30)),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        self.day = phone.now.date() + dt.timedelta(days=p["offset"])
        body = (
            f"Hi!\n\nShall we have dinner at {p['restaurant']} on {self.day.strftime('%A, %B %-d')} "
            f"at {format_time(p['hour'], p['minute'])}? I booked a table for two.\n\n{p['sender'].split()[0]}"
        )
        subject = {
            "topic": "dinner",
            "subject": "Dinner plans",
            "sender": p["sender"],
            "sender_address": p["sender_address"],
        }
        mail.place_mail(phone, subject, body)
        cal.calendar_app(phone).state.events = [
            e for e in cal.calendar_app(phone).state.events if e.date != self.day
        ]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        ok = any(
            e.date == self.day
            and e.start == (p["hour"], p["minute"])
            and has_text(e.location, p["restaurant"])
            for e in cal.calendar_app(phone).state.events
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from mail.open_mail(ui, "Dinner plans")
        body = ui.require(rid="email_body").text
        (_, month, day_of_month), (hour, minute) = parse_dates(body)[0], parse_times(body)[0]
        restaurant = body.split("dinner at ", 1)[1].split(" on ", 1)[0]
        today = yield from calendar_today(ui)
        year = today.year + (1 if month < today.month else 0)
        yield from select_date(ui, dt.date(year, month, day_of_month))
        yield from ui.tap(desc="New event")
        yield from cal.fill_event(
            ui, f"Dinner with {self.params['sender'].split()[0]}", hour, minute, restaurant
        )


class CrossTextWeatherHigh(CrossTask):
    template = "Text {name} tomorrow's high in {city} in degrees {unit_name}."
    app_names = ("Messages", "Weather")
    footprint = TEXT_SENT
    complexity = 2.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        unit = rng.choice(("C", "F"))
        return {
            **random_person(rng),
            "city": rng.choice(wx.NAMES),
            "unit": unit,
            "unit_name": wx.UNIT_NAMES[unit],
            "high": rng.randint(-5, 35),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        self.place_person(phone)
        wx.weather(phone).state.units = p["unit"]
        wx.ensure_city(phone, p["city"]).forecast[1].high_c = p["high"]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        want = str(to_units(self.params["high"], self.params["unit"]))
        ok = any(answers_match(want, t, kind="number") for t in sent_texts(phone, self.params["name"]))
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        p = self.params
        yield from wx.open_city(ui, p["city"])
        high = wx.shown_number(wx.forecast_row(ui, 1)["high_low"])
        yield from text_to(ui, p["name"], f"Tomorrow's high in {p['city']}: {high}°{p['unit']}")


class CrossTextPlaceAddress(CrossTask):
    template = "Text {name} the address of {place} from my saved places in Maps."
    app_names = ("Messages", "Maps")
    footprint = TEXT_SENT
    complexity = 2.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_person(rng), "place": rng.choice(mp.PLACES)}

    def setup(self, phone: SimPhone) -> None:
        self.place_person(phone)
        saved = mp.maps(phone).state.saved
        if self.params["place"] not in saved:
            saved.append(self.params["place"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        address = mp.address_of(self.params["place"])
        return 1.0 if any(has_text(t, address) for t in sent_texts(phone, self.params["name"])) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(mp.APP)
        yield from ui.tap("Saved", rid="title")
        yield from ui.tap(self.params["place"], rid="title")
        address = item_title(ui, "address")
        yield from text_to(ui, self.params["name"], address)


class CrossEmailDriveTime(CrossTask):
    template = (
        'Email {address} with the subject "{place}" and, as the message, how many minutes it takes me '
        "to drive there."
    )
    app_names = ("Email", "Maps")
    footprint = EMAIL_SENT
    complexity = 2.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            "address": rng.choice(mail.ADDRESSES),
            "place": rng.choice(mp.PLACES),
            "traffic": rng.choice((1.0, 1.2, 1.5)),
        }

    def setup(self, phone: SimPhone) -> None:
        mp.maps(phone).state.traffic = self.params["traffic"]
        #: The drive time the app shows.
        self.minutes = minutes(mp.place(phone, self.params["place"]).km, "drive", self.params["traffic"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = mail.sent_mail(phone, to=self.params["address"], subject=self.params["place"])
        ok = any(answers_match(str(self.minutes), e.body, kind="number") for e in found)
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from mp.directions(ui, self.params["place"], "drive")
        duration = ui.require(rid="duration").text
        yield ui.open_app(mail.APP)
        yield from ui.tap(desc="Compose")
        yield from mail.compose(ui, self.params["address"], self.params["place"], f"About {duration} by car.")


class CrossCallEmailSender(CrossTask):
    template = "Call the person who emailed me about {topic}."
    app_names = ("Phone", "Email")
    footprint = CALL_PLACED
    complexity = 2.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        person = random_person(rng)
        topic = rng.choice(sorted(mail.SUBJECTS))
        return {**person, "email": email_of(person["first"], person["last"], rng), "topic": topic}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        dial.forget_number(phone, p["number"])
        self.place_person(phone)
        mail.place_mail(
            phone,
            {
                "topic": p["topic"],
                "subject": mail.SUBJECTS[p["topic"]],
                "sender": p["name"],
                "sender_address": p["email"],
            },
        )
        self.last_id = max((c.id for c in dial.dialer(phone).state.calls), default=0)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if dial.calls_to(phone, self.params["number"], after=self.last_id) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from mail.open_mail(ui, mail.SUBJECTS[self.params["topic"]])
        sender = item_title(ui, "sender").split("<")[0].strip()
        yield from dial.open_contact_card(ui, sender)
        yield from ui.tap("Call", rid="call")
        yield from dial.hang_up(ui)


class CrossSaveMissedCaller(CrossTask):
    template = "Save the number of my most recent missed call as a new contact named {name}."
    app_names = ("Contacts", "Phone")
    footprint = ("apps.contacts.contacts[*]", "apps.contacts.next_id")
    complexity = 2.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_person(rng), "number": dial.stranger(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        dial.forget_number(phone, p["number"])
        book = contacts(phone)
        book.state.contacts = [c for c in book.state.contacts if c.name.casefold() != p["name"].casefold()]
        app = dial.dialer(phone)
        app.state.calls = [c for c in app.state.calls if c.kind != "missed"]
        dial.log_from(phone, p["number"], "missed", 0.5)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        ok = any(
            c.name.casefold() == p["name"].casefold() and digits(c.phone) == digits(p["number"])
            for c in contacts(phone).state.contacts
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from dial.open_tab(ui, "Recents")
        missed = ui.require(where=lambda el: el.text.startswith("Missed"), rid="summary")
        yield ui.click(ui.row_of(missed, rid="call_log_item"))
        number = item_title(ui, "number")
        yield ui.open_app("Contacts")
        yield from ui.tap(desc="Create contact")
        yield from fill_contact(
            ui, first_name=self.params["first"], last_name=self.params["last"], phone=number
        )


class CrossNoteWeather(CrossTask):
    template = 'Create a note titled "{title}" that says what the weather will be like in {city} tomorrow.'
    app_names = ("Notes", "Weather")
    footprint = NOTE_WRITTEN
    complexity = 2.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            "title": rng.choice(("Trip weather", "Weekend plans", "Packing", "Tomorrow")),
            "city": rng.choice(wx.NAMES),
            "condition": rng.choice(CONDITIONS),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        app = nts.notes_app(phone)
        app.state.notes = [n for n in app.state.notes if n.title.strip().casefold() != p["title"].casefold()]
        wx.ensure_city(phone, p["city"]).forecast[1].condition = p["condition"]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = nts.titled(phone, self.params["title"])
        return 1.0 if any(has_text(n.body, self.params["condition"]) for n in found) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from wx.open_city(ui, self.params["city"])
        summary = wx.forecast_row(ui, 1)["summary"]
        yield ui.open_app(nts.APP)
        yield from ui.tap(desc="New note")
        yield from ui.type_into(None, self.params["title"], rid="note_title")
        yield from ui.type_into(None, f"{self.params['city']} tomorrow: {summary}", rid="note_body")
        yield from ui.tap(desc="Save")


class CrossAlarmBeforeEvent(CrossTask):
    template = 'Set an alarm one hour before my "{title}" event tomorrow.'
    app_names = ("Clock", "Calendar")
    footprint = ("apps.clock.alarms[*]", "apps.clock.next_id")
    complexity = 2.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            "title": rng.choice(cal.TITLES),
            "hour": rng.randint(7, 20),
            "minute": rng.choice((0, 15, 30, 45)),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        day = phone.now.date() + dt.timedelta(days=1)
        cal.place_event(phone, p["title"], day, (p["hour"], p["minute"]))
        clk.clear_time(phone, p["hour"] - 1, p["minute"])

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        alarm = clk.clock(phone).find_alarm(self.params["hour"] - 1, self.params["minute"])
        return 1.0 if alarm is not None and alarm.enabled else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from cal.select_day(ui, 1)
        row = ui.row_of(ui.require(self.params["title"], rid="title", cls="TextView"))
        start = next(el.text for el in ui.children(row) if el.resource_id.endswith("summary")).split("–")[0]
        hour, minute = parse_times(start)[0]
        yield ui.open_app(clk.APP)
        yield from ui.tap(desc="Add alarm")
        yield from clk.set_time(ui, hour - 1, minute)


class CrossDirectionsToEvent(CrossTask):
    template = 'Show me {mode_adj} directions to where my "{title}" event is {when}.'
    app_names = ("Maps", "Calendar")
    complexity = 2.0
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        mode = rng.choice(sorted(MODES))
        return {
            "mode": mode,
            "mode_adj": mp.MODE_ADJ[mode],
            "title": rng.choice(cal.TITLES),
            "place": rng.choice(mp.PLACES),
            **cal.random_day(rng),
            **cal.random_start(rng),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        cal.place_event(
            phone, p["title"], cal.target_date(phone, p["offset"]), (p["hour"], p["minute"]), p["place"]
        )

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        return 1.0 if showing(phone, mp.PACKAGE, "directions", place=p["place"], mode=p["mode"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from cal.open_event(ui, self.params["offset"], self.params["title"])
        place = item_title(ui, "location")
        yield from mp.directions(ui, place, self.params["mode"])


class CrossEmailContactNumber(CrossTask):
    template = "Email {recipient} {name}'s phone number."
    app_names = ("Email", "Contacts")
    footprint = EMAIL_SENT
    complexity = 2.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        person, other = random_person(rng), random_person(rng)
        while other["first"] == person["first"]:
            other = random_person(rng)
        return {
            **person,
            "recipient": other["name"],
            "recipient_first": other["first"],
            "recipient_last": other["last"],
            "recipient_email": email_of(other["first"], other["last"], rng),
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        self.place_person(phone)
        place_contact(
            phone, p["recipient_first"], p["recipient_last"], dial.stranger(self.rng()), p["recipient_email"]
        )

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = mail.sent_mail(phone, to=self.params["recipient_email"])
        return 1.0 if any(digits(self.params["number"]) in digits(e.body) for e in found) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_contact(ui, self.params["name"])
        number = item_title(ui, "phone")
        yield ui.open_app(mail.APP)
        yield from ui.tap(desc="Compose")
        yield from mail.compose(ui, self.params["recipient"], f"{self.params['name']}'s number", number)


class CrossTextMissedCaller(CrossTask):
    template = 'Text {name}, whose call I missed, "{text}".'
    app_names = ("Messages", "Phone")
    footprint = TEXT_SENT
    complexity = 2.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_person(rng), "text": rng.choice(TEXTS)}

    def setup(self, phone: SimPhone) -> None:
        dial.forget_number(phone, self.params["number"])
        self.place_person(phone)
        dial.log_from(phone, self.params["number"], "missed", 1)

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if sent(phone, self.params["text"], address=self.params["name"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from dial.open_call(ui, self.params["name"])
        yield from ui.tap("Message", rid="message")
        yield from send_text(ui, self.params["text"])


class CrossExpenseFromEmail(CrossTask):
    template = 'Log the amount of my receipt email from {shop} in Expenses as "{title}".'
    app_names = ("Expenses", "Email")
    footprint = ("apps.expenses.expenses[*]", "apps.expenses.next_id")
    complexity = 2.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        shop = rng.choice(sorted(SHOPS))
        return {"shop": shop, "title": SHOPS[shop], **exp.random_amount(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        body = f"Thank you for your purchase.\n\nTotal charged: ${p['amount']}\nPaid by card ending 4417."
        address = f"receipts@{p['shop'].lower().replace(' ', '')}.sim"
        mail.place_mail(
            phone,
            {
                "topic": "receipt",
                "subject": f"Your receipt from {p['shop']}",
                "sender": p["shop"],
                "sender_address": address,
            },
            body,
        )
        app = exp.expenses_app(phone)
        app.state.expenses = [e for e in app.state.expenses if e.title.casefold() != p["title"].casefold()]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        ok = any(
            e.amount_cents == self.params["amount_cents"] for e in exp.titled(phone, self.params["title"])
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        p = self.params
        yield from mail.open_mail(ui, f"Your receipt from {p['shop']}")
        amount = exp.money(exp.cents_of(ui.require(rid="email_body").text)).lstrip("$")
        yield ui.open_app(exp.APP)
        yield from ui.tap(desc="Add expense")
        yield from ui.type_into(None, p["title"], rid="title", cls="EditText")
        yield from ui.type_into(None, amount, rid="amount", cls="EditText")
        yield from ui.tap("Save", rid="save")


class CrossEventRainQuestion(TypedQuestion):
    template = (
        'My "{title}" event is in {city}. Will it rain there on the day of the event? Answer yes or no.'
    )
    app_names = ("Weather", "Calendar")
    complexity = 2.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {
            "title": rng.choice(cal.TITLES),
            "city": rng.choice(wx.NAMES),
            "offset": rng.randint(1, 5),
            "rain": rng.random() < 0.5,
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        cal.place_event(phone, p["title"], cal.target_date(phone, p["offset"]), (10, 0), p["city"])
        day = wx.ensure_city(phone, p["city"]).forecast[p["offset"]]
        rng = self.rng()
        day.condition = rng.choice(sorted(RAINY) if p["rain"] else [c for c in CONDITIONS if c not in RAINY])
        day.rain_chance = 75 if p["rain"] else 10

    def expected_answer(self) -> str:
        return "yes" if self.params["rain"] else "no"

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        wanted = yield from find_event(ui, 7, self.params["title"])
        yield from wx.open_city(ui, self.params["city"])
        rows = wx.forecast_rows(ui)
        summary = next(
            texts["summary"] for date, texts in rows if parse_dates(date)[0][1:] == (wanted.month, wanted.day)
        )
        yield ui.answer("yes" if summary.split("·")[0].strip() in RAINY else "no")


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    CrossTextEventLocation,
    CrossEmailNote,
    CrossCallLastTexter,
    CrossCalendarFromEmail,
    CrossTextWeatherHigh,
    CrossTextPlaceAddress,
    CrossEmailDriveTime,
    CrossCallEmailSender,
    CrossSaveMissedCaller,
    CrossNoteWeather,
    CrossAlarmBeforeEvent,
    CrossDirectionsToEvent,
    CrossEmailContactNumber,
    CrossTextMissedCaller,
    CrossExpenseFromEmail,
    CrossEventRainQuestion,
)
