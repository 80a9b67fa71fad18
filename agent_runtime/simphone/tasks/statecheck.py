"""A goal no template expresses is judged by what the run changed on the phone.

"Add a note saying buy milk" is no template's goal, yet SimPhone can still tell a run that did
it from one that did not: the app data (:attr:`App.state` of every app) is compared before and
after the run, and the change is held against what the goal asks (:func:`read_intent`: the apps
its words name, the text, times and names it quotes, whether it removes something).

* nothing changed → failed: the agent's "done" changed nothing;
* only apps the goal does not name changed → failed: an unrelated change;
* the named app changed, and what was added (or, for delete/remove goals, removed) there
  contains every quoted text, time and name of the goal → verified;
* the named app changed but none of its changes carries them → failed;
* the goal names no app this check knows → not checked (the change cannot be judged).

Only stored data counts, never the screen: a search box typed into, a screen left open or an
unsaved edit is no change. Two kinds of goal change no data, and are judged otherwise: a goal
that only asks to reach an app ("Open Settings", "Go to my notes") is met when that app is in
front at the end; a question no template expresses cannot be checked (its answer is unknown).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_runtime.simphone.tasks.base import normalise_answer
from agent_runtime.simphone.ui.dialogs import format_time
from agent_runtime.traces import Verification

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

#: Every app's stored data as records, by app label (see :func:`snapshot`).
Snapshot = Mapping[str, frozenset[str]]
#: The checker's name in run.json.
BY = "simphone:state-change"

#: Words that name an app in a goal (matched as whole words, case-insensitively).
APP_WORDS: dict[str, tuple[str, ...]] = {
    "Browser": ("browser", "bookmark", "bookmarks", "website", "web page", "url", "search the web"),
    "Calendar": ("calendar", "event", "events", "meeting", "appointment"),
    "Clock": ("alarm", "alarms", "timer", "clock", "wake me"),
    "Contacts": ("contact", "contacts", "favorite", "favourite"),
    "Expenses": ("expense", "expenses", "spent", "spend"),
    "Messages": ("text", "texts", "message", "messages", "sms", "reply"),
    "Notes": ("note", "notes", "jot", "write down"),
    "Settings": (
        "settings", "wi-fi", "wifi", "bluetooth", "airplane", "brightness", "volume", "dark theme",
        "dark mode", "font", "do not disturb", "battery saver", "screen timeout",
    ),
    "Shop": ("shop", "cart", "buy", "order", "wishlist"),
    "Files": ("files", "file", "folder", "folders", "file manager", "downloads"),
    "Gallery": ("gallery", "photo", "photos", "picture", "pictures", "photo album", "camera roll"),
    "Music": ("music", "song", "songs", "playlist", "playlists", "shuffle"),
    "Recorder": ("recorder", "recording", "recordings", "voice memo", "voice memos"),
    "Phone": ("call", "calls", "dial", "dialer", "phone app", "call log", "missed call", "block", "unblock"),
    "Email": ("email", "emails", "e-mail", "mail", "inbox", "gmail"),
    "Maps": ("map", "maps", "directions", "route", "saved place", "saved places"),
    "Weather": ("weather", "forecast", "temperature", "celsius", "fahrenheit"),
}  # fmt: skip

_QUOTED = re.compile(r"[\"“”]([^\"“”]+)[\"“”]")
_SAYING = re.compile(r"(?:\bsaying\b|\bthat says\b|\bwhich says\b|\bwith the text\b|:(?=\s))\s*(.+)$", re.I)
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s*m\b\.?|\b(\d{1,2}):(\d{2})\b", re.I)
_REACH = re.compile(
    r"^\s*(?:please\s+)?(?:open|launch|show(?:\s+me)?|go\s+to|navigate\s+to|take\s+me\s+to|"
    r"jump\s+to|switch\s+to|visit)\b(?!.*\b(?:and|then)\b)",
    re.I,
)
_QUESTION = re.compile(
    r"^\s*(?:what|who|when|where|which|how|why|is|are|do|does|did|can|could)\b|\?\s*$", re.I
)
_REMOVES = re.compile(r"^\s*(?:please\s+)?(?:delete|remove|clear|erase|cancel)\b", re.I)


@dataclass(frozen=True)
class Intent:
    """What a free-text goal asks, as far as its words say."""

    apps: tuple[str, ...]
    terms: tuple[str, ...]
    times: tuple[tuple[int, int], ...]
    removes: bool
    #: It only asks to reach an app ("Open Settings"): judged by the app in front.
    reaches: bool = False
    #: It asks a question: its answer, not the phone, would say whether it was met.
    asks: bool = False


def read_intent(goal: str) -> Intent:
    """The apps ``goal`` names, the text it quotes (or says after "saying" / a colon), its
    clock times and whether it deletes something.

    >>> read_intent("Add a note saying buy milk")
    Intent(apps=('Notes',), terms=('buy milk',), times=(), removes=False, reaches=False, asks=False)
    >>> read_intent("Set an alarm for 6:45").times
    ((6, 45), (18, 45))
    """
    terms = [q.strip() for q in _QUOTED.findall(goal) if q.strip()]
    said = None if terms else _SAYING.search(goal)
    if said and said[1].strip(" .!?\"'"):
        terms.append(said[1].strip(" .!?\"'"))
    # The apps are named by the goal's own words, not by the text it asks to write.
    lowered = _QUOTED.sub(" ", goal[: said.start()] if said else goal).casefold()
    apps = tuple(
        app
        for app, words in APP_WORDS.items()
        if any(re.search(rf"\b{re.escape(w)}\b", lowered) for w in words)
    )
    times: list[tuple[int, int]] = []
    for m in _TIME.finditer(goal):
        if m[3]:
            hour, minute = int(m[1]), int(m[2] or 0)
            if 1 <= hour <= 12 and minute < 60:
                times.append((hour % 12 + (12 if m[3].lower() == "p" else 0), minute))
        elif int(m[4]) < 24 and int(m[5]) < 60:
            hour, minute = int(m[4]), int(m[5])
            both = 1 <= hour <= 12  # no AM/PM: either reading
            times.extend([(hour % 12, minute), (hour % 12 + 12, minute)] if both else [(hour, minute)])
    reaches = bool(_REACH.match(goal)) and not terms and not times
    asks = bool(_QUESTION.search(goal))
    return Intent(apps, tuple(terms), tuple(times), bool(_REMOVES.match(goal)), reaches, asks)


def snapshot(phone: SimPhone) -> Snapshot:
    """Every app's stored data as records (one per stored object, nested lists apart), by app."""
    return {app.label: frozenset(_records(app.state, "")) for app in phone.apps.values()}


def _records(obj: Any, parent: str) -> Iterator[str]:
    if not dataclasses.is_dataclass(obj):
        return
    scalars: dict[str, Any] = {}
    nested: list[Any] = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
            nested.extend(value)
        else:
            scalars[f.name] = value
    if {"hour", "minute"} <= scalars.keys():  # a time reads as people write it
        scalars["time"] = format_time(scalars["hour"], scalars["minute"])
    name = next((str(scalars[k]) for k in ("address", "name", "title", "first", "id") if k in scalars), "")
    yield f"{parent}{json.dumps(scalars, default=str, ensure_ascii=False, sort_keys=True)}"
    for item in nested:
        yield from _records(item, f"{parent}{name} › ")


def front_app(phone: SimPhone) -> str | None:
    """The label of the app in front (None: the home screen)."""
    return phone.packages().get(phone.current_focus()[0])


def judge(goal: str, before: Snapshot, after: Snapshot, front: str | None = None) -> Verification:
    """The verdict on a run of ``goal`` from the app data at its start and end and the app in
    front at its end (see the module doc)."""
    intent = read_intent(goal)
    if intent.asks:
        return Verification(
            by=BY, detail="no SimPhone template asks this question, so its answer cannot be checked"
        )
    if intent.reaches and intent.apps:
        reached = front in intent.apps
        wanted = "" if reached else f"; the goal is about {_names(list(intent.apps))}"
        where = front or "the home screen"
        return Verification(checked=True, success=reached, by=BY, detail=f"{where} is in front{wanted}")
    added = {app: after[app] - before.get(app, frozenset()) for app in after}
    removed = {app: before[app] - after.get(app, frozenset()) for app in before}
    changed = sorted(app for app in after if added[app] or removed.get(app))
    if not changed:
        return Verification(checked=True, success=False, by=BY, detail="nothing on the phone changed")
    if not intent.apps:
        return Verification(
            checked=False,
            by=BY,
            detail=f"{_names(changed)} changed, but the goal names no app this check knows, so it "
            "cannot tell whether that is what was asked",
        )
    related = [app for app in changed if app in intent.apps]
    if not related:
        return Verification(
            checked=True,
            success=False,
            by=BY,
            detail=f"only {_names(changed)} changed; the goal is about {_names(list(intent.apps))}",
        )
    side = removed if intent.removes else added
    records = [r for app in related for r in side.get(app, frozenset())]
    missing = _missing(intent, records)
    what = "removed from" if intent.removes else "changed in"
    if missing:
        return Verification(
            checked=True,
            success=False,
            by=BY,
            detail=f"{_names(related)} changed, but nothing {what} it has {' or '.join(missing)}",
        )
    found = f" with {', '.join(repr(t) for t in intent.terms)}" if intent.terms else ""
    return Verification(
        checked=True,
        success=True,
        by=BY,
        detail=f"{_names(related)} changed as the goal asks: a record {what} it{found}",
    )


def _missing(intent: Intent, records: list[str]) -> list[str]:
    """The goal's terms and times no single changed record carries."""
    texts = [normalise_answer(r) for r in records]
    missing = [repr(t) for t in intent.terms if not any(normalise_answer(t) in text for text in texts)]
    if intent.times:
        shown = {normalise_answer(format_time(h, m)) for h, m in intent.times}
        if not any(s in text for s in shown for text in texts):
            missing.append(" or ".join(sorted({format_time(h, m) for h, m in intent.times})))
    if not records:
        missing.append("any record")
    return missing


def _names(apps: list[str]) -> str:
    return " and ".join(apps)
