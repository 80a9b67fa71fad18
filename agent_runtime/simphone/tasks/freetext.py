"""Free text → a template's parameters, so a goal in a person's own words is checked.

A person types "Set an alarm for 6:45", not ``ClockAddAlarm``'s "Set an alarm for 6:45 AM.".
:func:`parse_goal` reads the common phrasings of the goals a template can express — times
(``6:45``, ``6:45 PM``, ``18:45``), names, numbers, on/off, message and note text — into that
template's parameters, and builds the instance *on the run's own phone seed*: the check then
judges the phone the run used, never another seed's phone. A time without AM/PM is read both
ways (6:45 and 18:45): the instance list holds one task per reading, and any reading counts.

A goal written exactly as some instance's goal (any seed) is read as that instance's parameters.
Anything else is not a template's goal; :func:`closest_templates` names the nearest ones so the
person can rephrase, and the run is judged by what changed on the phone instead
(:mod:`agent_runtime.simphone.tasks.statecheck`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_runtime.simphone.tasks.base import Task
from agent_runtime.simphone.tasks.registry import make_task, match_goal, normalise_goal, registry
from agent_runtime.simphone.tasks.settings import TOGGLES
from agent_runtime.simphone.ui.dialogs import format_time

#: How people name the Settings switches (lower case) → the switch's label.
SETTING_NAMES: dict[str, str] = {
    "wifi": "Wi-Fi",
    "wi-fi": "Wi-Fi",
    "wi fi": "Wi-Fi",
    "bluetooth": "Bluetooth",
    "airplane mode": "Airplane mode",
    "aeroplane mode": "Airplane mode",
    "flight mode": "Airplane mode",
    "dark theme": "Dark theme",
    "dark mode": "Dark theme",
    "do not disturb": "Do Not Disturb",
    "dnd": "Do Not Disturb",
    "battery saver": "Battery Saver",
}
assert set(SETTING_NAMES.values()) <= set(TOGGLES)

_TIME = re.compile(
    r"^(?P<h>\d{1,2})(?:[:.](?P<m>\d{2}))?\s*(?:(?P<ap>[ap])\.?\s*m\.?)?(?:\s*o'?clock)?$", re.I
)
_NUMBER = re.compile(r"^\+?\d[\d\s().-]{5,}\d$")
_QUOTES = "\"'“”‘’"
#: Reads a rule's match (named groups) into (template, parameters) per reading; [] when it cannot.
Builder = Callable[[dict[str, str]], list[tuple[str, dict[str, Any]]]]


@dataclass(frozen=True)
class ParsedGoal:
    """A goal read as a template: one instance per reading of it (see the module doc)."""

    template: str
    tasks: tuple[Task, ...]
    #: Whether the words give all the template's setup needs (a contact's number is not in
    #: "Text Nina: …"): then the phone is set up for each reading, as for an instance, so a goal
    #: the phone already met is made meaningful instead of credited to a run that did nothing.
    set_up: bool = True

    @property
    def params(self) -> dict[str, Any]:
        """The first reading's parameters (what a notice shows)."""
        return self.tasks[0].params


def time_readings(text: str) -> list[tuple[int, int]]:
    """The (hour 0–23, minute) a person may mean by ``text``; empty when it is not a time.

    >>> time_readings("6:45"), time_readings("6:45 PM"), time_readings("18:45"), time_readings("7 am")
    ([(6, 45), (18, 45)], [(18, 45)], [(18, 45)], [(7, 0)])
    >>> time_readings("6"), time_readings("25:00")
    ([], [])
    """
    m = _TIME.match(text.strip())
    if m is None or (m["m"] is None and m["ap"] is None and "clock" not in text.lower()):
        return []
    hour, minute = int(m["h"]), int(m["m"] or 0)
    if minute > 59 or hour > 23:
        return []
    if m["ap"]:
        return [] if not 1 <= hour <= 12 else [(hour % 12 + (12 if m["ap"].lower() == "p" else 0), minute)]
    if hour == 0 or hour > 12:
        return [(hour, minute)]
    return [(hour % 12, minute), (hour % 12 + 12, minute)]


def _unquote(text: str) -> str:
    return text.strip().strip(_QUOTES).strip().rstrip(".!").strip(_QUOTES).strip()


def _times(text: str) -> list[dict[str, Any]]:
    return [{"hour": h, "minute": m, "time": format_time(h, m)} for h, m in time_readings(text)]


def _alarm(g: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    label = _unquote(g["label"]) if g.get("label") else None
    if label:
        return [("ClockAddLabeledAlarm", {**t, "label": label}) for t in _times(g["time"])]
    return [("ClockAddAlarm", t) for t in _times(g["time"])]


def _alarm_change(name: str) -> Builder:
    def build(g: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
        extra = {"state": _state(g)} if name == "ClockToggleAlarm" else {}
        return [(name, {**t, **extra}) for t in _times(g["time"])]

    return build


def _state(g: dict[str, str]) -> str:
    word = g.get("state") or g.get("verb") or ""
    return "on" if word.lower() in ("on", "enable") else "off"


def _toggle(g: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    setting = SETTING_NAMES.get(" ".join(g["setting"].lower().split()))
    return [("SettingsToggle", {"setting": setting, "state": _state(g)})] if setting else []


def _timer(g: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    minutes = int(g["n"]) * (60 if g.get("unit", "").lower().startswith("h") else 1)
    return [("ClockStartTimer", {"minutes": minutes})] if minutes > 0 else []


def _brightness(g: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    level = int(g["n"])
    return [("SettingsBrightness", {"level": level})] if 0 <= level <= 100 else []


def _message(g: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    to, text = _unquote(g["to"]), _unquote(g["text"])
    if not to or not text:
        return []
    if _NUMBER.match(to):
        return [("MessagesSendToNumber", {"number": to, "text": text})]
    return [("MessagesSendToContact", {"name": to, "text": text})]


def _note(g: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    title, body = _unquote(g["title"]), _unquote(g["body"])
    return [("NotesCreate", {"title": title, "body": body})] if title and body else []


_ALARM_AT = r"(?:set|create|add|make|schedule)\s+(?:an?\s+|my\s+|the\s+)?alarm\s+(?:for|at)\s+"
_LABEL = r"\s+(?:with\s+the\s+label|labell?ed|called|named)\s+"
_DELETE, _TOGGLE_ALARM = _alarm_change("ClockDeleteAlarm"), _alarm_change("ClockToggleAlarm")
_SETTING = r"(?:the\s+)?(?P<setting>.+?)"
_IN_SETTINGS = r"(?:\s+in\s+settings)?"
_SEND = r"send\s+(?:an?\s+)?(?:text|sms|message)(?:\s+message)?\s+to\s+"
_NOTE = r"(?:create|add|make|write)\s+(?:a\s+)?(?:new\s+)?note\s+(?:titled|called|named)\s+"
#: (pattern, builder): a pattern matches the whole normalised goal, case-insensitively.
RULES: tuple[tuple[re.Pattern[str], Builder], ...] = tuple(
    (re.compile(p, re.I), build)
    for p, build in (
        (_ALARM_AT + r"(?P<time>.+?)" + _LABEL + r"(?P<label>.+)", _alarm),
        (_ALARM_AT + r"(?P<time>.+)", _alarm),
        (r"wake\s+me\s+(?:up\s+)?at\s+(?P<time>.+)", _alarm),
        (r"(?:delete|remove)\s+(?:the|my)\s+alarm\s+(?:set\s+)?(?:for|at)\s+(?P<time>.+)", _DELETE),
        (r"(?:delete|remove)\s+(?:the|my)\s+(?P<time>.+?)\s+alarm", _DELETE),
        (r"(?:turn|switch)\s+(?P<state>on|off)\s+(?:the|my)\s+(?P<time>.+?)\s+alarm", _TOGGLE_ALARM),
        (r"(?P<verb>enable|disable)\s+(?:the|my)\s+(?P<time>.+?)\s+alarm", _TOGGLE_ALARM),
        (r"(?:start|set)\s+an?\s+(?P<n>\d+)[- ](?P<unit>min(?:ute)?s?|hours?)\s+timer", _timer),
        (r"(?:start|set)\s+an?\s+timer\s+(?:for\s+)?(?P<n>\d+)\s+(?P<unit>min(?:ute)?s?|hours?)", _timer),
        (r"(?:turn|switch)\s+(?P<state>on|off)\s+" + _SETTING + _IN_SETTINGS, _toggle),
        (r"(?:turn|switch)\s+" + _SETTING + r"\s+(?P<state>on|off)" + _IN_SETTINGS, _toggle),
        (r"(?P<verb>enable|disable)\s+" + _SETTING + _IN_SETTINGS, _toggle),
        (
            r"(?:set|change|turn)\s+(?:the\s+)?(?:screen\s+)?brightness\s+(?:up\s+|down\s+)?to\s+"
            r"(?P<n>\d{1,3})\s*(?:%|percent)",
            _brightness,
        ),
        (_SEND + r"(?P<to>.+?)\s+(?:saying|that\s+says)\s*:?\s*(?P<text>.+)", _message),
        (r"(?:text|message|sms)\s+(?P<to>[^:]+?)\s*:\s*(?P<text>.+)", _message),
        (r"(?:text|message|tell)\s+(?P<to>.+?)\s+(?:saying|that)\s+(?P<text>.+)", _message),
        (_NOTE + r"(?P<title>.+?)\s+(?:that\s+says|saying|with\s+the\s+text)\s*:?\s*(?P<body>.+)", _note),
    )
)


#: Templates whose setup needs more than a goal's words give (see :attr:`ParsedGoal.set_up`).
_NO_SETUP = frozenset({"MessagesSendToContact"})


def parse_goal(text: str, seed: int) -> ParsedGoal | None:
    """``text`` read as a template's goal, its instances built for phone ``seed``; or None.

    >>> parsed = parse_goal("Set an alarm for 6:45", 0)
    >>> parsed.template, [t.goal for t in parsed.tasks]
    ('ClockAddAlarm', ['Set an alarm for 6:45 AM.', 'Set an alarm for 6:45 PM.'])
    >>> airplane = parse_goal("Turn on airplane mode", 3).tasks[0]
    >>> airplane.params, airplane.seed
    ({'setting': 'Airplane mode', 'state': 'on'}, 3)
    >>> parse_goal("Add a note saying buy milk", 0) is None
    True
    """
    goal = " ".join(text.split()).rstrip(".!?;: ")
    goal = re.sub(r"^(?:please\s+)|(?:,?\s+please)$", "", goal, flags=re.I)
    for pattern, build in RULES:
        m = pattern.fullmatch(goal)
        if m is None:
            continue
        readings = build({k: v for k, v in m.groupdict().items() if v is not None})
        if readings:
            name = readings[0][0]
            cls = registry()[name]
            tasks = tuple(cls(params, seed=seed) for _, params in readings)
            return ParsedGoal(name, tasks, set_up=name not in _NO_SETUP)
    exact = match_goal(text)  # an instance's goal word for word, at whatever seed drew it
    if exact is not None:
        return ParsedGoal(exact.name, (type(exact)(exact.params, seed=seed),))
    return None


def closest_templates(text: str, n: int = 3) -> list[Task]:
    """Example instances (seed 0) of the ``n`` templates whose goals read most like ``text``."""
    wanted = normalise_goal(text)
    examples = [make_task(name, 0) for name in registry()]
    ranked = sorted(
        examples, key=lambda t: -difflib.SequenceMatcher(None, wanted, normalise_goal(t.goal)).ratio()
    )
    return ranked[:n]
