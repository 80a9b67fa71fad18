"""Answer kinds beyond :func:`~agent_runtime.simphone.tasks.base.answers_match`'s: ``date`` and ``list``.

Question tasks of the Phone, Email, Maps and Weather apps (and the cross-app ones) ask for a
calendar date ("On what date did Ana last call me?") or a set of names ("Which places have I
saved?"). :class:`TypedQuestion` judges those exactly and hands every other kind to
:func:`answers_match`, so a template sets ``match`` the same way whatever the kind.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from typing import TYPE_CHECKING, ClassVar

from agent_runtime.simphone.tasks.base import QuestionTask, answers_match, normalise_answer

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

_MONTHS = {name.casefold(): i for i, name in enumerate(calendar.month_name) if name} | {
    name.casefold(): i for i, name in enumerate(calendar.month_abbr) if name
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_MONTH_DAY = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?", re.IGNORECASE)
_DAY_MONTH = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s+(\d{{4}}))?", re.IGNORECASE
)
_SPLIT = re.compile(r"\s*(?:,|;|\n|\band\b|&)\s*", re.IGNORECASE)

DateMention = tuple[int | None, int, int]


def parse_dates(text: str) -> list[DateMention]:
    """Dates named in ``text`` as ``(year or None, month, day)``: ISO, "March 5[, 2025]", "5 Mar".

    >>> parse_dates("Wed, Mar 5 — not 2025-03-06 or 7th of March 2025")
    [(2025, 3, 6), (None, 3, 5), (2025, 3, 7)]
    """
    out: list[DateMention] = []
    for m in _ISO.finditer(text):
        out.append((int(m[1]), int(m[2]), int(m[3])))
    for m in _MONTH_DAY.finditer(text):
        out.append((int(m[3]) if m[3] else None, _MONTHS[m[1].casefold()], int(m[2])))
    for m in _DAY_MONTH.finditer(text):
        out.append((int(m[3]) if m[3] else None, _MONTHS[m[2].casefold()], int(m[1])))
    return [d for d in out if 1 <= d[1] <= 12 and 1 <= d[2] <= 31]


def dates_match(expected: str, given: str) -> bool:
    """``given`` names exactly one day, the expected one (a year, when given, must agree).

    >>> dates_match("2025-03-05", "It was on March 5th")
    True
    >>> dates_match("2025-03-05", "5 March 2024")
    False
    >>> dates_match("2025-03-05", "March 5 or March 6")
    False
    """
    want = parse_dates(expected)
    got = {(m, d) for _, m, d in parse_dates(given)}
    if len(want) != 1 or len(got) != 1 or got != {want[0][1:]}:
        return False
    years = {y for y, _, _ in parse_dates(given) if y is not None}
    return not years or years == {want[0][0]}


def list_items(text: str) -> set[str]:
    """The normalised items of an enumeration: split on commas, semicolons, lines and "and".

    >>> sorted(list_items("Paris, Oslo and  LIMA."))
    ['lima', 'oslo', 'paris']
    """
    return {normalise_answer(part) for part in _SPLIT.split(text) if normalise_answer(part)}


def lists_match(expected: str, given: str) -> bool:
    """The same items in any order, none missing and none extra.

    >>> lists_match("Oslo, Paris", "paris and oslo")
    True
    >>> lists_match("Oslo, Paris", "Paris")
    False
    """
    return list_items(expected) == list_items(given)


def typed_match(expected: str, given: str, *, kind: str) -> bool:
    """``date`` and ``list`` here; every other kind through :func:`answers_match`."""
    if kind == "date":
        return dates_match(expected, given)
    if kind == "list":
        return lists_match(expected, given)
    return answers_match(expected, given, kind=kind)


def iso(day: dt.date) -> str:
    """The canonical form a ``date`` question's expected answer is written in."""
    return day.isoformat()


class TypedQuestion(QuestionTask):
    """A question judged with :func:`typed_match` (``match`` may also be ``date`` or ``list``)."""

    match: ClassVar[str] = "text"

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        if answer is None:
            return 0.0
        return 1.0 if typed_match(self.expected_answer(), answer, kind=self.match) else 0.0
